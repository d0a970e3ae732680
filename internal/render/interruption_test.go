package render

import (
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
)

// roleAllows evaluates the Allow statements of role's inline policies for
// one S3 request on key, by a session whose aws:userid is userid: the
// ${!aws:userid} of a Fn::Sub is the policy variable IAM substitutes.
func roleAllows(t *testing.T, res map[string]any, role, userid, action, key string) bool {
	t.Helper()
	resource := "arn:aws:s3:::" + testBucket + "/" + key
	for _, st := range roleStatements(res, role) {
		if st["Effect"] != "Allow" || !anyMatch(strs(t, st["Action"]), action) {
			continue
		}
		sub, ok := dig(st, "Resource", "Fn::Sub").(string)
		if !ok || !strings.HasPrefix(sub, "${"+names.ResourceBucket+".Arn}") {
			continue
		}
		arn := "arn:aws:s3:::" + testBucket + strings.TrimPrefix(sub, "${"+names.ResourceBucket+".Arn}")
		arn = strings.ReplaceAll(arn, "${!aws:userid}", userid)
		if strings.Contains(arn, "${") {
			t.Fatalf("statement %v: resource %s not evaluated", st["Sid"], sub)
		}
		if st["Condition"] == nil && anyMatch([]string{arn}, resource) {
			return true
		}
	}
	return false
}

// Only an agent instance's own session may write its interruption
// confirmation: the agents' role writes the key of its aws:userid only
// (no other instance's), and the bucket policy denies the prefix to every
// other principal, whatever its identity policies allow. The managers
// read them.
func TestInterruptionConfirmationWrites(t *testing.T) {
	r, err := variants()[0].render()
	if err != nil {
		t.Fatal(err)
	}
	res := obj(decode(t, r.Template)["Resources"])
	var bucketPolicy []any
	for _, p := range resourcesOfType(res, "AWS::S3::BucketPolicy") {
		bucketPolicy = append(bucketPolicy, list(dig(p, "Properties", "PolicyDocument", "Statement"))...)
	}
	own := "AROAAGENTROLEID:i-0123456789abcdef0"
	other := "AROAAGENTROLEID:i-0fedcba9876543210"
	key := func(userid string) string { return names.InterruptionPrefix + "/" + userid }

	if !roleAllows(t, res, "AgentRole", own, "s3:PutObject", key(own)) || policyDenies(t, bucketPolicy, agentsRole, "s3:PutObject", key(own)) {
		t.Error("an agent may not write its own confirmation")
	}
	if roleAllows(t, res, "AgentRole", own, "s3:PutObject", key(other)) {
		t.Error("an agent may write another instance's confirmation")
	}
	for _, p := range []string{managersRole, operatorRole} {
		for _, a := range []string{"s3:PutObject", "s3:PutObjectAcl"} {
			if !policyDenies(t, bucketPolicy, p, a, key(own)) {
				t.Errorf("%s may %s a confirmation", p, a)
			}
		}
	}
	found := false
	for _, st := range policyStatementsOf(res, "ControlRole") {
		found = found || st["Sid"] == "ReadTheAgentsInterruptionConfirmations" && dig(st, "Resource", "Fn::Sub") == "${Bucket.Arn}/"+names.InterruptionPrefix+"/*"
	}
	if !found || policyDenies(t, bucketPolicy, managersRole, "s3:GetObject", key(own)) {
		t.Error("the managers may not read the confirmations")
	}
}

// The managers may ask Auto Scaling whether an instance waits in a hook,
// and terminate an instance of their own group only (a stopped manager,
// fenced), never of another cluster's or an agents' group but as before.
func TestManagersLifecycleChecks(t *testing.T) {
	r, err := variants()[0].render()
	if err != nil {
		t.Fatal(err)
	}
	res := obj(decode(t, r.Template)["Resources"])
	describe, fence := false, false
	for _, st := range policyStatementsOf(res, "ControlRole") {
		for _, a := range strs(t, st["Action"]) {
			if a == "autoscaling:DescribeAutoScalingInstances" && st["Resource"] == "*" {
				describe = true
			}
			if a == "autoscaling:TerminateInstanceInAutoScalingGroup" && st["Sid"] == "FenceStoppedManagers" {
				c := obj(dig(st, "Condition", "StringEquals"))
				fence = c["aws:ResourceTag/"+names.TagRole] == names.RoleCore && c["aws:ResourceTag/"+names.TagCluster] != nil
			}
		}
	}
	if !describe || !fence {
		t.Errorf("describe instances %v, fence the managers' group only %v", describe, fence)
	}
}

// policyStatementsOf are role's inline policy statements and those of the
// policies attached to it.
func policyStatementsOf(res map[string]any, role string) []map[string]any {
	return append(roleStatements(res, role), policyStatements(res, role)...)
}
