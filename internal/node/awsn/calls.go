package awsn

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwschemas "github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"
)

// The agent's AWS calls are held as function values, as the CLI's are
// (internal/awsapi): an SDK client stored in an interface brings every
// operation of its service into the binary, since kong looks methods up by
// reflection; a function has no methods, so only the operations named here
// are linked.

// S3Calls are the agent's s3 calls.
type S3Calls struct {
	getObject    func(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	putObject    func(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	deleteObject func(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	listObjects  func(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	headObject   func(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// NewS3 returns the s3 calls of cfg, with opts applied to the client.
func NewS3(cfg aws.Config, opts ...func(*s3.Options)) S3Calls {
	c := s3.NewFromConfig(cfg, opts...)
	return S3Calls{
		getObject:    c.GetObject,
		putObject:    c.PutObject,
		deleteObject: c.DeleteObject,
		listObjects:  c.ListObjectsV2,
		headObject:   c.HeadObject,
	}
}

// HeadObject calls s3's HeadObject.
func (a S3Calls) HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	return a.headObject(ctx, in, opts...)
}

// ListObjectsV2 calls s3's ListObjectsV2.
func (a S3Calls) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return a.listObjects(ctx, in, opts...)
}

// GetObject calls s3's GetObject.
func (a S3Calls) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return a.getObject(ctx, in, opts...)
}

// PutObject calls s3's PutObject.
func (a S3Calls) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return a.putObject(ctx, in, opts...)
}

// DeleteObject calls s3's DeleteObject.
func (a S3Calls) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	return a.deleteObject(ctx, in, opts...)
}

// SQSCalls are the agent's sqs calls.
type SQSCalls struct {
	receiveMessage          func(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	changeMessageVisibility func(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	deleteMessage           func(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// NewSQS returns the sqs calls of cfg, with opts applied to the client.
func NewSQS(cfg aws.Config, opts ...func(*sqs.Options)) SQSCalls {
	c := sqs.NewFromConfig(cfg, opts...)
	return SQSCalls{
		receiveMessage:          c.ReceiveMessage,
		changeMessageVisibility: c.ChangeMessageVisibility,
		deleteMessage:           c.DeleteMessage,
	}
}

// ReceiveMessage calls sqs's ReceiveMessage.
func (a SQSCalls) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return a.receiveMessage(ctx, in, opts...)
}

// ChangeMessageVisibility calls sqs's ChangeMessageVisibility.
func (a SQSCalls) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return a.changeMessageVisibility(ctx, in, opts...)
}

// DeleteMessage calls sqs's DeleteMessage.
func (a SQSCalls) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return a.deleteMessage(ctx, in, opts...)
}

// AutoScalingCalls are the agent's autoscaling calls.
type AutoScalingCalls struct {
	describeAutoScalingGroups      func(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
	recordLifecycleActionHeartbeat func(context.Context, *autoscaling.RecordLifecycleActionHeartbeatInput, ...func(*autoscaling.Options)) (*autoscaling.RecordLifecycleActionHeartbeatOutput, error)
	completeLifecycleAction        func(context.Context, *autoscaling.CompleteLifecycleActionInput, ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error)
	setDesiredCapacity             func(context.Context, *autoscaling.SetDesiredCapacityInput, ...func(*autoscaling.Options)) (*autoscaling.SetDesiredCapacityOutput, error)
	terminateInstance              func(context.Context, *autoscaling.TerminateInstanceInAutoScalingGroupInput, ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error)
	describeInstances              func(context.Context, *autoscaling.DescribeAutoScalingInstancesInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingInstancesOutput, error)
}

// NewAutoScaling returns the autoscaling calls of cfg, with opts applied to the client.
func NewAutoScaling(cfg aws.Config, opts ...func(*autoscaling.Options)) AutoScalingCalls {
	c := autoscaling.NewFromConfig(cfg, opts...)
	return AutoScalingCalls{
		describeAutoScalingGroups:      c.DescribeAutoScalingGroups,
		recordLifecycleActionHeartbeat: c.RecordLifecycleActionHeartbeat,
		completeLifecycleAction:        c.CompleteLifecycleAction,
		setDesiredCapacity:             c.SetDesiredCapacity,
		terminateInstance:              c.TerminateInstanceInAutoScalingGroup,
		describeInstances:              c.DescribeAutoScalingInstances,
	}
}

// DescribeAutoScalingGroups calls autoscaling's DescribeAutoScalingGroups.
func (a AutoScalingCalls) DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	return a.describeAutoScalingGroups(ctx, in, opts...)
}

// RecordLifecycleActionHeartbeat calls autoscaling's RecordLifecycleActionHeartbeat.
func (a AutoScalingCalls) RecordLifecycleActionHeartbeat(ctx context.Context, in *autoscaling.RecordLifecycleActionHeartbeatInput, opts ...func(*autoscaling.Options)) (*autoscaling.RecordLifecycleActionHeartbeatOutput, error) {
	return a.recordLifecycleActionHeartbeat(ctx, in, opts...)
}

// CompleteLifecycleAction calls autoscaling's CompleteLifecycleAction.
func (a AutoScalingCalls) CompleteLifecycleAction(ctx context.Context, in *autoscaling.CompleteLifecycleActionInput, opts ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error) {
	return a.completeLifecycleAction(ctx, in, opts...)
}

// SetDesiredCapacity calls autoscaling's SetDesiredCapacity.
func (a AutoScalingCalls) SetDesiredCapacity(ctx context.Context, in *autoscaling.SetDesiredCapacityInput, opts ...func(*autoscaling.Options)) (*autoscaling.SetDesiredCapacityOutput, error) {
	return a.setDesiredCapacity(ctx, in, opts...)
}

// TerminateInstanceInAutoScalingGroup calls autoscaling's TerminateInstanceInAutoScalingGroup.
func (a AutoScalingCalls) TerminateInstanceInAutoScalingGroup(ctx context.Context, in *autoscaling.TerminateInstanceInAutoScalingGroupInput, opts ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error) {
	return a.terminateInstance(ctx, in, opts...)
}

// DescribeAutoScalingInstances calls autoscaling's DescribeAutoScalingInstances.
func (a AutoScalingCalls) DescribeAutoScalingInstances(ctx context.Context, in *autoscaling.DescribeAutoScalingInstancesInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingInstancesOutput, error) {
	return a.describeInstances(ctx, in, opts...)
}

// STSCalls are the agent's sts calls.
type STSCalls struct {
	getCallerIdentity func(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// NewSTS returns the sts calls of cfg.
func NewSTS(cfg aws.Config) STSCalls {
	return STSCalls{getCallerIdentity: sts.NewFromConfig(cfg).GetCallerIdentity}
}

// GetCallerIdentity calls sts's GetCallerIdentity.
func (a STSCalls) GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, opts ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	return a.getCallerIdentity(ctx, in, opts...)
}

// EC2Calls are the agent's ec2 calls.
type EC2Calls struct {
	describeInstances func(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	createTags        func(context.Context, *ec2.CreateTagsInput, ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
	describeTypes     func(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
}

// NewEC2 returns the ec2 calls of cfg, with opts applied to the client.
func NewEC2(cfg aws.Config, opts ...func(*ec2.Options)) EC2Calls {
	c := ec2.NewFromConfig(cfg, opts...)
	return EC2Calls{
		describeInstances: c.DescribeInstances,
		createTags:        c.CreateTags,
		describeTypes:     c.DescribeInstanceTypes,
	}
}

// DescribeInstances calls ec2's DescribeInstances.
func (a EC2Calls) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	return a.describeInstances(ctx, in, opts...)
}

// CreateTags calls ec2's CreateTags.
func (a EC2Calls) CreateTags(ctx context.Context, in *ec2.CreateTagsInput, opts ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	return a.createTags(ctx, in, opts...)
}

// DescribeInstanceTypes calls ec2's DescribeInstanceTypes.
func (a EC2Calls) DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	return a.describeTypes(ctx, in, opts...)
}

// CloudFormationCalls are the agent's cloudformation calls.
type CloudFormationCalls struct {
	describeStacks func(context.Context, *cloudformation.DescribeStacksInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// NewCloudFormation returns the cloudformation calls of cfg, with opts applied to the client.
func NewCloudFormation(cfg aws.Config, opts ...func(*cloudformation.Options)) CloudFormationCalls {
	c := cloudformation.NewFromConfig(cfg, opts...)
	return CloudFormationCalls{describeStacks: c.DescribeStacks}
}

// DescribeStacks calls cloudformation's DescribeStacks.
func (a CloudFormationCalls) DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, opts ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	return a.describeStacks(ctx, in, opts...)
}

// LogsCalls are the agent's cloudwatchlogs calls.
type LogsCalls struct {
	createLogStream func(context.Context, *cloudwatchlogs.CreateLogStreamInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.CreateLogStreamOutput, error)
	putLogEvents    func(context.Context, *cloudwatchlogs.PutLogEventsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.PutLogEventsOutput, error)
}

// NewLogs returns the cloudwatchlogs calls of cfg, with opts applied to the client.
func NewLogs(cfg aws.Config, opts ...func(*cloudwatchlogs.Options)) LogsCalls {
	c := cloudwatchlogs.NewFromConfig(cfg, opts...)
	return LogsCalls{
		createLogStream: c.CreateLogStream,
		putLogEvents:    c.PutLogEvents,
	}
}

// CreateLogStream calls cloudwatchlogs's CreateLogStream.
func (a LogsCalls) CreateLogStream(ctx context.Context, in *cloudwatchlogs.CreateLogStreamInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.CreateLogStreamOutput, error) {
	return a.createLogStream(ctx, in, opts...)
}

// PutLogEvents calls cloudwatchlogs's PutLogEvents.
func (a LogsCalls) PutLogEvents(ctx context.Context, in *cloudwatchlogs.PutLogEventsInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.PutLogEventsOutput, error) {
	return a.putLogEvents(ctx, in, opts...)
}

// CloudWatchCalls are the agent's cloudwatch calls.
type CloudWatchCalls struct {
	putMetricData func(context.Context, *cloudwatch.PutMetricDataInput, ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error)
}

// NewCloudWatch returns the cloudwatch calls of cfg. Against an endpoint
// of its own (AWS_ENDPOINT_URL: a test's) it speaks CloudWatch's query
// protocol, which every implementation serves (moto serves no other); AWS's
// own endpoint the SDK's default.
func NewCloudWatch(cfg aws.Config) CloudWatchCalls {
	return CloudWatchCalls{putMetricData: cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) {
		if os.Getenv("AWS_ENDPOINT_URL") != "" {
			o.Protocol = awsquery.New(cwschemas.GraniteServiceVersion20100801)
		}
	}).PutMetricData}
}

// PutMetricData calls cloudwatch's PutMetricData.
func (a CloudWatchCalls) PutMetricData(ctx context.Context, in *cloudwatch.PutMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error) {
	return a.putMetricData(ctx, in, opts...)
}
