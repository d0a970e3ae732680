package operatorpolicy

import (
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/remote"
)

// statement is one statement of the policy: the actions the commands call
// on its resources (reads, which the read commands make and which change
// nothing, and writes), joined by those CloudFormation needs there for the
// templates' resource types (resourceTypes names the statement by sid).
// Its Sid says what it is for, and why it is scoped as it is.
type statement struct {
	sid       string
	reads     []string
	writes    []string
	resources func(Scope) []string
	condition func(Scope) map[string]map[string]any
}

// Sids of the statements.
const (
	sidUnscoped       = "ReadsAndCallsAWSDoesNotScopeToResources"
	sidStacks         = "TheClusterStacksAndItsNetwork"
	sidBucket         = "TheClusterBucket"
	sidLogGroups      = "FindTheLogGroupDescribeLogGroupsIsPerAccount"
	sidLogGroup       = "TheClusterLogGroup"
	sidImages         = "ThePublicImageParametersOfAmazonLinux"
	sidTopics         = "TheTopicsTheAlarmsNotify"
	sidAlarmTopic     = "TheAlarmTopicNamedAfterTheCore"
	sidSecrets        = "TheSecretsDeclaredAsSources"
	sidRoles          = "TheClusterRolesNamedAfterItsStacks"
	sidCallerRole     = "TheCallerRoleWithItsPathTheDefaultOperator"
	sidCertificates   = "TheCertificatesOfTlsListeners"
	sidQueues         = "TheClusterQueuesNamedAfterItsCore"
	sidGroups         = "TheClusterAutoScalingGroupsNamedAfterItsStacks"
	sidInstances      = "RunCommandsAndShellsOnTheClusterInstances"
	sidDocuments      = "WithTheShellScriptAndSessionDocuments"
	sidSessions       = "EndTheShellSessions"
	sidPassRoles      = "PassTheClusterRolesToItsInstancesOnly"
	sidServiceRoles   = "TheServiceLinkedRolesOfAutoScalingAndELB"
	sidEC2            = "EC2ResourcesWhoseIdsCloudFormationChooses"
	sidRules          = "TheClusterEventRulesNamedAfterItsCore"
	sidAlarms         = "TheClusterAlarms"
	sidDashboard      = "TheClusterDashboard"
	sidKeys           = "TheAlarmTopicKeyWhoseIdIsRandom"
	sidSecretsParam   = "TheSecretsDeclarationParameter"
	sidLoadBalancers  = "LoadBalancersWhoseGeneratedNamesAreTruncated"
	sidEndpointsZones = "PrivateDNSOfInterfaceEndpoints"
)

// instanceTag is the condition that the instance carries the cluster's
// tag (any value when the cluster is any).
func instanceTag(key string) func(Scope) map[string]map[string]any {
	return func(s Scope) map[string]map[string]any {
		return map[string]map[string]any{"StringLike": {key + "/" + names.TagCluster: s.cluster()}}
	}
}

func anyResource(Scope) []string { return []string{"*"} }

