// Package awsapi holds the AWS service clients behind the calls clusterctl
// makes: one small type per service, whose fields are the client's
// methods as function values.
//
// Why not hand the SDK's clients to the packages' interfaces directly: kong
// and text/template look methods up by name through reflection, and then the
// linker keeps every exported method of every type stored in an interface,
// and of every type such a type holds. An SDK client stored in one brings
// all its operations along (EC2 alone has over 800), which tripled the
// binary. A type here is what is stored instead; it holds functions, which
// have no methods, so only the operations listed here are linked. A call
// the packages newly need gets its field here (the build says which is
// missing); storing a *Client in an interface, or in a struct stored in
// one, brings the weight back, and the binary size test says so.
package awsapi

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// ASG makes clusterctl's Auto Scaling calls.
type ASG struct {
	describeAutoScalingGroups           func(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
	describeAutoScalingInstances        func(context.Context, *autoscaling.DescribeAutoScalingInstancesInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingInstancesOutput, error)
	terminateInstanceInAutoScalingGroup func(context.Context, *autoscaling.TerminateInstanceInAutoScalingGroupInput, ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error)
}

// NewASG returns the Auto Scaling calls of cfg, with opts applied to the client.
func NewASG(cfg aws.Config, opts ...func(*autoscaling.Options)) ASG {
	c := autoscaling.NewFromConfig(cfg, opts...)
	return ASG{
		describeAutoScalingGroups:           c.DescribeAutoScalingGroups,
		describeAutoScalingInstances:        c.DescribeAutoScalingInstances,
		terminateInstanceInAutoScalingGroup: c.TerminateInstanceInAutoScalingGroup,
	}
}

func (a ASG) DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, optFns ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	return a.describeAutoScalingGroups(ctx, in, optFns...)
}

func (a ASG) DescribeAutoScalingInstances(ctx context.Context, in *autoscaling.DescribeAutoScalingInstancesInput, optFns ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingInstancesOutput, error) {
	return a.describeAutoScalingInstances(ctx, in, optFns...)
}

func (a ASG) TerminateInstanceInAutoScalingGroup(ctx context.Context, in *autoscaling.TerminateInstanceInAutoScalingGroupInput, optFns ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error) {
	return a.terminateInstanceInAutoScalingGroup(ctx, in, optFns...)
}

