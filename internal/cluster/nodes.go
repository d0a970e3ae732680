package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/remote"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// ASGAPI is what the commands need from Auto Scaling: the groups for
// inventory, and for the node commands which group an instance is in and
// terminating one of its instances.
type ASGAPI interface {
	DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
	DescribeAutoScalingInstances(ctx context.Context, in *autoscaling.DescribeAutoScalingInstancesInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingInstancesOutput, error)
	TerminateInstanceInAutoScalingGroup(ctx context.Context, in *autoscaling.TerminateInstanceInAutoScalingGroupInput, opts ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error)
}

// SQSAPI puts requests on the core's queue.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// clusterNode is an instance of a cluster's Auto Scaling group (a manager
// or an agent), as the node commands find it.
type clusterNode struct {
	Cluster, Group, InstanceID, AutoScalingGroup string
	// PrivateIP is the instance's, as EC2 describes it: the address the
	// swarm must see its node at.
	PrivateIP string
	core      *stacks.Stack
}

// manager says whether the node is one of the swarm's managers.
func (n *clusterNode) manager() bool { return n.Group == names.GroupControl }

// what names the node for messages.
func (n *clusterNode) what() string {
	if n.manager() {
		return fmt.Sprintf("manager %s of cluster %s", n.InstanceID, n.Cluster)
	}
	return fmt.Sprintf("instance %s of group %s of cluster %s", n.InstanceID, n.Group, n.Cluster)
}

// Nodes drains, replaces and reaches a cluster's nodes.
type Nodes struct {
	find       *Finder
	leases     *Leases
	say        *Say
	status     *Status
	ASG        ASGAPI
	EC2        EC2API
	Region     string
	Run        Run
	RunCommand remote.SSMAPI
	S3         S3API
	SQS        SQSAPI
	Stacks     StackManager
}

// closeNode says which live node of a cluster (of cluster, when given)
// has an instance id close to the one typed, read with one listing:
// "; did you mean i-...?", or "".
func (s *Nodes) closeNode(ctx context.Context, instance, cluster string) string {
	filters := []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{names.TagCluster}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
	}
	if cluster != "" {
		filters = append(filters, ec2types.Filter{Name: aws.String("tag:" + names.TagCluster), Values: []string{cluster}})
	}
	out, err := s.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: filters})
	if err != nil {
		return ""
	}
	var ids []string
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			ids = append(ids, aws.ToString(i.InstanceId))
		}
	}
	if id := Closest(instance, ids); id != "" {
		return "; did you mean " + id + "?"
	}
	return ""
}

// findNode finds the cluster of an instance by its ownership tags and
// checks that it is one: the cluster (cluster, when given, must be it)
// and the group its tags name exist, and it is an instance of that
// group's Auto Scaling group. An instance that is not a node of a cluster
// is bad input (exit 2): nothing is sent or changed for it.
func (s *Nodes) findNode(ctx context.Context, instance, cluster string) (*clusterNode, error) {
	if err := CheckInstanceID(instance); err != nil {
		return nil, err
	}
	out, err := s.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{instance}})
	if strings.HasPrefix(errorCode(err), "InvalidInstanceID") {
		return nil, errs.Usage("instance %s not found in this account and region%s", instance, s.closeNode(ctx, instance, cluster))
	}
	if err != nil {
		return nil, fmt.Errorf("describing instance %s: %w", instance, err)
	}
	n := &clusterNode{InstanceID: instance}
	found := false
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if aws.ToString(i.InstanceId) != instance {
				continue
			}
			found = true
			n.PrivateIP = aws.ToString(i.PrivateIpAddress)
			if i.State != nil && (i.State.Name == "terminated" || i.State.Name == "shutting-down") {
				return nil, errs.Usage("instance %s is %s: it is no node any more", instance, i.State.Name)
			}
			for _, t := range i.Tags {
				switch aws.ToString(t.Key) {
				case names.TagCluster:
					n.Cluster = aws.ToString(t.Value)
				case names.TagGroup:
					n.Group = aws.ToString(t.Value)
				}
			}
		}
	}
	switch {
	case !found:
		return nil, errs.Usage("instance %s not found in this account and region%s", instance, s.closeNode(ctx, instance, cluster))
	case n.Cluster == "" || n.Group == "":
		return nil, errs.Usage("instance %s is not a node of a cluster: it has no %s and %s tags", instance, names.TagCluster, names.TagGroup)
	case cluster != "" && cluster != n.Cluster:
		return nil, errs.Usage("instance %s is a node of cluster %q, not of %q", instance, n.Cluster, cluster)
	}
	n.core, err = s.find.getCore(ctx, n.Cluster)
	if errors.Is(err, errNoCore) {
		return nil, errs.Usage("instance %s is tagged as a node of cluster %q, which does not exist (no core stack)", instance, n.Cluster)
	}
	if err != nil {
		return nil, err
	}
	if !n.manager() {
		if _, err := s.find.groupStack(ctx, n.Cluster, n.Group); errors.Is(err, ErrRefused) {
			return nil, errs.Usage("instance %s is tagged as a node of group %q of cluster %q, which has no such group", instance, n.Group, n.Cluster)
		} else if err != nil {
			return nil, err
		}
	}
	// Tags can be copied: the instance must be in the group's own Auto
	// Scaling group, which carries the same tags.
	asi, err := s.ASG.DescribeAutoScalingInstances(ctx, &autoscaling.DescribeAutoScalingInstancesInput{InstanceIds: []string{instance}})
	if err != nil {
		return nil, fmt.Errorf("finding the auto scaling group of %s: %w", instance, err)
	}
	for _, i := range asi.AutoScalingInstances {
		if aws.ToString(i.InstanceId) == instance {
			n.AutoScalingGroup = aws.ToString(i.AutoScalingGroupName)
		}
	}
	if n.AutoScalingGroup == "" {
		return nil, errs.Usage("instance %s is in no Auto Scaling group: it is not a node of cluster %q", instance, n.Cluster)
	}
	groups, err := s.ASG.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{n.AutoScalingGroup}})
	if err != nil {
		return nil, fmt.Errorf("describing the auto scaling group %s: %w", n.AutoScalingGroup, err)
	}
	tags := map[string]string{}
	for _, g := range groups.AutoScalingGroups {
		for _, t := range g.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	if tags[names.TagCluster] != n.Cluster || tags[names.TagGroup] != n.Group {
		return nil, errs.Usage("instance %s is not a node of group %q of cluster %q: its Auto Scaling group %s is not that group's", instance, n.Group, n.Cluster, n.AutoScalingGroup)
	}
	return n, nil
}
