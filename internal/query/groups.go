package query

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/clusterctl/clusterctl/internal/stacks"
)

// JoinKeys are the join-contract values a group receives as parameters of
// the same name; a group is joined when each equals the core's output.
// SubnetIds is left out: a group may run in subnets of its own.
var JoinKeys = []string{"ClusterName", "BucketName", "ControlPrivateIp", "ControlSecurityGroupId", "AgentSecurityGroupId", "AgentInstanceProfile", "VpcId", "ContractVersion"}

// CFNAPI is what list-groups needs from CloudFormation.
type CFNAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, opts ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// ASGAPI is what list-groups needs from Auto Scaling.
type ASGAPI interface {
	DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
}

// Group is one agent group. The JSON keys are a public interface.
type Group struct {
	Cluster      string            `json:"cluster"`
	Group        string            `json:"group"`
	Stack        string            `json:"stack"`
	Status       string            `json:"status"`
	InstanceType string            `json:"instanceType"`
	Desired      int               `json:"desired"`
	Min          int               `json:"min"`
	Max          int               `json:"max"`
	Running      int               `json:"running"`
	Labels       map[string]string `json:"labels"`
	Updated      time.Time         `json:"updated"`
	Joined       bool              `json:"joined"`
}

// ListGroups lists the agent groups of one cluster, or of every cluster when
// cluster is "". It makes a constant number of paginated calls: one
// DescribeStacks (all stacks, filtered by ownership tags) and one
// DescribeAutoScalingGroups filtered by the cluster tag.
func ListGroups(ctx context.Context, cfn CFNAPI, asg ASGAPI, cluster string) ([]Group, error) {
	all, err := describeAllStacks(ctx, cfn)
	if err != nil {
		return nil, err
	}
	cores := map[string]map[string]string{} // cluster → core outputs
	var groups []Group
	var groupStacks []stacks.Stack
	for _, s := range all {
		tags := s.Tags
		c := tags[TagCluster]
		if c == "" || (cluster != "" && c != cluster) || s.Status == string(cfntypes.StackStatusDeleteComplete) {
			continue
		}
		switch tags[TagRole] {
		case "core":
			cores[c] = s.Outputs
		case "agents":
			groupStacks = append(groupStacks, s)
		}
	}
	if len(groupStacks) == 0 {
		return []Group{}, nil
	}
	asgs, err := describeGroups(ctx, asg, cluster)
	if err != nil {
		return nil, err
	}
	for _, s := range groupStacks {
		tags, params := s.Tags, s.Parameters
		g := Group{
			Cluster:      tags[TagCluster],
			Group:        tags[TagGroup],
			Stack:        s.Name,
			Status:       s.Status,
			InstanceType: params["InstanceType"],
			Labels:       ParseLabels(tags[TagLabels]),
			Updated:      s.Updated.UTC(),
		}
		if a, ok := asgs[g.Cluster+"/"+g.Group]; ok {
			// The Auto Scaling group carries the labels it gives its nodes;
			// it is replaced or updated with them, so it is the current set.
			g.Labels = asgLabels(a.Tags)
			g.Desired = int(aws.ToInt32(a.DesiredCapacity))
			g.Min = int(aws.ToInt32(a.MinSize))
			g.Max = int(aws.ToInt32(a.MaxSize))
			for _, i := range a.Instances {
				if i.LifecycleState == asgtypes.LifecycleStateInService {
					g.Running++
				}
			}
		} else {
			// No Auto Scaling group (failed or half-deleted stack): show what
			// the stack asked for.
			g.Desired, _ = strconv.Atoi(params["DesiredCapacity"])
			g.Min, _ = strconv.Atoi(params["MinSize"])
			g.Max, _ = strconv.Atoi(params["MaxSize"])
		}
		g.Joined = Joined(params, cores[g.Cluster])
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].Cluster != groups[j].Cluster {
			return groups[i].Cluster < groups[j].Cluster
		}
		return groups[i].Group < groups[j].Group
	})
	return groups, nil
}