// CloudFormation makes clusterctl's CloudFormation calls.
type CloudFormation struct {
	continueUpdateRollback func(context.Context, *cloudformation.ContinueUpdateRollbackInput, ...func(*cloudformation.Options)) (*cloudformation.ContinueUpdateRollbackOutput, error)
	createChangeSet        func(context.Context, *cloudformation.CreateChangeSetInput, ...func(*cloudformation.Options)) (*cloudformation.CreateChangeSetOutput, error)
	createStack            func(context.Context, *cloudformation.CreateStackInput, ...func(*cloudformation.Options)) (*cloudformation.CreateStackOutput, error)
	deleteChangeSet        func(context.Context, *cloudformation.DeleteChangeSetInput, ...func(*cloudformation.Options)) (*cloudformation.DeleteChangeSetOutput, error)
	deleteStack            func(context.Context, *cloudformation.DeleteStackInput, ...func(*cloudformation.Options)) (*cloudformation.DeleteStackOutput, error)
	describeChangeSet      func(context.Context, *cloudformation.DescribeChangeSetInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeChangeSetOutput, error)
	describeStackEvents    func(context.Context, *cloudformation.DescribeStackEventsInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStackEventsOutput, error)
	describeStacks         func(context.Context, *cloudformation.DescribeStacksInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
	executeChangeSet       func(context.Context, *cloudformation.ExecuteChangeSetInput, ...func(*cloudformation.Options)) (*cloudformation.ExecuteChangeSetOutput, error)
	getTemplate            func(context.Context, *cloudformation.GetTemplateInput, ...func(*cloudformation.Options)) (*cloudformation.GetTemplateOutput, error)
	listStackResources     func(context.Context, *cloudformation.ListStackResourcesInput, ...func(*cloudformation.Options)) (*cloudformation.ListStackResourcesOutput, error)
	listStacks             func(context.Context, *cloudformation.ListStacksInput, ...func(*cloudformation.Options)) (*cloudformation.ListStacksOutput, error)
}

// NewCloudFormation returns the CloudFormation calls of cfg, with opts applied to the client.
func NewCloudFormation(cfg aws.Config, opts ...func(*cloudformation.Options)) CloudFormation {
	c := cloudformation.NewFromConfig(cfg, opts...)
	return CloudFormation{
		continueUpdateRollback: c.ContinueUpdateRollback,
		createChangeSet:        c.CreateChangeSet,
		createStack:            c.CreateStack,
		deleteChangeSet:        c.DeleteChangeSet,
		deleteStack:            c.DeleteStack,
		describeChangeSet:      c.DescribeChangeSet,
		describeStackEvents:    c.DescribeStackEvents,
		describeStacks:         c.DescribeStacks,
		executeChangeSet:       c.ExecuteChangeSet,
		getTemplate:            c.GetTemplate,
		listStackResources:     c.ListStackResources,
		listStacks:             c.ListStacks,
	}
}

func (a CloudFormation) ContinueUpdateRollback(ctx context.Context, in *cloudformation.ContinueUpdateRollbackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ContinueUpdateRollbackOutput, error) {
	return a.continueUpdateRollback(ctx, in, optFns...)
}

func (a CloudFormation) CreateChangeSet(ctx context.Context, in *cloudformation.CreateChangeSetInput, optFns ...func(*cloudformation.Options)) (*cloudformation.CreateChangeSetOutput, error) {
	return a.createChangeSet(ctx, in, optFns...)
}

func (a CloudFormation) CreateStack(ctx context.Context, in *cloudformation.CreateStackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.CreateStackOutput, error) {
	return a.createStack(ctx, in, optFns...)
}

func (a CloudFormation) DeleteChangeSet(ctx context.Context, in *cloudformation.DeleteChangeSetInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DeleteChangeSetOutput, error) {
	return a.deleteChangeSet(ctx, in, optFns...)
}

func (a CloudFormation) DeleteStack(ctx context.Context, in *cloudformation.DeleteStackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DeleteStackOutput, error) {
	return a.deleteStack(ctx, in, optFns...)
}

func (a CloudFormation) DescribeChangeSet(ctx context.Context, in *cloudformation.DescribeChangeSetInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeChangeSetOutput, error) {
	return a.describeChangeSet(ctx, in, optFns...)
}

func (a CloudFormation) DescribeStackEvents(ctx context.Context, in *cloudformation.DescribeStackEventsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackEventsOutput, error) {
	return a.describeStackEvents(ctx, in, optFns...)
}

func (a CloudFormation) DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	return a.describeStacks(ctx, in, optFns...)
}

func (a CloudFormation) ExecuteChangeSet(ctx context.Context, in *cloudformation.ExecuteChangeSetInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ExecuteChangeSetOutput, error) {
	return a.executeChangeSet(ctx, in, optFns...)
}

func (a CloudFormation) GetTemplate(ctx context.Context, in *cloudformation.GetTemplateInput, optFns ...func(*cloudformation.Options)) (*cloudformation.GetTemplateOutput, error) {
	return a.getTemplate(ctx, in, optFns...)
}

func (a CloudFormation) ListStackResources(ctx context.Context, in *cloudformation.ListStackResourcesInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ListStackResourcesOutput, error) {
	return a.listStackResources(ctx, in, optFns...)
}

func (a CloudFormation) ListStacks(ctx context.Context, in *cloudformation.ListStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ListStacksOutput, error) {
	return a.listStacks(ctx, in, optFns...)
}