// statements are the policy's statements, in the order it lists them.
var statements = []statement{
	{sid: sidUnscoped,
		reads: []string{
			"sts:GetCallerIdentity",
			"cloudformation:ListStacks", "cloudformation:DescribeStacks", // a listing is authorised against *
			"ec2:DescribeImages", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes", "ec2:DescribeInstances",
			"ec2:DescribeKeyPairs", "ec2:DescribeLaunchTemplateVersions", "ec2:DescribeRouteTables", "ec2:DescribeSubnets", "ec2:DescribeVpcs",
			"autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeAutoScalingInstances",
			"elasticloadbalancing:DescribeListeners", "elasticloadbalancing:DescribeLoadBalancers",
			"elasticloadbalancing:DescribeTargetGroups", "elasticloadbalancing:DescribeTargetHealth",
			"cloudwatch:DescribeAlarms", "ssm:DescribeParameters",
		},
		writes:    []string{"ssm:GetCommandInvocation", "ssm:CancelCommand"},
		resources: anyResource},
	{sid: sidStacks,
		reads: []string{"cloudformation:DescribeStackEvents", "cloudformation:GetTemplate",
			"cloudformation:ListStackResources", "cloudformation:DescribeChangeSet"},
		writes: []string{"cloudformation:CreateStack", "cloudformation:CreateChangeSet", "cloudformation:ExecuteChangeSet",
			"cloudformation:DeleteChangeSet", "cloudformation:DeleteStack", "cloudformation:ContinueUpdateRollback"},
		resources: Scope.stacks},
	{sid: sidBucket,
		reads:     []string{"s3:GetObject", "s3:ListBucket", "s3:ListBucketVersions", "s3:GetBucketTagging"},
		writes:    []string{"s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:DeleteBucket"},
		resources: func(s Scope) []string { return []string{s.bucket(), s.bucket() + "/*"} }},
	{sid: sidLogGroups,
		reads:     []string{"logs:DescribeLogGroups"},
		resources: func(s Scope) []string { return []string{s.arn("logs", "log-group:*")} }},
	{sid: sidLogGroup,
		reads:     []string{"logs:DescribeLogStreams", "logs:FilterLogEvents"},
		resources: Scope.logGroup},
	{sid: sidImages,
		reads:     []string{"ssm:GetParameter"},
		resources: func(s Scope) []string { return []string{s.public("ssm", "parameter/aws/service/*")} }},
	{sid: sidTopics,
		reads:     []string{"sns:GetTopicAttributes", "sns:ListSubscriptionsByTopic"},
		resources: func(s Scope) []string { return []string{s.arn("sns", "*")} }},
	{sid: sidSecrets,
		reads:     []string{"secretsmanager:DescribeSecret"},
		resources: func(s Scope) []string { return []string{s.arn("secretsmanager", "secret:*")} }},
	{sid: sidCallerRole,
		reads:     []string{"iam:GetRole"},
		resources: func(s Scope) []string { return []string{s.global("iam", "role/*")} }},
	{sid: sidCertificates,
		reads:     []string{"acm:DescribeCertificate"},
		resources: func(s Scope) []string { return []string{s.arn("acm", "certificate/*")} }},
	{sid: sidQueues,
		writes:    []string{"sqs:SendMessage"},
		resources: func(s Scope) []string { return []string{s.arn("sqs", s.named())} }},
	{sid: sidGroups,
		writes:    []string{"autoscaling:TerminateInstanceInAutoScalingGroup"},
		resources: Scope.groups},
	{sid: sidInstances,
		writes:    []string{"ssm:SendCommand", "ssm:StartSession"},
		resources: func(s Scope) []string { return []string{s.arn("ec2", "instance/*")} },
		condition: instanceTag("ssm:resourceTag")},
	{sid: sidDocuments,
		writes: []string{"ssm:SendCommand", "ssm:StartSession"},
		resources: func(s Scope) []string {
			return []string{s.public("ssm", "document/"+remote.Document), s.arn("ssm", "document/SSM-SessionManagerRunShell")}
		}},
	{sid: sidSessions,
		writes:    []string{"ssm:TerminateSession"},
		resources: func(s Scope) []string { return []string{s.arn("ssm", "session/*")} }},

	// Where CloudFormation creates, updates and deletes the templates'
	// resources with the operator's permissions (resourceTypes fills the
	// actions in).
	{sid: sidRoles, resources: func(s Scope) []string {
		return []string{s.global("iam", "role/"+s.named()), s.global("iam", "instance-profile/"+s.named())}
	}},
	{sid: sidPassRoles, resources: func(s Scope) []string { return []string{s.global("iam", "role/"+s.named())} },
		condition: func(Scope) map[string]map[string]any {
			return map[string]map[string]any{"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}
		}},
	{sid: sidServiceRoles, resources: func(s Scope) []string { return []string{s.global("iam", "role/aws-service-role/*")} },
		condition: func(Scope) map[string]map[string]any {
			return map[string]map[string]any{"StringEquals": {"iam:AWSServiceName": []string{"autoscaling.amazonaws.com", "elasticloadbalancing.amazonaws.com"}}}
		}},
	{sid: sidEC2, resources: func(s Scope) []string { return []string{s.arn("ec2", "*"), s.public("ec2", "image/*")} }},
	{sid: sidRules, resources: func(s Scope) []string { return []string{s.arn("events", "rule/"+s.named())} }},
	{sid: sidAlarms, resources: func(s Scope) []string {
		return []string{s.arn("cloudwatch", "alarm:"+names.AlarmName(s.cluster(), "*"))}
	}},
	// Dashboards have no region in their ARN: the name is the
	// account's, prefixed as the alarms' are.
	{sid: sidDashboard, resources: func(s Scope) []string {
		return []string{s.global("cloudwatch", "dashboard/"+names.DashboardName(s.cluster()))}
	}},
	{sid: sidAlarmTopic, resources: func(s Scope) []string { return []string{s.arn("sns", s.named())} }},
	{sid: sidKeys, resources: func(s Scope) []string { return []string{s.arn("kms", "key/*")} }},
	{sid: sidSecretsParam, resources: func(s Scope) []string {
		return []string{s.arn("ssm", "parameter"+names.SecretsParameter(s.cluster()))}
	}},
	{sid: sidLoadBalancers, resources: func(s Scope) []string {
		return []string{s.arn("elasticloadbalancing", "loadbalancer/net/*"), s.arn("elasticloadbalancing", "targetgroup/*"),
			s.arn("elasticloadbalancing", "listener/net/*")}
	}},
	{sid: sidEndpointsZones, resources: func(s Scope) []string {
		return []string{"arn:" + s.partition() + ":route53:::hostedzone/*"}
	}},
}

// groups is the ARN pattern of the cluster's Auto Scaling groups, named
// after their stacks by CloudFormation.
func (s Scope) groups() []string {
	return []string{s.arn("autoscaling", "autoScalingGroup:*:autoScalingGroupName/"+s.named())}
}
