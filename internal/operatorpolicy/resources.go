package operatorpolicy

// resourceType is what CloudFormation calls, with the operator's
// permissions, to create, update, tag and delete one resource type of
// the templates, and the statements (by sid) that grant it there. Stack
// tags are propagated to every resource that takes tags: the tagging
// actions are needed for resources whose template gives them none.
type resourceType struct {
	typ    string
	grants []grant
}

type grant struct {
	sid     string
	actions []string
}

// ec2Tags are EC2's tagging actions: CloudFormation tags what it creates
// with the stack's tags.
var ec2Tags = []string{"ec2:CreateTags", "ec2:DeleteTags"}

func ec2Type(reads []string, writes ...string) []grant {
	return []grant{{sidEC2, append(writes, ec2Tags...)}, {sidUnscoped, reads}}
}

// resourceTypes has one entry per resource type of templates/ (a test
// says so), sorted.
var resourceTypes = []resourceType{
	{"AWS::AutoScaling::AutoScalingGroup", []grant{
		{sidGroups, []string{"autoscaling:CreateAutoScalingGroup", "autoscaling:UpdateAutoScalingGroup", "autoscaling:DeleteAutoScalingGroup",
			"autoscaling:CreateOrUpdateTags", "autoscaling:DeleteTags", "autoscaling:PutLifecycleHook", "autoscaling:DeleteLifecycleHook",
			"autoscaling:SuspendProcesses", "autoscaling:ResumeProcesses", "autoscaling:SetDesiredCapacity",
			"autoscaling:TerminateInstanceInAutoScalingGroup"}},
		{sidUnscoped, []string{"autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeLifecycleHooks",
			"autoscaling:DescribeScalingActivities", "autoscaling:DescribeAutoScalingInstances"}},
		// Auto Scaling launches from the launch template as the
		// caller: RunInstances on it, and passing its instance role.
		{sidEC2, []string{"ec2:RunInstances", "ec2:CreateTags"}},
		{sidPassRoles, []string{"iam:PassRole"}},
		{sidServiceRoles, []string{"iam:CreateServiceLinkedRole"}},
	}},
	{"AWS::CloudWatch::Alarm", []grant{
		{sidAlarms, []string{"cloudwatch:PutMetricAlarm", "cloudwatch:DeleteAlarms", "cloudwatch:TagResource", "cloudwatch:UntagResource",
			"cloudwatch:ListTagsForResource"}},
		{sidUnscoped, []string{"cloudwatch:DescribeAlarms"}},
	}},
	// A dashboard takes no tags; its handlers read it back after each
	// write.
	{"AWS::CloudWatch::Dashboard", []grant{
		{sidDashboard, []string{"cloudwatch:PutDashboard", "cloudwatch:GetDashboard", "cloudwatch:DeleteDashboards"}},
	}},
	{"AWS::EC2::EIP", ec2Type([]string{"ec2:DescribeAddresses"}, "ec2:AllocateAddress", "ec2:ReleaseAddress")},
	{"AWS::EC2::InternetGateway", ec2Type([]string{"ec2:DescribeInternetGateways"}, "ec2:CreateInternetGateway", "ec2:DeleteInternetGateway")},
	{"AWS::EC2::LaunchTemplate", append(ec2Type([]string{"ec2:DescribeLaunchTemplates", "ec2:DescribeLaunchTemplateVersions"},
		"ec2:CreateLaunchTemplate", "ec2:CreateLaunchTemplateVersion", "ec2:ModifyLaunchTemplate", "ec2:DeleteLaunchTemplate",
		"ec2:DeleteLaunchTemplateVersions"),
		// The image parameter (AWS::SSM::Parameter::Value) is resolved
		// by CloudFormation as the caller on every deploy.
		grant{sidImages, []string{"ssm:GetParameters"}})},
	{"AWS::EC2::NatGateway", ec2Type([]string{"ec2:DescribeNatGateways"}, "ec2:CreateNatGateway", "ec2:DeleteNatGateway")},
	{"AWS::EC2::Route", ec2Type([]string{"ec2:DescribeRouteTables"}, "ec2:CreateRoute", "ec2:ReplaceRoute", "ec2:DeleteRoute")},
	{"AWS::EC2::RouteTable", ec2Type([]string{"ec2:DescribeRouteTables"}, "ec2:CreateRouteTable", "ec2:DeleteRouteTable")},
	{"AWS::EC2::SecurityGroup", ec2Type([]string{"ec2:DescribeSecurityGroups", "ec2:DescribeSecurityGroupRules"},
		"ec2:CreateSecurityGroup", "ec2:DeleteSecurityGroup", "ec2:AuthorizeSecurityGroupIngress", "ec2:AuthorizeSecurityGroupEgress",
		"ec2:RevokeSecurityGroupIngress", "ec2:RevokeSecurityGroupEgress")},
	{"AWS::EC2::SecurityGroupIngress", ec2Type([]string{"ec2:DescribeSecurityGroups", "ec2:DescribeSecurityGroupRules"},
		"ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress", "ec2:ModifySecurityGroupRules",
		"ec2:UpdateSecurityGroupRuleDescriptionsIngress")},
	{"AWS::EC2::Subnet", ec2Type([]string{"ec2:DescribeSubnets", "ec2:DescribeAvailabilityZones"},
		"ec2:CreateSubnet", "ec2:DeleteSubnet", "ec2:ModifySubnetAttribute")},
	{"AWS::EC2::SubnetRouteTableAssociation", ec2Type([]string{"ec2:DescribeRouteTables"},
		"ec2:AssociateRouteTable", "ec2:DisassociateRouteTable", "ec2:ReplaceRouteTableAssociation")},
	{"AWS::EC2::VPC", ec2Type([]string{"ec2:DescribeVpcs", "ec2:DescribeVpcAttribute"}, "ec2:CreateVpc", "ec2:DeleteVpc", "ec2:ModifyVpcAttribute")},
	{"AWS::EC2::VPCEndpoint", append(ec2Type([]string{"ec2:DescribeVpcEndpoints"}, "ec2:CreateVpcEndpoint", "ec2:ModifyVpcEndpoint", "ec2:DeleteVpcEndpoints"),
		// An interface endpoint with private DNS is associated with
		// the service's hosted zone as the caller.
		grant{sidEndpointsZones, []string{"route53:AssociateVPCWithHostedZone"}})},
	{"AWS::EC2::VPCGatewayAttachment", ec2Type([]string{"ec2:DescribeInternetGateways"}, "ec2:AttachInternetGateway", "ec2:DetachInternetGateway")},
	{"AWS::ElasticLoadBalancingV2::Listener", []grant{
		{sidLoadBalancers, []string{"elasticloadbalancing:CreateListener", "elasticloadbalancing:ModifyListener", "elasticloadbalancing:DeleteListener",
			"elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"}},
		{sidUnscoped, []string{"elasticloadbalancing:DescribeListeners"}},
	}},
	{"AWS::ElasticLoadBalancingV2::LoadBalancer", []grant{
		{sidLoadBalancers, []string{"elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:DeleteLoadBalancer",
			"elasticloadbalancing:ModifyLoadBalancerAttributes", "elasticloadbalancing:SetSecurityGroups", "elasticloadbalancing:SetSubnets",
			"elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"}},
		{sidUnscoped, []string{"elasticloadbalancing:DescribeLoadBalancers", "elasticloadbalancing:DescribeLoadBalancerAttributes"}},
		{sidServiceRoles, []string{"iam:CreateServiceLinkedRole"}},
	}},
	{"AWS::ElasticLoadBalancingV2::TargetGroup", []grant{
		{sidLoadBalancers, []string{"elasticloadbalancing:CreateTargetGroup", "elasticloadbalancing:ModifyTargetGroup",
			"elasticloadbalancing:ModifyTargetGroupAttributes", "elasticloadbalancing:DeleteTargetGroup",
			"elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"}},
		{sidUnscoped, []string{"elasticloadbalancing:DescribeTargetGroups", "elasticloadbalancing:DescribeTargetGroupAttributes"}},
	}},
	{"AWS::Events::Rule", []grant{
		{sidRules, []string{"events:PutRule", "events:DeleteRule", "events:DescribeRule", "events:PutTargets", "events:RemoveTargets",
			"events:ListTargetsByRule", "events:TagResource", "events:UntagResource"}},
	}},
	{"AWS::IAM::InstanceProfile", []grant{
		{sidRoles, []string{"iam:CreateInstanceProfile", "iam:DeleteInstanceProfile", "iam:GetInstanceProfile",
			"iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:TagInstanceProfile"}},
		// Adding a role to a profile passes it.
		{sidPassRoles, []string{"iam:PassRole"}},
	}},
	{"AWS::IAM::Policy", []grant{
		{sidRoles, []string{"iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy"}},
	}},
	{"AWS::IAM::Role", []grant{
		{sidRoles, []string{"iam:CreateRole", "iam:GetRole", "iam:UpdateRole", "iam:UpdateRoleDescription", "iam:UpdateAssumeRolePolicy",
			"iam:DeleteRole", "iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy", "iam:ListRolePolicies",
			"iam:ListAttachedRolePolicies", "iam:ListInstanceProfilesForRole", "iam:TagRole", "iam:UntagRole"}},
	}},
	{"AWS::KMS::Key", []grant{
		{sidUnscoped, []string{"kms:CreateKey"}},
		{sidKeys, []string{"kms:DescribeKey", "kms:EnableKeyRotation", "kms:GetKeyRotationStatus", "kms:GetKeyPolicy", "kms:PutKeyPolicy",
			"kms:UpdateKeyDescription", "kms:ScheduleKeyDeletion", "kms:TagResource", "kms:UntagResource", "kms:ListResourceTags"}},
	}},
	{"AWS::Logs::LogGroup", []grant{
		{sidLogGroup, []string{"logs:CreateLogGroup", "logs:DeleteLogGroup", "logs:PutRetentionPolicy", "logs:DeleteRetentionPolicy",
			"logs:AssociateKmsKey", "logs:DisassociateKmsKey", "logs:TagResource", "logs:UntagResource", "logs:ListTagsForResource",
			"logs:TagLogGroup", "logs:ListTagsLogGroup"}},
		{sidLogGroups, []string{"logs:DescribeLogGroups"}},
	}},
	{"AWS::S3::Bucket", []grant{
		{sidBucket, []string{"s3:CreateBucket", "s3:PutBucketPublicAccessBlock", "s3:GetBucketPublicAccessBlock",
			"s3:PutBucketOwnershipControls", "s3:GetBucketOwnershipControls", "s3:PutEncryptionConfiguration", "s3:GetEncryptionConfiguration",
			"s3:PutBucketVersioning", "s3:GetBucketVersioning", "s3:PutLifecycleConfiguration", "s3:GetLifecycleConfiguration",
			"s3:PutBucketTagging", "s3:GetBucketTagging"}},
	}},
	{"AWS::S3::BucketPolicy", []grant{
		{sidBucket, []string{"s3:PutBucketPolicy", "s3:GetBucketPolicy", "s3:DeleteBucketPolicy"}},
	}},
	{"AWS::SNS::Topic", []grant{
		{sidAlarmTopic, []string{"sns:CreateTopic", "sns:DeleteTopic", "sns:GetTopicAttributes", "sns:SetTopicAttributes", "sns:Subscribe",
			"sns:Unsubscribe", "sns:ListSubscriptionsByTopic", "sns:TagResource", "sns:UntagResource", "sns:ListTagsForResource"}},
	}},
	{"AWS::SNS::TopicPolicy", []grant{
		{sidAlarmTopic, []string{"sns:SetTopicAttributes", "sns:GetTopicAttributes"}},
	}},
	{"AWS::SQS::Queue", []grant{
		{sidQueues, []string{"sqs:CreateQueue", "sqs:DeleteQueue", "sqs:GetQueueAttributes", "sqs:SetQueueAttributes", "sqs:GetQueueUrl",
			"sqs:TagQueue", "sqs:UntagQueue", "sqs:ListQueueTags"}},
	}},
	{"AWS::SQS::QueuePolicy", []grant{
		{sidQueues, []string{"sqs:SetQueueAttributes", "sqs:GetQueueAttributes"}},
	}},
	{"AWS::SSM::Parameter", []grant{
		{sidSecretsParam, []string{"ssm:PutParameter", "ssm:DeleteParameter", "ssm:GetParameters", "ssm:AddTagsToResource",
			"ssm:RemoveTagsFromResource", "ssm:ListTagsForResource"}},
	}},
}
