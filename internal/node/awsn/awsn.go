// Package awsn connects the node agent's logic (internal/node) to AWS
// through aws-sdk-go-v2: the cluster bucket (S3), the core's queue (SQS),
// Auto Scaling's lifecycle actions, EC2 and the instance metadata.
package awsn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/node"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// maxObject bounds what is read of an object (a backup of the swarm state
// is the largest).
const maxObject = 256 << 20

// S3API is what the bucket needs of S3.
type S3API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
}

// Bucket is the cluster bucket; it satisfies node.Bucket.
type Bucket struct {
	API  S3API
	Name string
}

// Get reads an object.
func (b Bucket) Get(ctx context.Context, key string) ([]byte, node.Object, error) {
	out, err := b.API.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)},
		func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true })
	if wire.IsMissing(err) {
		return nil, node.Object{}, node.ErrMissing
	}
	if err != nil {
		return nil, node.Object{}, fmt.Errorf("reading s3://%s/%s: %w", b.Name, key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, maxObject+1))
	if err != nil {
		return nil, node.Object{}, fmt.Errorf("reading s3://%s/%s: %w", b.Name, key, err)
	}
	if len(body) > maxObject {
		return nil, node.Object{}, fmt.Errorf("s3://%s/%s is larger than %d MiB", b.Name, key, maxObject>>20)
	}
	return body, node.Object{ETag: aws.ToString(out.ETag), Modified: aws.ToTime(out.LastModified), Metadata: out.Metadata}, nil
}

// Put writes an object, encrypted, with user metadata meta.
func (b Bucket) Put(ctx context.Context, key string, body []byte, contentType string, meta map[string]string) error {
	_, err := b.API.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.Name), Key: aws.String(key), Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
		ContentType: aws.String(contentType), ServerSideEncryption: s3types.ServerSideEncryptionAes256, Metadata: meta,
	})
	if err != nil {
		return fmt.Errorf("writing s3://%s/%s: %w", b.Name, key, err)
	}
	return nil
}

// Claim writes conditionally (wire.PutConditional).
func (b Bucket) Claim(ctx context.Context, key string, body []byte, ifMatch string) error {
	_, _, err := wire.PutConditional(ctx, b.API, b.Name, key, body, ifMatch)
	if wire.IsPrecondition(err) || ifMatch != "" && wire.IsMissing(err) {
		return node.ErrLost
	}
	if err != nil {
		return fmt.Errorf("writing s3://%s/%s: %w", b.Name, key, err)
	}
	return nil
}

// Head reads an object's metadata.
func (b Bucket) Head(ctx context.Context, key string) (node.Object, error) {
	out, err := b.API.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
	if wire.IsMissing(err) {
		return node.Object{}, node.ErrMissing
	}
	if err != nil {
		return node.Object{}, fmt.Errorf("reading s3://%s/%s: %w", b.Name, key, err)
	}
	return node.Object{ETag: aws.ToString(out.ETag), Modified: aws.ToTime(out.LastModified), Metadata: out.Metadata}, nil
}

// List lists the objects under prefix.
func (b Bucket) List(ctx context.Context, prefix string) ([]node.Listed, error) {
	var out []node.Listed
	p := s3.NewListObjectsV2Paginator(b.API, &s3.ListObjectsV2Input{Bucket: aws.String(b.Name), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing s3://%s/%s: %w", b.Name, prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, node.Listed{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)})
		}
	}
	return out, nil
}

// Delete deletes an object; none is no error.
func (b Bucket) Delete(ctx context.Context, key string) error {
	_, err := b.API.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.Name), Key: aws.String(key)})
	if err != nil && !wire.IsMissing(err) {
		return fmt.Errorf("deleting s3://%s/%s: %w", b.Name, key, err)
	}
	return nil
}

// SQSAPI is what the queue needs of SQS.
type SQSAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// Queue is the core's queue; it satisfies node.Queue.
type Queue struct {
	API SQSAPI
	URL string
}

// Receive long-polls the queue.
func (q Queue) Receive(ctx context.Context, wait, visibility time.Duration) ([]node.Message, error) {
	out, err := q.API.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: int32(wait / time.Second),
		VisibilityTimeout:           int32(visibility / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp, sqstypes.MessageSystemAttributeNameSenderId},
	})
	if err != nil {
		return nil, err
	}
	var msgs []node.Message
	for _, m := range out.Messages {
		ms, _ := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64)
		msgs = append(msgs, node.Message{ID: aws.ToString(m.MessageId), Receipt: aws.ToString(m.ReceiptHandle),
			Body: aws.ToString(m.Body), Sent: time.UnixMilli(ms).UTC(), Sender: m.Attributes[string(sqstypes.MessageSystemAttributeNameSenderId)]})
	}
	return msgs, nil
}

// Hide hides a message for d (0: hands it back at once).
func (q Queue) Hide(ctx context.Context, receipt string, d time.Duration) error {
	_, err := q.API.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(q.URL),
		ReceiptHandle: aws.String(receipt), VisibilityTimeout: int32(d / time.Second)})
	return err
}

// Delete deletes a handled message.
func (q Queue) Delete(ctx context.Context, receipt string) error {
	_, err := q.API.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: aws.String(receipt)})
	return err
}