// Joined tells whether a group's join parameters equal the core's current
// outputs. A group whose core is gone is not joined.
func Joined(groupParams, coreOutputs map[string]string) bool {
	if coreOutputs == nil {
		return false
	}
	for _, k := range JoinKeys {
		v, ok := groupParams[k]
		if !ok {
			continue // this template version does not take that value
		}
		if v != coreOutputs[k] {
			return false
		}
	}
	return true
}

func describeAllStacks(ctx context.Context, cfn CFNAPI) ([]stacks.Stack, error) {
	var out []stacks.Stack
	p := cloudformation.NewDescribeStacksPaginator(cfn, &cloudformation.DescribeStacksInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing stacks: %w", err)
		}
		for _, st := range page.Stacks {
			out = append(out, stacks.FromSDK(st))
		}
	}
	return out, nil
}

func describeGroups(ctx context.Context, asg ASGAPI, cluster string) (map[string]asgtypes.AutoScalingGroup, error) {
	in := &autoscaling.DescribeAutoScalingGroupsInput{}
	if cluster == "" {
		in.Filters = []asgtypes.Filter{{Name: aws.String("tag-key"), Values: []string{TagCluster}}}
	} else {
		in.Filters = []asgtypes.Filter{{Name: aws.String("tag:" + TagCluster), Values: []string{cluster}}}
	}
	out := map[string]asgtypes.AutoScalingGroup{}
	p := autoscaling.NewDescribeAutoScalingGroupsPaginator(asg, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing auto scaling groups: %w", err)
		}
		for _, g := range page.AutoScalingGroups {
			var c, name string
			for _, t := range g.Tags {
				switch aws.ToString(t.Key) {
				case TagCluster:
					c = aws.ToString(t.Value)
				case TagGroup:
					name = aws.ToString(t.Value)
				}
			}
			out[c+"/"+name] = g
		}
	}
	return out, nil
}

func asgLabels(tags []asgtypes.TagDescription) map[string]string {
	out := map[string]string{}
	for _, t := range tags {
		if k := aws.ToString(t.Key); strings.HasPrefix(k, TagLabelPrefix) {
			out[strings.TrimPrefix(k, TagLabelPrefix)] = aws.ToString(t.Value)
		}
	}
	return out
}

// GroupsTable is the table form of list-groups.
func GroupsTable(groups []Group, wide bool) Table {
	t := Table{Header: []string{"CLUSTER", "GROUP", "STATUS", "TYPE", "DESIRED", "MIN", "MAX", "RUNNING", "JOINED", "UPDATED"}}
	if wide {
		t.Header = append(t.Header, "STACK", "LABELS")
	}
	for _, g := range groups {
		joined := "yes"
		if !g.Joined {
			joined = "no"
		}
		row := []string{g.Cluster, g.Group, g.Status, dash(g.InstanceType), strconv.Itoa(g.Desired), strconv.Itoa(g.Min), strconv.Itoa(g.Max), strconv.Itoa(g.Running), joined, g.Updated.Format(time.RFC3339)}
		if wide {
			row = append(row, g.Stack, dash(FormatLabels(g.Labels)))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Names are the clusters of an account (those with a core stack) and the
// groups of each, sorted.
type Names struct {
	Clusters []string
	Groups   map[string][]string // cluster → group names
}

// ListNames reads cluster and group names from one paginated
// DescribeStacks, by the ownership tags: what shell completion offers.
func ListNames(ctx context.Context, cfn CFNAPI) (Names, error) {
	all, err := describeAllStacks(ctx, cfn)
	if err != nil {
		return Names{}, err
	}
	n := Names{Groups: map[string][]string{}}
	for _, s := range all {
		c := s.Tags[TagCluster]
		if c == "" || s.Status == string(cfntypes.StackStatusDeleteComplete) {
			continue
		}
		switch s.Tags[TagRole] {
		case "core":
			n.Clusters = append(n.Clusters, c)
		case "agents":
			if g := s.Tags[TagGroup]; g != "" {
				n.Groups[c] = append(n.Groups[c], g)
			}
		}
	}
	sort.Strings(n.Clusters)
	for _, gs := range n.Groups {
		sort.Strings(gs)
	}
	return n, nil
}
