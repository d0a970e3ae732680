package cluster

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// Observed is a cluster as deployed, read back into the model: what a
// desired spec is compared with.
type Observed struct {
	Spec   spec.Cluster // the core's and every group's settings as deployed
	Core   *stacks.Stack
	Groups map[string]*ObservedGroup // by group name
}

// ObservedGroup is one group as deployed.
type ObservedGroup struct {
	Spec     spec.Group
	Stack    *stacks.Stack
	Template []byte // as deployed
	// Nodes counts the instances of its Auto Scaling group (what a rolling
	// update would replace); -1 when the group has none.
	Nodes int
}

// Observer reads what is deployed as a spec.
type Observer struct {
	find   *Finder
	ASG    ASGAPI
	Stacks StackManager
}

// Observe reads cluster name back into the model: the core from its
// stack's parameters and template, each group from its stack's parameters,
// its template's recorded intent and its Auto Scaling group. A stack is a
// group of the cluster when its tags say so and its name is
// <cluster>-<group>.
func (s *Observer) Observe(ctx context.Context, name string) (*Observed, error) {
	if err := spec.CheckClusterName(name); err != nil {
		return nil, err
	}
	core, err := s.find.getCore(ctx, name)
	if err != nil {
		return nil, err
	}
	oc, err := s.observeCore(ctx, core)
	if err != nil {
		return nil, err
	}
	o := &Observed{Spec: spec.New(name), Core: core, Groups: map[string]*ObservedGroup{}}
	o.Spec.Core = oc.Spec
	groups, _, err := s.find.groupStacks(ctx, name) // conflicts are no groups
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		og, err := s.ObserveGroup(ctx, name, g.Group)
		if err != nil {
			return nil, err
		}
		o.Groups[g.Group] = og
		o.Spec.Groups = append(o.Spec.Groups, og.Spec)
	}
	return o, nil
}

// ObserveGroup reads one group of cluster back into the model.
func (s *Observer) ObserveGroup(ctx context.Context, cluster, group string) (*ObservedGroup, error) {
	st, err := s.find.groupStack(ctx, cluster, group)
	if err != nil {
		return nil, err
	}
	return s.observeGroup(ctx, group, st)
}

func (s *Observer) observeGroup(ctx context.Context, group string, st *stacks.Stack) (*ObservedGroup, error) {
	body, err := s.Stacks.Template(ctx, st.Name)
	if err != nil {
		return nil, err
	}
	g, err := render.ReadGroup(group, render.Deployed{Template: body, Parameters: st.Parameters, Tags: st.Tags})
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", st.Name, err)
	}
	nodes, err := s.groupNodes(ctx, st)
	if err != nil {
		return nil, err
	}
	return &ObservedGroup{Spec: g, Stack: st, Template: body, Nodes: nodes}, nil
}

// groupNodes counts the instances of a group's Auto Scaling group; -1 when
// it has none. The group is found by its ownership tags (the stack's
// output naming it goes stale on some implementations after an update).
func (s *Observer) groupNodes(ctx context.Context, st *stacks.Stack) (int, error) {
	in := &autoscaling.DescribeAutoScalingGroupsInput{Filters: []asgtypes.Filter{
		{Name: aws.String("tag:" + names.TagCluster), Values: []string{st.Tags[names.TagCluster]}},
		{Name: aws.String("tag:" + names.TagGroup), Values: []string{st.Tags[names.TagGroup]}},
	}}
	nodes := -1
	p := autoscaling.NewDescribeAutoScalingGroupsPaginator(s.ASG, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, fmt.Errorf("describing the auto scaling group of %s: %w", st.Name, err)
		}
		for _, g := range page.AutoScalingGroups {
			nodes = max(nodes, 0) + len(g.Instances)
		}
	}
	return nodes, nil
}

// Export reads cluster name as a cluster file says it: the deployed
// settings, those at their default left out, and the network its core
// joined (exportNetwork).
func (s *Observer) Export(ctx context.Context, name string) (spec.Cluster, error) {
	obs, err := s.Observe(ctx, name)
	if err != nil {
		return spec.Cluster{}, err
	}
	c := obs.Spec
	if err := s.exportNetwork(ctx, &c); err != nil {
		return spec.Cluster{}, err
	}
	c.Trim()
	return c, nil
}

func (s *Observer) observeCore(ctx context.Context, st *stacks.Stack) (*ObservedCore, error) {
	body, err := s.Stacks.Template(ctx, st.Name)
	if err != nil {
		return nil, err
	}
	c, err := render.ReadCore(render.Deployed{Template: body, Parameters: st.Parameters, Tags: st.Tags})
	if err != nil {
		return nil, fmt.Errorf("core %s: %w", st.Name, err)
	}
	managers, err := s.groupNodes(ctx, st)
	if err != nil {
		return nil, err
	}
	contract := st.Outputs[names.OutputContractVersion]
	if contract == "" {
		contract = "1" // the first cores said nothing when their outputs were missing
	}
	return &ObservedCore{Spec: c, Stack: st, Template: body, Managers: managers, Contract: contract}, nil
}

// ObserveCore reads the core of cluster back into the model.
func (s *Observer) ObserveCore(ctx context.Context, cluster string) (*ObservedCore, error) {
	if err := spec.CheckClusterName(cluster); err != nil {
		return nil, err
	}
	st, err := s.find.getCore(ctx, cluster)
	if err != nil {
		return nil, err
	}
	return s.observeCore(ctx, st)
}