// EC2 makes clusterctl's EC2 calls.
type EC2 struct {
	describeImages                 func(context.Context, *ec2.DescribeImagesInput, ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
	describeInstanceTypeOfferings  func(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	describeInstanceTypes          func(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	describeInstances              func(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	describeKeyPairs               func(context.Context, *ec2.DescribeKeyPairsInput, ...func(*ec2.Options)) (*ec2.DescribeKeyPairsOutput, error)
	describeLaunchTemplateVersions func(context.Context, *ec2.DescribeLaunchTemplateVersionsInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error)
	describeRouteTables            func(context.Context, *ec2.DescribeRouteTablesInput, ...func(*ec2.Options)) (*ec2.DescribeRouteTablesOutput, error)
	describeSubnets                func(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	describeVpcs                   func(context.Context, *ec2.DescribeVpcsInput, ...func(*ec2.Options)) (*ec2.DescribeVpcsOutput, error)
}

// NewEC2 returns the EC2 calls of cfg, with opts applied to the client.
func NewEC2(cfg aws.Config, opts ...func(*ec2.Options)) EC2 {
	c := ec2.NewFromConfig(cfg, opts...)
	return EC2{
		describeImages:                 c.DescribeImages,
		describeInstanceTypeOfferings:  c.DescribeInstanceTypeOfferings,
		describeInstanceTypes:          c.DescribeInstanceTypes,
		describeInstances:              c.DescribeInstances,
		describeKeyPairs:               c.DescribeKeyPairs,
		describeLaunchTemplateVersions: c.DescribeLaunchTemplateVersions,
		describeRouteTables:            c.DescribeRouteTables,
		describeSubnets:                c.DescribeSubnets,
		describeVpcs:                   c.DescribeVpcs,
	}
}

func (a EC2) DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error) {
	return a.describeImages(ctx, in, optFns...)
}

func (a EC2) DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	return a.describeInstanceTypeOfferings(ctx, in, optFns...)
}

func (a EC2) DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	return a.describeInstanceTypes(ctx, in, optFns...)
}

func (a EC2) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	return a.describeInstances(ctx, in, optFns...)
}

func (a EC2) DescribeKeyPairs(ctx context.Context, in *ec2.DescribeKeyPairsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeKeyPairsOutput, error) {
	return a.describeKeyPairs(ctx, in, optFns...)
}

func (a EC2) DescribeLaunchTemplateVersions(ctx context.Context, in *ec2.DescribeLaunchTemplateVersionsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error) {
	return a.describeLaunchTemplateVersions(ctx, in, optFns...)
}

func (a EC2) DescribeRouteTables(ctx context.Context, in *ec2.DescribeRouteTablesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeRouteTablesOutput, error) {
	return a.describeRouteTables(ctx, in, optFns...)
}

func (a EC2) DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	return a.describeSubnets(ctx, in, optFns...)
}

func (a EC2) DescribeVpcs(ctx context.Context, in *ec2.DescribeVpcsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeVpcsOutput, error) {
	return a.describeVpcs(ctx, in, optFns...)
}