// AutoScalingAPI is what lifecycle actions need of Auto Scaling.
type AutoScalingAPI interface {
	DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
	RecordLifecycleActionHeartbeat(ctx context.Context, in *autoscaling.RecordLifecycleActionHeartbeatInput, opts ...func(*autoscaling.Options)) (*autoscaling.RecordLifecycleActionHeartbeatOutput, error)
	CompleteLifecycleAction(ctx context.Context, in *autoscaling.CompleteLifecycleActionInput, opts ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error)
	DescribeAutoScalingInstances(ctx context.Context, in *autoscaling.DescribeAutoScalingInstancesInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingInstancesOutput, error)
}

// Scaling satisfies node.Scaling.
type Scaling struct{ API AutoScalingAPI }

// ClusterOf is the group's clusterctl:cluster tag.
func (s Scaling) ClusterOf(ctx context.Context, group string) (string, error) {
	out, err := s.API.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{group}})
	if err != nil {
		return "", err
	}
	for _, g := range out.AutoScalingGroups {
		if c, ok := groupTags(g)[names.TagCluster]; ok {
			return c, nil
		}
	}
	return "", nil
}

// Heartbeat records a heartbeat of the action.
func (s Scaling) Heartbeat(ctx context.Context, a node.Action) error {
	_, err := s.API.RecordLifecycleActionHeartbeat(ctx, &autoscaling.RecordLifecycleActionHeartbeatInput{
		AutoScalingGroupName: aws.String(a.Group), LifecycleHookName: aws.String(a.Hook),
		LifecycleActionToken: aws.String(a.Token), InstanceId: aws.String(a.Instance)})
	return err
}

// Complete completes the action with CONTINUE.
func (s Scaling) Complete(ctx context.Context, a node.Action) (bool, error) {
	_, err := s.API.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{
		AutoScalingGroupName: aws.String(a.Group), LifecycleHookName: aws.String(a.Hook),
		LifecycleActionToken: aws.String(a.Token), InstanceId: aws.String(a.Instance), LifecycleActionResult: aws.String("CONTINUE")})
	var ae smithy.APIError
	if errors.As(err, &ae) && strings.Contains(ae.ErrorMessage(), "No active Lifecycle Action") {
		return true, nil
	}
	return false, err
}

// LifecycleState is the group and lifecycle state Auto Scaling gives
// instance; both "" when no group has it.
func (s Scaling) LifecycleState(ctx context.Context, instance string) (string, string, error) {
	out, err := s.API.DescribeAutoScalingInstances(ctx, &autoscaling.DescribeAutoScalingInstancesInput{InstanceIds: []string{instance}})
	if err != nil {
		return "", "", err
	}
	for _, i := range out.AutoScalingInstances {
		if aws.ToString(i.InstanceId) == instance {
			return aws.ToString(i.AutoScalingGroupName), aws.ToString(i.LifecycleState), nil
		}
	}
	return "", "", nil
}

// EC2API is what the agent needs of EC2.
type EC2API interface {
	DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	CreateTags(ctx context.Context, in *ec2.CreateTagsInput, opts ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
}

// Instances satisfies node.Instances.
type Instances struct {
	API EC2API
	// VPC is the cluster's: an instance proves a node's claim only there
	// (another VPC may have an instance at the same private address).
	// "" looks in every VPC.
	VPC string
}

// States are the states of the instances EC2 knows of ids (a filter, so
// that an id it does not know is no error).
func (i Instances) States(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	p := ec2.NewDescribeInstancesPaginator(i.API, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: ids}}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			for _, in := range r.Instances {
				if in.State != nil {
					out[aws.ToString(in.InstanceId)] = string(in.State.Name)
				}
			}
		}
	}
	return out, nil
}

// PrivateIPs are the private IPv4 addresses of the instances EC2 knows
// of ids and gives one (a terminated instance has none).
func (i Instances) PrivateIPs(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	p := ec2.NewDescribeInstancesPaginator(i.API, &ec2.DescribeInstancesInput{
		Filters: inVPC(i.VPC, ec2types.Filter{Name: aws.String("instance-id"), Values: ids})})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			for _, in := range r.Instances {
				if i.VPC != "" && aws.ToString(in.VpcId) != i.VPC {
					continue // an endpoint that ignores the filter
				}
				if ip := aws.ToString(in.PrivateIpAddress); ip != "" {
					out[aws.ToString(in.InstanceId)] = ip
				}
			}
		}
	}
	return out, nil
}

// inVPC is f, and a vpc-id filter when vpc is not "".
func inVPC(vpc string, f ec2types.Filter) []ec2types.Filter {
	fs := []ec2types.Filter{f}
	if vpc != "" {
		fs = append(fs, ec2types.Filter{Name: aws.String("vpc-id"), Values: []string{vpc}})
	}
	return fs
}

// VPCOf is the VPC EC2 says instance is in: the cluster's, for a manager
// (the core launches them in its VPC's subnets).
func VPCOf(ctx context.Context, api EC2API, instance string) (string, error) {
	out, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{instance}})
	if err != nil {
		return "", fmt.Errorf("asking EC2 for this instance's VPC: %w", err)
	}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			if aws.ToString(in.InstanceId) == instance && aws.ToString(in.VpcId) != "" {
				return aws.ToString(in.VpcId), nil
			}
		}
	}
	return "", fmt.Errorf("EC2 gives instance %s no VPC", instance)
}

// Tag tags an instance.
func (i Instances) Tag(ctx context.Context, id string, tags map[string]string) error {
	var t []ec2types.Tag
	for k, v := range tags {
		t = append(t, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	_, err := i.API.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: t})
	return err
}
