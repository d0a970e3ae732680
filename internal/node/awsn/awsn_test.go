package awsn

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/clusterctl/clusterctl/internal/node"
)

type fakeSQS struct{ in *sqs.ReceiveMessageInput }

func (f *fakeSQS) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.in = in
	return &sqs.ReceiveMessageOutput{Messages: []sqstypes.Message{{MessageId: aws.String("m1"), ReceiptHandle: aws.String("r1"), Body: aws.String("{}"),
		Attributes: map[string]string{"SentTimestamp": "1700000000123", "SenderId": "AROAEXAMPLE:alice"}}}}, nil
}
func (f *fakeSQS) ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}
func (f *fakeSQS) DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return &sqs.DeleteMessageOutput{}, nil
}

// A message's time is the queue's own (SentTimestamp).
func TestReceive(t *testing.T) {
	f := &fakeSQS{}
	msgs, err := Queue{API: f, URL: "q"}.Receive(context.Background(), 10*time.Second, 5*time.Minute)
	if err != nil || len(msgs) != 1 || !msgs[0].Sent.Equal(time.UnixMilli(1700000000123)) || msgs[0].Receipt != "r1" || msgs[0].Sender != "AROAEXAMPLE:alice" {
		t.Errorf("%+v %v", msgs, err)
	}
	if f.in.WaitTimeSeconds != 10 || f.in.VisibilityTimeout != 300 || !slices.Contains(f.in.MessageSystemAttributeNames, sqstypes.MessageSystemAttributeNameSenderId) {
		t.Errorf("asked %+v", f.in)
	}
}

type fakeAS struct{ completeErr error }

func (f *fakeAS) DescribeAutoScalingInstances(_ context.Context, in *autoscaling.DescribeAutoScalingInstancesInput, _ ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingInstancesOutput, error) {
	out := &autoscaling.DescribeAutoScalingInstancesOutput{}
	for _, id := range in.InstanceIds {
		if id == "i-0000000000000000a" {
			out.AutoScalingInstances = append(out.AutoScalingInstances, astypes.AutoScalingInstanceDetails{
				InstanceId: aws.String(id), AutoScalingGroupName: aws.String("core-web-Group-1"), LifecycleState: aws.String("Terminating:Wait")})
		}
	}
	return out, nil
}

func (f *fakeAS) DescribeAutoScalingGroups(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	return &autoscaling.DescribeAutoScalingGroupsOutput{AutoScalingGroups: []astypes.AutoScalingGroup{{Tags: []astypes.TagDescription{
		{Key: aws.String("Name"), Value: aws.String("x")}, {Key: aws.String("clusterctl:cluster"), Value: aws.String("core")}}}}}, nil
}
func (f *fakeAS) RecordLifecycleActionHeartbeat(context.Context, *autoscaling.RecordLifecycleActionHeartbeatInput, ...func(*autoscaling.Options)) (*autoscaling.RecordLifecycleActionHeartbeatOutput, error) {
	return &autoscaling.RecordLifecycleActionHeartbeatOutput{}, nil
}
func (f *fakeAS) CompleteLifecycleAction(context.Context, *autoscaling.CompleteLifecycleActionInput, ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error) {
	return &autoscaling.CompleteLifecycleActionOutput{}, f.completeErr
}

// An action that has already ended is no error; another failure is.
func TestScaling(t *testing.T) {
	f := &fakeAS{}
	s := Scaling{API: f}
	ctx := context.Background()
	if c, err := s.ClusterOf(ctx, "g"); c != "core" || err != nil {
		t.Errorf("%q %v", c, err)
	}
	if ended, err := s.Complete(ctx, node.Action{}); ended || err != nil {
		t.Errorf("%v %v", ended, err)
	}
	f.completeErr = &smithy.GenericAPIError{Code: "ValidationError", Message: "No active Lifecycle Action found with instance ID i-1"}
	if ended, err := s.Complete(ctx, node.Action{}); !ended || err != nil {
		t.Errorf("ended action: %v %v", ended, err)
	}
	if g, st, err := s.LifecycleState(ctx, "i-0000000000000000a"); g != "core-web-Group-1" || st != "Terminating:Wait" || err != nil {
		t.Errorf("lifecycle state %q %q %v", g, st, err)
	}
	if g, st, err := s.LifecycleState(ctx, "i-0000000000000000b"); g != "" || st != "" || err != nil {
		t.Errorf("lifecycle state of an instance in no group %q %q %v", g, st, err)
	}
	f.completeErr = &smithy.GenericAPIError{Code: "AccessDenied", Message: "no"}
	if _, err := s.Complete(ctx, node.Action{}); err == nil {
		t.Error("a refusal taken for an ended action")
	}
}
