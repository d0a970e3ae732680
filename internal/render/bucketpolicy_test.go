package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
)

// Principals of the bucket policy's evaluation: the roles' ARNs as
// aws:PrincipalArn gives them for the instances' sessions, and another
// principal of the account with broad S3 rights.
const (
	testAccount  = "123456789012"
	testBucket   = "prod-bucket-1a2b3c4d5e6f"
	managersRole = "arn:aws:iam::" + testAccount + ":role/prod-ControlRole-1A2B3C"
	agentsRole   = "arn:aws:iam::" + testAccount + ":role/prod-AgentRole-4D5E6F"
	operatorRole = "arn:aws:iam::" + testAccount + ":role/Admin"
	operatorUser = "arn:aws:iam::" + testAccount + ":user/ops/alice"
	// Another principal of the account, with broad S3 and SQS rights
	// (AmazonSQSFullAccess, ReadOnlyAccess) but not an operator.
	otherRole = "arn:aws:iam::" + testAccount + ":role/ReadOnlyAuditor"

	testQueue           = "arn:aws:sqs:eu-west-1:" + testAccount + ":prod-LifecycleQueue-AbC"
	testDeadLetterQueue = "arn:aws:sqs:eu-west-1:" + testAccount + ":prod-LifecycleDeadLetterQueue-DeF"
	lifecycleRule       = "arn:aws:events:eu-west-1:" + testAccount + ":rule/prod-LifecycleRule-1"
	interruptionRule    = "arn:aws:events:eu-west-1:" + testAccount + ":rule/prod-InterruptionRule-2"
)

// testOperators are the operators the evaluated variant (variants()[0])
// renders with.
var testOperators = []string{operatorRole}

// policyDenies evaluates the explicit denies of the rendered bucket
// policy for one request (TLS, the given principal, action and key): the
// statements this template writes, with the operators it uses.
func policyDenies(t *testing.T, statements []any, principal, action, key string) bool {
	t.Helper()
	ctx := map[string]string{"aws:PrincipalArn": principal, "aws:SecureTransport": "true"}
	return resourcePolicy(statements).denies(t, request{action, "arn:aws:s3:::" + testBucket + "/" + key, ctx})
}

// strs resolves a policy value (a string, a list, Fn::GetAtt of a role's
// or the bucket's Arn, Fn::Sub of ${Bucket.Arn}) to strings.
func strs(t *testing.T, v any) []string {
	t.Helper()
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, strs(t, e)...)
		}
		return out
	case map[string]any:
		if g := list(v["Fn::GetAtt"]); len(g) == 2 && g[1] == "Arn" {
			switch g[0] {
			case "ControlRole":
				return []string{managersRole}
			case "AgentRole":
				return []string{agentsRole}
			case names.ResourceBucket:
				return []string{"arn:aws:s3:::" + testBucket}
			case names.ResourceLifecycleQueue:
				return []string{testQueue}
			case "LifecycleDeadLetterQueue":
				return []string{testDeadLetterQueue}
			case "LifecycleRule":
				return []string{lifecycleRule}
			case "InterruptionRule":
				return []string{interruptionRule}
			}
		}
		// The operators' parameter, as the evaluated variant renders it.
		if v["Ref"] == names.ParamOperators {
			return testOperators
		}
		if j := list(v["Fn::Join"]); len(j) == 2 {
			return []string{strings.Join(strs(t, j[1]), j[0].(string))}
		}
		if sp := list(v["Fn::Split"]); len(sp) == 2 {
			var out []string
			for _, e := range strs(t, sp[1]) {
				out = append(out, strings.Split(e, sp[0].(string))...)
			}
			return out
		}
		if s, ok := v["Fn::Sub"].(string); ok && strings.HasPrefix(s, "${"+names.ResourceBucket+".Arn}") && strings.Count(s, "${") == 1 {
			return []string{"arn:aws:s3:::" + testBucket + strings.TrimPrefix(s, "${"+names.ResourceBucket+".Arn}")}
		}
	}
	t.Fatalf("policy value %v not evaluated", v)
	return nil
}