// S3 makes clusterctl's S3 calls.
type S3 struct {
	deleteBucket       func(context.Context, *s3.DeleteBucketInput, ...func(*s3.Options)) (*s3.DeleteBucketOutput, error)
	deleteObject       func(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	deleteObjects      func(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	getBucketTagging   func(context.Context, *s3.GetBucketTaggingInput, ...func(*s3.Options)) (*s3.GetBucketTaggingOutput, error)
	getObject          func(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	headBucket         func(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
	headObject         func(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	listObjectVersions func(context.Context, *s3.ListObjectVersionsInput, ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error)
	listObjectsV2      func(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	putObject          func(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// NewS3 returns the S3 calls of cfg, with opts applied to the client.
func NewS3(cfg aws.Config, opts ...func(*s3.Options)) S3 {
	c := s3.NewFromConfig(cfg, opts...)
	return S3{
		deleteBucket:       c.DeleteBucket,
		deleteObject:       c.DeleteObject,
		deleteObjects:      c.DeleteObjects,
		getBucketTagging:   c.GetBucketTagging,
		getObject:          c.GetObject,
		headBucket:         c.HeadBucket,
		headObject:         c.HeadObject,
		listObjectVersions: c.ListObjectVersions,
		listObjectsV2:      c.ListObjectsV2,
		putObject:          c.PutObject,
	}
}

func (a S3) DeleteBucket(ctx context.Context, in *s3.DeleteBucketInput, optFns ...func(*s3.Options)) (*s3.DeleteBucketOutput, error) {
	return a.deleteBucket(ctx, in, optFns...)
}

func (a S3) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	return a.deleteObject(ctx, in, optFns...)
}

func (a S3) DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	return a.deleteObjects(ctx, in, optFns...)
}

func (a S3) GetBucketTagging(ctx context.Context, in *s3.GetBucketTaggingInput, optFns ...func(*s3.Options)) (*s3.GetBucketTaggingOutput, error) {
	return a.getBucketTagging(ctx, in, optFns...)
}

func (a S3) GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return a.getObject(ctx, in, optFns...)
}

func (a S3) HeadBucket(ctx context.Context, in *s3.HeadBucketInput, optFns ...func(*s3.Options)) (*s3.HeadBucketOutput, error) {
	return a.headBucket(ctx, in, optFns...)
}

func (a S3) HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	return a.headObject(ctx, in, optFns...)
}

func (a S3) ListObjectVersions(ctx context.Context, in *s3.ListObjectVersionsInput, optFns ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error) {
	return a.listObjectVersions(ctx, in, optFns...)
}

func (a S3) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return a.listObjectsV2(ctx, in, optFns...)
}

func (a S3) PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return a.putObject(ctx, in, optFns...)
}

// SQS makes clusterctl's SQS calls.
type SQS struct {
	sendMessage func(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// NewSQS returns the SQS calls of cfg, with opts applied to the client.
func NewSQS(cfg aws.Config, opts ...func(*sqs.Options)) SQS {
	c := sqs.NewFromConfig(cfg, opts...)
	return SQS{
		sendMessage: c.SendMessage,
	}
}

func (a SQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return a.sendMessage(ctx, in, optFns...)
}

// SSM makes clusterctl's SSM calls.
type SSM struct {
	cancelCommand        func(context.Context, *ssm.CancelCommandInput, ...func(*ssm.Options)) (*ssm.CancelCommandOutput, error)
	getCommandInvocation func(context.Context, *ssm.GetCommandInvocationInput, ...func(*ssm.Options)) (*ssm.GetCommandInvocationOutput, error)
	getParameter         func(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
	sendCommand          func(context.Context, *ssm.SendCommandInput, ...func(*ssm.Options)) (*ssm.SendCommandOutput, error)
	startSession         func(context.Context, *ssm.StartSessionInput, ...func(*ssm.Options)) (*ssm.StartSessionOutput, error)
	terminateSession     func(context.Context, *ssm.TerminateSessionInput, ...func(*ssm.Options)) (*ssm.TerminateSessionOutput, error)
}

// NewSSM returns the SSM calls of cfg, with opts applied to the client.
func NewSSM(cfg aws.Config, opts ...func(*ssm.Options)) SSM {
	c := ssm.NewFromConfig(cfg, opts...)
	return SSM{
		cancelCommand:        c.CancelCommand,
		getCommandInvocation: c.GetCommandInvocation,
		getParameter:         c.GetParameter,
		sendCommand:          c.SendCommand,
		startSession:         c.StartSession,
		terminateSession:     c.TerminateSession,
	}
}

func (a SSM) CancelCommand(ctx context.Context, in *ssm.CancelCommandInput, optFns ...func(*ssm.Options)) (*ssm.CancelCommandOutput, error) {
	return a.cancelCommand(ctx, in, optFns...)
}

func (a SSM) GetCommandInvocation(ctx context.Context, in *ssm.GetCommandInvocationInput, optFns ...func(*ssm.Options)) (*ssm.GetCommandInvocationOutput, error) {
	return a.getCommandInvocation(ctx, in, optFns...)
}

func (a SSM) GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	return a.getParameter(ctx, in, optFns...)
}

func (a SSM) SendCommand(ctx context.Context, in *ssm.SendCommandInput, optFns ...func(*ssm.Options)) (*ssm.SendCommandOutput, error) {
	return a.sendCommand(ctx, in, optFns...)
}

func (a SSM) StartSession(ctx context.Context, in *ssm.StartSessionInput, optFns ...func(*ssm.Options)) (*ssm.StartSessionOutput, error) {
	return a.startSession(ctx, in, optFns...)
}

func (a SSM) TerminateSession(ctx context.Context, in *ssm.TerminateSessionInput, optFns ...func(*ssm.Options)) (*ssm.TerminateSessionOutput, error) {
	return a.terminateSession(ctx, in, optFns...)
}

// STS makes clusterctl's STS calls.
type STS struct {
	getCallerIdentity func(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// NewSTS returns the STS calls of cfg, with opts applied to the client.
func NewSTS(cfg aws.Config, opts ...func(*sts.Options)) STS {
	c := sts.NewFromConfig(cfg, opts...)
	return STS{
		getCallerIdentity: c.GetCallerIdentity,
	}
}

func (a STS) GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	return a.getCallerIdentity(ctx, in, optFns...)
}

// ACM makes clusterctl's ACM calls.
type ACM struct {
	describeCertificate func(context.Context, *acm.DescribeCertificateInput, ...func(*acm.Options)) (*acm.DescribeCertificateOutput, error)
}

// NewACM returns the ACM calls of cfg, with opts applied to the client.
func NewACM(cfg aws.Config, opts ...func(*acm.Options)) ACM {
	c := acm.NewFromConfig(cfg, opts...)
	return ACM{
		describeCertificate: c.DescribeCertificate,
	}
}

func (a ACM) DescribeCertificate(ctx context.Context, in *acm.DescribeCertificateInput, optFns ...func(*acm.Options)) (*acm.DescribeCertificateOutput, error) {
	return a.describeCertificate(ctx, in, optFns...)
}

// ELB makes clusterctl's ELB calls.
type ELB struct {
	describeListeners     func(context.Context, *elbv2.DescribeListenersInput, ...func(*elbv2.Options)) (*elbv2.DescribeListenersOutput, error)
	describeLoadBalancers func(context.Context, *elbv2.DescribeLoadBalancersInput, ...func(*elbv2.Options)) (*elbv2.DescribeLoadBalancersOutput, error)
	describeTargetGroups  func(context.Context, *elbv2.DescribeTargetGroupsInput, ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupsOutput, error)
	describeTargetHealth  func(context.Context, *elbv2.DescribeTargetHealthInput, ...func(*elbv2.Options)) (*elbv2.DescribeTargetHealthOutput, error)
}

// NewELB returns the ELB calls of cfg, with opts applied to the client.
func NewELB(cfg aws.Config, opts ...func(*elbv2.Options)) ELB {
	c := elbv2.NewFromConfig(cfg, opts...)
	return ELB{
		describeListeners:     c.DescribeListeners,
		describeLoadBalancers: c.DescribeLoadBalancers,
		describeTargetGroups:  c.DescribeTargetGroups,
		describeTargetHealth:  c.DescribeTargetHealth,
	}
}

func (a ELB) DescribeListeners(ctx context.Context, in *elbv2.DescribeListenersInput, optFns ...func(*elbv2.Options)) (*elbv2.DescribeListenersOutput, error) {
	return a.describeListeners(ctx, in, optFns...)
}

func (a ELB) DescribeLoadBalancers(ctx context.Context, in *elbv2.DescribeLoadBalancersInput, optFns ...func(*elbv2.Options)) (*elbv2.DescribeLoadBalancersOutput, error) {
	return a.describeLoadBalancers(ctx, in, optFns...)
}

func (a ELB) DescribeTargetGroups(ctx context.Context, in *elbv2.DescribeTargetGroupsInput, optFns ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupsOutput, error) {
	return a.describeTargetGroups(ctx, in, optFns...)
}

func (a ELB) DescribeTargetHealth(ctx context.Context, in *elbv2.DescribeTargetHealthInput, optFns ...func(*elbv2.Options)) (*elbv2.DescribeTargetHealthOutput, error) {
	return a.describeTargetHealth(ctx, in, optFns...)
}

// CloudWatchLogs makes clusterctl's CloudWatchLogs calls.
type CloudWatchLogs struct {
	describeLogGroups  func(context.Context, *cloudwatchlogs.DescribeLogGroupsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogGroupsOutput, error)
	describeLogStreams func(context.Context, *cloudwatchlogs.DescribeLogStreamsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogStreamsOutput, error)
	filterLogEvents    func(context.Context, *cloudwatchlogs.FilterLogEventsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error)
}

// NewCloudWatchLogs returns the CloudWatchLogs calls of cfg, with opts applied to the client.
func NewCloudWatchLogs(cfg aws.Config, opts ...func(*cloudwatchlogs.Options)) CloudWatchLogs {
	c := cloudwatchlogs.NewFromConfig(cfg, opts...)
	return CloudWatchLogs{
		describeLogGroups:  c.DescribeLogGroups,
		describeLogStreams: c.DescribeLogStreams,
		filterLogEvents:    c.FilterLogEvents,
	}
}

func (a CloudWatchLogs) DescribeLogGroups(ctx context.Context, in *cloudwatchlogs.DescribeLogGroupsInput, optFns ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogGroupsOutput, error) {
	return a.describeLogGroups(ctx, in, optFns...)
}

func (a CloudWatchLogs) DescribeLogStreams(ctx context.Context, in *cloudwatchlogs.DescribeLogStreamsInput, optFns ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogStreamsOutput, error) {
	return a.describeLogStreams(ctx, in, optFns...)
}

func (a CloudWatchLogs) FilterLogEvents(ctx context.Context, in *cloudwatchlogs.FilterLogEventsInput, optFns ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error) {
	return a.filterLogEvents(ctx, in, optFns...)
}
