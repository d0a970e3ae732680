package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
)

// testRegion is the region of the roles' evaluation.
const testRegion = "eu-west-1"

// roleMay evaluates a node role's identity policies (its inline policies
// and the AWS::IAM::Policy resources attached to it) as IAM does for one
// request: allowed when a statement allows it and none denies it.
func roleMay(t *testing.T, res map[string]any, cluster, role, action, resource string, ctx map[string]string) bool {
	t.Helper()
	p := policy{statements: append(roleStatements(res, role), policyStatements(res, role)...),
		resources: func(t *testing.T, v any) []string { return roleResources(t, cluster, v) }}
	return p.allows(t, request{action, resource, ctx})
}

// roleResources resolves the Resource of a role's statement: strings,
// Fn::Sub of the pseudo parameters and the log group's name, and the log
// group's Arn (which CloudFormation gives with a trailing ":*", every
// stream of the group).
func roleResources(t *testing.T, cluster string, v any) []string {
	t.Helper()
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, roleResources(t, cluster, e)...)
		}
		return out
	case map[string]any:
		if g := list(v["Fn::GetAtt"]); len(g) == 2 && g[0] == names.ResourceLogGroup && g[1] == "Arn" {
			return []string{fmt.Sprintf("arn:aws:logs:%s:%s:log-group:%s:*", testRegion, testAccount, names.LogGroup(cluster))}
		}
		if s, ok := v["Fn::Sub"].(string); ok {
			s = strings.NewReplacer("${AWS::Partition}", "aws", "${AWS::Region}", testRegion, "${AWS::AccountId}", testAccount,
				"${"+names.ResourceLogGroup+"}", names.LogGroup(cluster)).Replace(s)
			if !strings.Contains(s, "${") {
				return []string{s}
			}
		}
	}
	t.Fatalf("resource %v not evaluated", v)
	return nil
}

// streamARN is the ARN of a log stream of a log group, as IAM evaluates
// CreateLogStream and PutLogEvents.
func streamARN(group, stream string) string {
	return fmt.Sprintf("arn:aws:logs:%s:%s:log-group:%s:log-stream:%s", testRegion, testAccount, group, stream)
}

// TestRolesWriteTheirOwnFigures evaluates the node roles' policies for
// PutMetricData, whose only condition key is the namespace: the figures
// every alarm but disk-full reads are written by the managers only; each
// node's own figures (disk, memory) by both roles; another cluster's
// namespaces, and the one every cluster shared before, by neither.
func TestRolesWriteTheirOwnFigures(t *testing.T) {
	for _, v := range variants() {
		if v.core == nil {
			continue
		}
		r, err := v.render()
		if err != nil {
			t.Fatal(err)
		}
		res := obj(decode(t, r.Template)["Resources"])
		may := func(role, namespace string) bool {
			return roleMay(t, res, v.cluster, role, "cloudwatch:PutMetricData", "*", map[string]string{"cloudwatch:namespace": namespace})
		}
		type tc struct {
			namespace        string
			managers, agents bool
		}
		cases := []tc{
			{names.SwarmMetricNamespace(v.cluster), true, false},
			{names.NodeMetricNamespace(v.cluster), true, true},
			{names.LegacyMetricNamespace, false, false},
		}
		for _, other := range []string{v.cluster + "-b", "other"} {
			cases = append(cases, tc{names.SwarmMetricNamespace(other), false, false}, tc{names.NodeMetricNamespace(other), false, false})
		}
		// Every alarm's metric: the agents may write only the nodes'
		// own disk figure, which the disk alarm takes the maximum of.
		alarms := 0
		for _, a := range resourcesOfType(res, "AWS::CloudWatch::Alarm") {
			alarms++
			p := obj(a["Properties"])
			ns, _ := p["Namespace"].(string)
			own := p["MetricName"] == names.MetricDiskUsed && p["Statistic"] == "Maximum"
			cases = append(cases, tc{ns, true, own})
			if !own && ns != names.SwarmMetricNamespace(v.cluster) {
				t.Errorf("%s: alarm %v reads namespace %q", v.name, p["AlarmName"], ns)
			}
		}
		if want := len(names.AlarmKinds()); alarms != want && v.name != "core-alarms-off" {
			t.Errorf("%s: %d alarms evaluated, want %d", v.name, alarms, want)
		}
		for _, c := range cases {
			if got := may("ControlRole", c.namespace); got != c.managers {
				t.Errorf("%s: managers PutMetricData in %q: allowed %v, want %v", v.name, c.namespace, got, c.managers)
			}
			if got := may("AgentRole", c.namespace); got != c.agents {
				t.Errorf("%s: agents PutMetricData in %q: allowed %v, want %v", v.name, c.namespace, got, c.agents)
			}
		}
	}
}