// TestBucketPolicyWrites evaluates the bucket policy for who may write and
// delete where: only the managers' role writes the join material, the
// backups and the status, whatever S3 rights other principals of the
// account hold; the nodes' roles do not write what the operator writes
// (node configurations, node agents, leases); the operator still writes
// those and the commands' input.
func TestBucketPolicyWrites(t *testing.T) {
	r, err := variants()[0].render()
	if err != nil {
		t.Fatal(err)
	}
	res := obj(decode(t, r.Template)["Resources"])
	var statements []any
	for _, p := range resourcesOfType(res, "AWS::S3::BucketPolicy") {
		statements = append(statements, list(dig(p, "Properties", "PolicyDocument", "Statement"))...)
	}
	managerKeys := []string{
		names.ManagersKey, names.SwarmPrefix + "/" + names.SwarmToken, names.SwarmPrefix + "/" + names.SwarmCA,
		names.ControlKey(names.Backup), names.ControlKey(names.ManagerToken), names.ControlKey(names.InitMarker),
		names.StatusKey,
	}
	operatorKeys := []string{
		names.NodeConfigKey("web", strings.Repeat("a", 64)), names.AgentKey("amd64", strings.Repeat("b", 64)),
		names.LeasePrefix + "/cluster",
	}
	writes := []string{"s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutObjectAcl"}
	type tc struct {
		principal, action, key string
		denied                 bool
	}
	var cases []tc
	for _, key := range managerKeys {
		for _, a := range writes {
			cases = append(cases, tc{managersRole, a, key, false}, tc{agentsRole, a, key, true}, tc{operatorRole, a, key, true})
		}
	}
	for _, key := range operatorKeys {
		for _, a := range writes {
			cases = append(cases, tc{operatorRole, a, key, false}, tc{agentsRole, a, key, true}, tc{managersRole, a, key, true})
		}
	}
	cases = append(cases,
		// Run Command writes the managers' output; the operator puts the
		// commands' input and deletes both; the agents touch none of it.
		tc{managersRole, "s3:PutObject", names.CommandOutputPrefix("r1") + "/stdout", false},
		tc{operatorRole, "s3:PutObject", names.CommandInputKey("r1"), false},
		tc{operatorRole, "s3:DeleteObjectVersion", names.CommandInputKey("r1"), false},
		tc{agentsRole, "s3:GetObject", names.CommandInputKey("r1"), true},
		// Reads stay as they were.
		tc{agentsRole, "s3:GetObject", names.ManagersKey, false},
		tc{operatorRole, "s3:GetObject", names.ManagersKey, true},
		tc{agentsRole, "s3:GetObject", names.ControlKey(names.Backup), true},
		tc{managersRole, "s3:GetObject", names.ControlKey(names.Backup), false},
		tc{operatorRole, "s3:GetObject", names.StatusKey, false},
		tc{managersRole, "s3:GetObject", names.LeasePrefix + "/cluster", false},
	)
	for _, c := range cases {
		if got := policyDenies(t, statements, c.principal, c.action, c.key); got != c.denied {
			t.Errorf("%s %s %s: denied %v, want %v", c.principal[strings.LastIndex(c.principal, "/")+1:], c.action, c.key, got, c.denied)
		}
	}
	// The prefixes the policy protects are the ones names declares, and
	// they cover the keys above.
	for _, key := range managerKeys {
		if !hasAnyPrefix(key, names.ManagerWrittenPrefixes()) {
			t.Errorf("%s is outside the managers' prefixes", key)
		}
	}
	for _, key := range operatorKeys {
		if !hasAnyPrefix(key, names.OperatorWrittenPrefixes()) {
			t.Errorf("%s is outside the operator's prefixes", key)
		}
	}
	for _, p := range names.ManagerWrittenPrefixes() {
		if !policyDenies(t, statements, operatorRole, "s3:PutObject", p+"x") {
			t.Errorf("another principal may write under %s", p)
		}
	}
	for _, p := range names.OperatorWrittenPrefixes() {
		if !policyDenies(t, statements, managersRole, "s3:PutObject", p+"x") || !policyDenies(t, statements, agentsRole, "s3:DeleteObject", p+"x") {
			t.Errorf("a node may write under %s", p)
		}
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// The evaluator itself: a deny it cannot see through is a failure.
func TestPolicyEvaluator(t *testing.T) {
	st := []any{map[string]any{
		"Effect": "Deny", "Principal": "*", "Action": []any{"s3:Put*"},
		"Resource":  map[string]any{"Fn::Sub": "${Bucket.Arn}/a/*"},
		"Condition": map[string]any{"ArnNotEquals": map[string]any{"aws:PrincipalArn": map[string]any{"Fn::GetAtt": []any{"ControlRole", "Arn"}}}},
	}}
	for _, c := range []struct {
		principal, action, key string
		want                   bool
	}{
		{operatorRole, "s3:PutObject", "a/b/c", true},
		{managersRole, "s3:PutObject", "a/b/c", false},
		{operatorRole, "s3:GetObject", "a/b", false},
		{operatorRole, "s3:PutObject", "ab/c", false},
	} {
		if got := policyDenies(t, st, c.principal, c.action, c.key); got != c.want {
			t.Errorf("%s %s %s: %v", c.principal, c.action, c.key, fmt.Sprint(got))
		}
	}
}
