package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// calls records the AWS calls list-nodes makes, in order.
type calls struct {
	mu  sync.Mutex
	log []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, s)
}

// listEC2 lists instances, each with the given tags.
type listEC2 struct {
	EC2API
	calls     *calls
	instances map[string]map[string]string // instance id -> tags
}

func (e listEC2) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	e.calls.add("DescribeInstances")
	var insts []ec2types.Instance
	for id, tags := range e.instances {
		inst := ec2types.Instance{InstanceId: aws.String(id), State: &ec2types.InstanceState{Name: "running"}, LaunchTime: aws.Time(time.Now())}
		for k, v := range tags {
			inst.Tags = append(inst.Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		insts = append(insts, inst)
	}
	return &ec2.DescribeInstancesOutput{Reservations: []ec2types.Reservation{{Instances: insts}}}, nil
}

// bucketsS3 serves a status snapshot per bucket ("" or absent: none).
type bucketsS3 struct {
	S3API
	calls   *calls
	buckets map[string]string
}

func (b bucketsS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	b.calls.add("GetObject " + aws.ToString(in.Bucket))
	body, ok := b.buckets[aws.ToString(in.Bucket)]
	switch {
	case !ok:
		return nil, fmt.Errorf("NoSuchBucket: %s", aws.ToString(in.Bucket))
	case body == "":
		return nil, &s3types.NoSuchKey{}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(strings.NewReader(body))}, nil
}

// GetBucketTagging says every bucket carries the core's tags.
func (b bucketsS3) GetBucketTagging(_ context.Context, in *s3.GetBucketTaggingInput, _ ...func(*s3.Options)) (*s3.GetBucketTaggingOutput, error) {
	b.calls.add("GetBucketTagging " + aws.ToString(in.Bucket))
	return &s3.GetBucketTaggingOutput{TagSet: []s3types.Tag{{Key: aws.String(names.TagCluster), Value: aws.String("core")}, {Key: aws.String(names.TagRole), Value: aws.String(names.RoleCore)}}}, nil
}

// coreStacks knows one core stack and its bucket.
type coreStacks struct {
	StackManager
	calls  *calls
	bucket string
}

func (c coreStacks) Get(_ context.Context, name string) (*stacks.Stack, error) {
	c.calls.add("DescribeStacks")
	if name != "core" {
		return nil, stacks.ErrNotFound
	}
	return &stacks.Stack{Name: "core", Status: "CREATE_COMPLETE", Tags: map[string]string{names.TagCluster: "core", names.TagRole: names.RoleCore},
		Outputs: map[string]string{names.OutputBucketName: c.bucket}}, nil
}

func (c coreStacks) Resource(_ context.Context, stack, logicalID string) (*stacks.Resource, error) {
	c.calls.add("ListStackResources")
	return &stacks.Resource{LogicalID: logicalID, PhysicalID: c.bucket}, nil
}

// list-nodes finds the bucket from its instances' tag, without
// CloudFormation (two calls), and trusts what it reads there only when the
// snapshot names the cluster; otherwise it reads the core's own bucket as
// before, never the same object twice.
func TestListNodesFindsTheBucketByTag(t *testing.T) {
	snapshot := func(cluster string) string {
		return `{"version":1,"cluster":"` + cluster + `","time":"` + time.Now().UTC().Format(time.RFC3339) + `","nodes":[{"nodeId":"n1","instanceId":"i-1","role":"manager","state":"ready","availability":"drain","managerStatus":"leader"}]}`
	}
	node := func(group, bucket string) map[string]string {
		tags := map[string]string{names.TagCluster: "core", names.TagGroup: group}
		if bucket != "" {
			tags[names.TagNodeBucket] = bucket
		}
		return tags
	}
	for _, tt := range []struct {
		name      string
		instances map[string]map[string]string
		buckets   map[string]string
		calls     []string // in order; the last GetObject's bucket is where the snapshot was read
		trusted   bool     // a snapshot was read
	}{
		{"tagged", map[string]map[string]string{"i-1": node("control", "core-bucket"), "i-2": node("web", "core-bucket")},
			map[string]string{"core-bucket": snapshot("core")},
			[]string{"DescribeInstances", "GetObject core-bucket"}, true},
		{"some launched before the tag", map[string]map[string]string{"i-1": node("control", ""), "i-2": node("web", "core-bucket")},
			map[string]string{"core-bucket": snapshot("core")},
			[]string{"DescribeInstances", "GetObject core-bucket"}, true},
		{"launched before the tag", map[string]map[string]string{"i-1": node("control", ""), "i-2": node("web", "")},
			map[string]string{"core-bucket": snapshot("core")},
			[]string{"DescribeInstances", "DescribeStacks", "ListStackResources", "GetBucketTagging core-bucket", "GetObject core-bucket"}, true},
		{"a tag naming another cluster's bucket", map[string]map[string]string{"i-1": node("control", "other-bucket")},
			map[string]string{"core-bucket": snapshot("core"), "other-bucket": snapshot("other")},
			[]string{"DescribeInstances", "GetObject other-bucket", "DescribeStacks", "ListStackResources", "GetBucketTagging core-bucket", "GetObject core-bucket"}, true},
		{"a tag naming a bucket that is not there", map[string]map[string]string{"i-1": node("control", "gone-bucket")},
			map[string]string{"core-bucket": snapshot("core")},
			[]string{"DescribeInstances", "GetObject gone-bucket", "DescribeStacks", "ListStackResources", "GetBucketTagging core-bucket", "GetObject core-bucket"}, true},
		{"tags that disagree", map[string]map[string]string{"i-1": node("control", "core-bucket"), "i-2": node("web", "other-bucket")},
			map[string]string{"core-bucket": snapshot("core"), "other-bucket": snapshot("core")},
			[]string{"DescribeInstances", "DescribeStacks", "ListStackResources", "GetBucketTagging core-bucket", "GetObject core-bucket"}, true},
		{"no snapshot yet in the core's bucket", map[string]map[string]string{"i-1": node("control", "core-bucket")},
			map[string]string{"core-bucket": ""},
			[]string{"DescribeInstances", "GetObject core-bucket", "DescribeStacks", "ListStackResources", "GetBucketTagging core-bucket"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &calls{}
			s := &Clients{EC2: listEC2{calls: c, instances: tt.instances}, S3: bucketsS3{calls: c, buckets: tt.buckets}, Stacks: coreStacks{calls: c, bucket: "core-bucket"}}
			nodes, swarms, err := NewInspector(s).ListNodes(t.Context(), "core", "")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.log, tt.calls) {
				t.Errorf("calls %q, want %q", c.log, tt.calls)
			}
			if len(swarms) != 1 || (swarms[0].Snapshot != nil) != tt.trusted || swarms[0].Where != "s3://core-bucket/"+names.StatusKey {
				t.Fatalf("swarm %+v, want the core bucket's (snapshot read: %v)", swarms, tt.trusted)
			}
			if tt.trusted {
				for _, n := range nodes {
					if n.InstanceID == "i-1" && (n.Swarm == nil || n.Swarm.ManagerStatus != "leader") {
						t.Errorf("node i-1: swarm %+v, want the leader", n.Swarm)
					}
				}
			}
		})
	}
}
