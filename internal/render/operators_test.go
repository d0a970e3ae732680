package render

import (
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
)

// sender is one principal sending to the managers' queue, as the queue
// policy sees it: the condition keys of its request and whether its own
// identity policies allow sqs:SendMessage (a service principal has
// none: only the queue policy can allow it).
type sender struct {
	name     string
	ctx      map[string]string
	identity bool
}

// queueAllows evaluates the queue policy as IAM would for one
// SendMessage: an explicit deny wins; else an allow of the queue policy
// or of the sender's identity policies (same account) allows.
func queueAllows(t *testing.T, statements []any, s sender, queue string) bool {
	t.Helper()
	if resourcePolicy(statements).denies(t, request{"sqs:SendMessage", queue, s.ctx}) {
		return false
	}
	if s.identity {
		return true
	}
	for _, x := range statements {
		st := obj(x)
		if st["Effect"] != "Allow" || !anyMatch(strs(t, st["Action"]), "sqs:SendMessage") || !anyMatch(strs(t, st["Resource"]), queue) {
			continue
		}
		if svc, _ := dig(st, "Principal", "Service").(string); svc != "" && s.ctx["aws:PrincipalServiceName"] != svc {
			continue
		}
		cond := obj(st["Condition"])
		ctx := map[string]string{}
		for k, v := range s.ctx {
			if evaluatedKeys[k] {
				ctx[k] = v
			}
		}
		if cond == nil || conditionHolds(t, cond, ctx) {
			return true
		}
	}
	return false
}

// The queue takes messages from the cluster's EventBridge rules and the
// operators only: a session of an operator's role is that role for
// aws:PrincipalArn; another principal with AmazonSQSFullAccess and the
// node roles are refused.
func TestQueuePolicySenders(t *testing.T) {
	r, err := variants()[0].render()
	if err != nil {
		t.Fatal(err)
	}
	res := obj(decode(t, r.Template)["Resources"])
	statements := list(dig(res, "LifecycleQueuePolicy", "Properties", "PolicyDocument", "Statement"))
	principal := func(arn string) map[string]string {
		return map[string]string{"aws:PrincipalArn": arn, "aws:SecureTransport": "true"}
	}
	rule := func(arn string) map[string]string {
		return map[string]string{"aws:SourceArn": arn, "aws:SecureTransport": "true", "aws:PrincipalServiceName": "events.amazonaws.com"}
	}
	for _, tc := range []struct {
		s     sender
		allow bool
	}{
		{sender{"a session of an operator's role", principal(operatorRole), true}, true},
		{sender{"another principal with AmazonSQSFullAccess", principal(otherRole), true}, false},
		{sender{"the account's root user, not an operator", principal("arn:aws:iam::" + testAccount + ":root"), true}, false},
		{sender{"the lifecycle rule", rule(lifecycleRule), false}, true},
		{sender{"the interruption rule", rule(interruptionRule), false}, true},
		{sender{"another cluster's rule", rule("arn:aws:events:eu-west-1:" + testAccount + ":rule/other-LifecycleRule-1"), false}, false},
		{sender{"the managers' role", principal(managersRole), true}, false},
		{sender{"the agents' role", principal(agentsRole), true}, false},
	} {
		for _, queue := range []string{testQueue, testDeadLetterQueue} {
			if got := queueAllows(t, statements, tc.s, queue); got != tc.allow {
				t.Errorf("%s sending to %s: allowed %v, want %v", tc.s.name, queue[strings.LastIndex(queue, ":")+1:], got, tc.allow)
			}
		}
	}
}

// commands/ holds a command's standard input (a secret's value for
// `secret create -`) and its output: only the operators and the managers
// read or write it, whatever S3 rights others hold (ReadOnlyAccess), and
// never the agents.
func TestBucketPolicyCommands(t *testing.T) {
	r, err := variants()[0].render()
	if err != nil {
		t.Fatal(err)
	}
	var statements []any
	for _, p := range resourcesOfType(obj(decode(t, r.Template)["Resources"]), "AWS::S3::BucketPolicy") {
		statements = append(statements, list(dig(p, "Properties", "PolicyDocument", "Statement"))...)
	}
	keys := []string{names.CommandInputKey("r1"), names.CommandOutputPrefix("r1") + "/cmd/i-1/awsrunShellScript/0.awsrunShellScript/stdout"}
	for _, tc := range []struct {
		who, principal string
		denied         bool
	}{
		{"an operator", operatorRole, false},
		{"the managers", managersRole, false},
		{"a ReadOnlyAccess principal", otherRole, true},
		{"the agents", agentsRole, true},
	} {
		for _, key := range keys {
			for _, action := range []string{"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObjectVersion"} {
				if got := policyDenies(t, statements, tc.principal, action, key); got != tc.denied {
					t.Errorf("%s %s %s: denied %v, want %v", tc.who, action, key, got, tc.denied)
				}
			}
		}
	}
}
