package operatorpolicy

import (
	"regexp"
	"strings"
	"testing"
)

// glob matches IAM's wildcards (* any run, ? one character) against v.
func glob(pattern, v string, fold bool) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	if fold {
		re = "(?i)" + re
	}
	return regexp.MustCompile(re).MatchString(v)
}

// allows says whether some statement of d allows action on resource, as
// IAM matches them (conditions aside: the tests below ask about names).
func allows(d Document, action, resource string) bool {
	for _, st := range d.Statement {
		for _, a := range st.Action {
			if !glob(a, action, true) {
				continue
			}
			for _, r := range st.Resource {
				if glob(r, resource, false) {
					return true
				}
			}
		}
	}
	return false
}

// A policy scoped to a cluster reaches that cluster's resources and its
// groups', and not another cluster's; the read-only one changes nothing.
func TestScopedToTheCluster(t *testing.T) {
	const acct, region = "123456789012", "eu-west-1"
	prod := Build(Scope{Cluster: "prod", Network: "main", Region: region, Account: acct}, false)
	anyCluster := Build(Scope{}, false)
	readOnly := Build(Scope{Cluster: "prod", Region: region, Account: acct}, true)
	stack := func(name string) string {
		return "arn:aws:cloudformation:" + region + ":" + acct + ":stack/" + name + "/2c8d1f40-0c5e-11ef-9b1a-0a1b2c3d4e5f"
	}
	tests := []struct {
		doc              Document
		action, resource string
		want             bool
	}{
		{prod, "cloudformation:CreateStack", stack("prod"), true},
		{prod, "cloudformation:ExecuteChangeSet", stack("prod-web"), true},
		{prod, "cloudformation:DeleteStack", stack("main-network"), true},
		{prod, "cloudformation:DeleteStack", stack("staging"), false},
		{prod, "cloudformation:DeleteStack", stack("other-network"), false},
		{anyCluster, "cloudformation:DeleteStack", stack("staging"), true},
		{readOnly, "cloudformation:DeleteStack", stack("prod"), false},
		{readOnly, "cloudformation:DescribeStackEvents", stack("prod-web"), true},
		{prod, "s3:PutObject", "arn:aws:s3:::prod-bucket-1x2y3z4w5v6u/join/groups/web/node-1.env", true},
		{prod, "s3:PutObject", "arn:aws:s3:::staging-bucket-1x2y3z4w5v6u/join/groups/web/node-1.env", false},
		{prod, "s3:PutBucketPolicy", "arn:aws:s3:::prod-bucket-1x2y3z4w5v6u", true},
		{prod, "s3:PutBucketPolicy", "arn:aws:s3:::someone-elses", false},
		{readOnly, "s3:PutObject", "arn:aws:s3:::prod-bucket-1x2y3z4w5v6u/locks/x", false},
		{readOnly, "s3:GetObject", "arn:aws:s3:::prod-bucket-1x2y3z4w5v6u/status/swarm.json", true},
		{prod, "iam:PassRole", "arn:aws:iam::" + acct + ":role/prod-ControlRole-AbCdEf123456", true},
		{prod, "iam:PassRole", "arn:aws:iam::" + acct + ":role/Administrator", false},
		{prod, "iam:PutRolePolicy", "arn:aws:iam::" + acct + ":role/staging-ControlRole-AbCdEf123456", false},
		{prod, "iam:CreateInstanceProfile", "arn:aws:iam::" + acct + ":instance-profile/prod-AgentInstanceProfile-X", true},
		{prod, "sqs:SendMessage", "arn:aws:sqs:" + region + ":" + acct + ":prod-LifecycleQueue-X", true},
		{prod, "sqs:SendMessage", "arn:aws:sqs:" + region + ":" + acct + ":staging-LifecycleQueue-X", false},
		{prod, "sqs:SendMessage", "arn:aws:sqs:us-east-1:" + acct + ":prod-LifecycleQueue-X", false},
		{prod, "logs:FilterLogEvents", "arn:aws:logs:" + region + ":" + acct + ":log-group:/clusterctl/prod:*", true},
		{prod, "logs:FilterLogEvents", "arn:aws:logs:" + region + ":" + acct + ":log-group:/clusterctl/staging:*", false},
		{prod, "cloudwatch:PutMetricAlarm", "arn:aws:cloudwatch:" + region + ":" + acct + ":alarm:clusterctl-prod-nodes-down", true},
		{prod, "cloudwatch:PutMetricAlarm", "arn:aws:cloudwatch:" + region + ":" + acct + ":alarm:billing", false},
		{prod, "cloudwatch:PutDashboard", "arn:aws:cloudwatch::" + acct + ":dashboard/clusterctl-prod", true},
		{prod, "cloudwatch:DeleteDashboards", "arn:aws:cloudwatch::" + acct + ":dashboard/clusterctl-staging", false},
		{prod, "cloudwatch:PutDashboard", "arn:aws:cloudwatch::" + acct + ":dashboard/billing", false},
		{anyCluster, "cloudwatch:DeleteDashboards", "arn:aws:cloudwatch::" + acct + ":dashboard/clusterctl-staging", true},
		{anyCluster, "cloudwatch:DeleteDashboards", "arn:aws:cloudwatch::" + acct + ":dashboard/billing", false},
		{readOnly, "cloudwatch:GetDashboard", "arn:aws:cloudwatch::" + acct + ":dashboard/clusterctl-prod", false},
		{prod, "ssm:PutParameter", "arn:aws:ssm:" + region + ":" + acct + ":parameter/clusterctl/prod/secrets", true},
		{prod, "ssm:PutParameter", "arn:aws:ssm:" + region + ":" + acct + ":parameter/db/password", false},
		{prod, "ssm:GetParameter", "arn:aws:ssm:" + region + "::parameter/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", true},
		{prod, "ssm:GetParameter", "arn:aws:ssm:" + region + ":" + acct + ":parameter/db/password", false},
		{prod, "autoscaling:TerminateInstanceInAutoScalingGroup",
			"arn:aws:autoscaling:" + region + ":" + acct + ":autoScalingGroup:uuid:autoScalingGroupName/prod-web-AutoScalingGroup-X", true},
		{prod, "autoscaling:TerminateInstanceInAutoScalingGroup",
			"arn:aws:autoscaling:" + region + ":" + acct + ":autoScalingGroup:uuid:autoScalingGroupName/staging-web-AutoScalingGroup-X", false},
		{prod, "ec2:TerminateInstances", "arn:aws:ec2:" + region + ":" + acct + ":instance/i-0123456789abcdef0", false},
		{prod, "iam:CreateUser", "arn:aws:iam::" + acct + ":user/prod-x", false},
	}
	for _, tc := range tests {
		if got := allows(tc.doc, tc.action, tc.resource); got != tc.want {
			t.Errorf("%s on %s: allowed %v, want %v", tc.action, tc.resource, got, tc.want)
		}
	}
}