// TestRolesWriteTheirOwnStreams evaluates the node roles' policies for
// the log group: each role creates and writes the streams of its own
// prefix only, of its own cluster's group; the streams the nodes name
// (the node agent's, the engine's for a task or a container) are in them.
func TestRolesWriteTheirOwnStreams(t *testing.T) {
	for _, v := range variants() {
		if v.core == nil {
			continue
		}
		r, err := v.render()
		if err != nil {
			t.Fatal(err)
		}
		res := obj(decode(t, r.Template)["Resources"])
		group := names.LogGroup(v.cluster)
		streams := func(manager bool) []string {
			p := names.LogStreamPrefix(manager)
			return []string{p + names.LogStreamNode + "i-0123456789abcdef0", p + names.LogStreamService + "web/web.1.abc@i-0123456789abcdef0",
				p + names.LogStreamContainer + "builder@i-0123456789abcdef0"}
		}
		type tc struct {
			group, stream    string
			managers, agents bool
		}
		var cases []tc
		for _, s := range streams(true) {
			cases = append(cases, tc{group, s, true, false}, tc{names.LogGroup(v.cluster + "-b"), s, false, false})
		}
		for _, s := range streams(false) {
			cases = append(cases, tc{group, s, false, true}, tc{names.LogGroup("other"), s, false, false})
		}
		// The names of older nodes, which said nothing of their role.
		cases = append(cases, tc{group, names.LogStreamNode + "i-0123456789abcdef0", false, false},
			tc{group, names.LogStreamService + "web/web.1.abc@i-0123456789abcdef0", false, false})
		for _, c := range cases {
			for _, action := range []string{"logs:CreateLogStream", "logs:PutLogEvents"} {
				arn := streamARN(c.group, c.stream)
				if got := roleMay(t, res, v.cluster, "ControlRole", action, arn, nil); got != c.managers {
					t.Errorf("%s: managers %s %s: allowed %v, want %v", v.name, action, arn, got, c.managers)
				}
				if got := roleMay(t, res, v.cluster, "AgentRole", action, arn, nil); got != c.agents {
					t.Errorf("%s: agents %s %s: allowed %v, want %v", v.name, action, arn, got, c.agents)
				}
			}
		}
	}
}

// The evaluator itself: an explicit deny wins, no statement denies, a
// condition and a resource pattern are read.
func TestRolePolicyEvaluator(t *testing.T) {
	res := map[string]any{
		"R": map[string]any{"Properties": map[string]any{"Policies": []any{map[string]any{"PolicyDocument": map[string]any{"Statement": []any{
			map[string]any{"Effect": "Allow", "Action": "cloudwatch:PutMetricData", "Resource": "*",
				"Condition": map[string]any{"StringEquals": map[string]any{"cloudwatch:namespace": []any{"a", "b"}}}},
			map[string]any{"Effect": "Allow", "Action": []any{"logs:PutLogEvents"},
				"Resource": map[string]any{"Fn::Sub": "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:${LogGroup}:log-stream:x/*"}},
			map[string]any{"Effect": "Deny", "Action": "cloudwatch:PutMetricData", "Resource": "*",
				"Condition": map[string]any{"StringEquals": map[string]any{"cloudwatch:namespace": "b"}}},
		}}}}}},
	}
	ns := func(n string) map[string]string { return map[string]string{"cloudwatch:namespace": n} }
	for _, c := range []struct {
		action, resource string
		ctx              map[string]string
		want             bool
	}{
		{"cloudwatch:PutMetricData", "*", ns("a"), true},
		{"cloudwatch:PutMetricData", "*", ns("b"), false},
		{"cloudwatch:PutMetricData", "*", ns("c"), false},
		{"logs:PutLogEvents", streamARN(names.LogGroup("c"), "x/y"), nil, true},
		{"logs:PutLogEvents", streamARN(names.LogGroup("c"), "y/x"), nil, false},
		{"logs:PutLogEvents", streamARN(names.LogGroup("c2"), "x/y"), nil, false},
		{"logs:CreateLogStream", streamARN(names.LogGroup("c"), "x/y"), nil, false},
	} {
		if got := roleMay(t, res, "c", "R", c.action, c.resource, c.ctx); got != c.want {
			t.Errorf("%s %s %v: allowed %v, want %v", c.action, c.resource, c.ctx, got, c.want)
		}
	}
}
