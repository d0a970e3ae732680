package query

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
	"github.com/clusterctl/clusterctl/internal/wire"
)

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
	Cluster string `json:"cluster"`
	Group   string `json:"group"`
	Stack   string `json:"stack"`
	Status  string `json:"status"`
	// InstanceType is the group's types, comma-separated (one for a group
	// that is not mixed); InstanceTypes the same as a list.
	InstanceType  string   `json:"instanceType"`
	InstanceTypes []string `json:"instanceTypes"`
	// The purchase mix, as a cluster file says it: without spot every node
	// is on-demand (base 0, 100 percent, no allocation strategy).
	Spot            bool   `json:"spot"`
	OnDemandBase    int    `json:"onDemandBase"`
	OnDemandPercent int    `json:"onDemandPercent"`
	SpotAllocation  string `json:"spotAllocation"`
	Desired         int    `json:"desired"`
	Min             int    `json:"min"`
	Max             int    `json:"max"`
	Running         int    `json:"running"`
	// Ready is how many of the group's nodes are Ready (and not drained)
	// in the swarm, by a fresh status snapshot; nil when there is none.
	Ready   *int              `json:"ready"`
	Labels  map[string]string `json:"labels"`
	Updated time.Time         `json:"updated"`
	Joined  bool              `json:"joined"`

	// LoadBalancer is the group's load balancer (its endpoint, and its
	// ports with their healthy targets once WithLoadBalancers read them);
	// nil when the group has none.
	LoadBalancer *LoadBalancer `json:"loadBalancer"`

	// Autoscale is the group's autoscaling, from its Auto Scaling group's
	// tags and the swarm's snapshot; nil when the group is not autoscaled.
	Autoscale *GroupAutoscale `json:"autoscale"`

	// Scaling is the group's Auto Scaling group, found by its tags; nil
	// when it has none (gone, or never created).
	Scaling *asgtypes.AutoScalingGroup `json:"-"`
	// Params are the stack's parameters, as deployed.
	Params map[string]string `json:"-"`
}

// GroupAutoscale is a group's autoscaling. The JSON keys are a public
// interface.
type GroupAutoscale struct {
	ScaleDownAfter string `json:"scaleDownAfter"`
	// LastChange is the autoscaler's last change of the group's desired
	// capacity, as the status snapshot keeps it; nil when it made none
	// (or the snapshot says nothing).
	LastChange *wire.ScalingDecision `json:"lastChange"`
}

// AutoscaleText is the AUTOSCALE column: "off", or "1–4" with the last
// change ("1–4, 1→2 at 10:04:05").
func (g Group) AutoscaleText() string {
	a := g.Autoscale
	if a == nil {
		return "off"
	}
	s := fmt.Sprintf("%d–%d", g.Min, g.Max)
	if c := a.LastChange; c != nil {
		s += fmt.Sprintf(", %d→%d at %s", c.From, c.To, c.Time.UTC().Format(time.TimeOnly))
	}
	return s
}

// WithAutoscale sets each autoscaled group's last change from its
// cluster's snapshot.
func WithAutoscale(groups []Group, swarms map[string]Swarm) {
	for i := range groups {
		g := &groups[i]
		snap := swarms[g.Cluster].Snapshot
		if g.Autoscale == nil || snap == nil {
			continue
		}
		for j := len(snap.Autoscale) - 1; j >= 0; j-- {
			if d := snap.Autoscale[j]; d.Group == g.Group {
				g.Autoscale.LastChange = &d
				break
			}
		}
	}
}

// Conflict is a stack that carries clusterctl's ownership tags under a
// name those tags do not give it: a group is the stack <cluster>-<group>
// whose tags say so, a core the stack named after its cluster. clusterctl
// lists a conflict and never touches it. The JSON keys are a public
// interface.
type Conflict struct {
	Stack   string `json:"stack"`
	Status  string `json:"status"`
	Cluster string `json:"cluster"`
	Role    string `json:"role"`
	Group   string `json:"group,omitempty"`
	Reason  string `json:"reason"`
}

func (c Conflict) String() string {
	return fmt.Sprintf("stack %s (%s) is not clusterctl's: %s; it is never touched", c.Stack, c.Status, c.Reason)
}

// Ownership sorts a stack by its ownership tags checked against its name:
// a core or a group of its cluster, a conflict, or neither (no cluster tag).
func Ownership(s stacks.Stack) (role string, conflict *Conflict) {
	c, role, g := s.Tags[names.TagCluster], s.Tags[names.TagRole], s.Tags[names.TagGroup]
	if c == "" {
		return "", nil
	}
	bad := func(format string, args ...any) (string, *Conflict) {
		return "", &Conflict{Stack: s.Name, Status: s.Status, Cluster: c, Role: role, Group: g, Reason: fmt.Sprintf(format, args...)}
	}
	switch role {
	case names.RoleCore:
		if s.Name != c {
			return bad("it is tagged as the core of cluster %s, whose core stack is named %s", c, c)
		}
	case names.RoleAgents:
		if g == "" {
			return bad("it is tagged as a group of cluster %s without a group name", c)
		}
		if want := names.GroupStack(c, g); s.Name != want {
			return bad("it is tagged as group %s of cluster %s, whose stack is named %s", g, c, want)
		}
	default:
		return bad("it is tagged with cluster %s and an unknown role %q", c, role)
	}
	return role, nil
}

// ListGroups lists the agent groups of one cluster, or of every cluster when
// cluster is "", and the stacks that carry their tags under another name
// (conflicts, see Ownership). It makes a constant number of paginated
// calls: one DescribeStacks (all stacks, filtered by ownership tags) and
// one DescribeAutoScalingGroups filtered by the cluster tag.
func ListGroups(ctx context.Context, cfn CFNAPI, asg ASGAPI, cluster string) ([]Group, []Conflict, error) {
	inv, err := ListInventory(ctx, cfn, asg, cluster)
	return inv.Groups, inv.Conflicts, err
}

// Inventory is what list-groups reads: the groups, the conflicts, and the
// core stacks of the clusters listed.
type Inventory struct {
	Groups    []Group
	Conflicts []Conflict
	Cores     map[string]*stacks.Stack // cluster → its core stack
	// Swarms are the swarms of the clusters listed, as far as their status
	// snapshots tell (read by the caller).
	Swarms []Swarm
	// Unread is what could not be read of some groups (read by the
	// caller), shown as "?".
	Unread []Unread
}

// ListInventory is ListGroups with the core stacks it reads on the way.
func ListInventory(ctx context.Context, cfn CFNAPI, asg ASGAPI, cluster string) (Inventory, error) {
	all, err := describeAllStacks(ctx, cfn)
	if err != nil {
		return Inventory{}, err
	}
	inv := Inventory{Groups: []Group{}, Conflicts: []Conflict{}, Cores: map[string]*stacks.Stack{}}
	var groupStacks []stacks.Stack
	for _, s := range all {
		c := s.Tags[names.TagCluster]
		if c == "" || (cluster != "" && c != cluster) || s.Status == string(cfntypes.StackStatusDeleteComplete) {
			continue
		}
		role, conflict := Ownership(s)
		switch {
		case conflict != nil:
			inv.Conflicts = append(inv.Conflicts, *conflict)
		case role == names.RoleCore:
			inv.Cores[c] = &s
		case role == names.RoleAgents:
			groupStacks = append(groupStacks, s)
		}
	}
	if len(groupStacks) == 0 {
		return inv, nil
	}
	asgs, err := describeGroups(ctx, asg, cluster)
	if err != nil {
		return Inventory{}, err
	}
	groups := inv.Groups
	for _, s := range groupStacks {
		tags, params := s.Tags, s.Parameters
		g := Group{
			Cluster: tags[names.TagCluster],
			Group:   tags[names.TagGroup],
			Stack:   s.Name,
			Status:  s.Status,
			Labels:  ParseLabels(tags[names.TagLabels]),
			Updated: s.Updated.UTC(),
			Params:  params,
		}
		g.LoadBalancer = loadBalancerOf(s.Outputs, params)
		g.setPurchase(params)
		if a, ok := asgs[g.Cluster+"/"+g.Group]; ok {
			g.Scaling = &a
			// The Auto Scaling group carries the labels it gives its nodes;
			// it is replaced or updated with them, so it is the current set.
			g.Labels = asgLabels(a.Tags)
			g.Autoscale = asgAutoscale(a.Tags)
			g.setPolicy(a.MixedInstancesPolicy)
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
			g.Desired, _ = strconv.Atoi(params[names.ParamDesiredCapacity])
			g.Min, _ = strconv.Atoi(params[names.ParamMinSize])
			g.Max, _ = strconv.Atoi(params[names.ParamMaxSize])
		}
		g.Joined = Joined(params, coreOutputs(inv.Cores[g.Cluster]))
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].Cluster != groups[j].Cluster {
			return groups[i].Cluster < groups[j].Cluster
		}
		return groups[i].Group < groups[j].Group
	})
	inv.Groups = groups
	return inv, nil
}

func coreOutputs(core *stacks.Stack) map[string]string {
	if core == nil {
		return nil
	}
	return core.Outputs
}

// setPurchase reads the types and the purchase mix from the group stack's
// parameters: a list parameter in either form CloudFormation
// implementations report, and the spot parameters, which only the
// template of a spot group declares. What the Auto Scaling group says
// (setPolicy) wins.
func (g *Group) setPurchase(params map[string]string) {
	g.InstanceTypes = spec.SplitList(params[names.ParamInstanceType])
	if g.InstanceTypes == nil {
		g.InstanceTypes = []string{}
	}
	g.InstanceType = strings.Join(g.InstanceTypes, ",")
	g.OnDemandPercent = 100
	allocation, spot := params[names.ParamSpotAllocationStrategy]
	if !spot {
		return
	}
	g.Spot, g.SpotAllocation = true, allocation
	g.OnDemandBase, _ = strconv.Atoi(params[names.ParamOnDemandBaseCapacity])
	g.OnDemandPercent, _ = strconv.Atoi(params[names.ParamOnDemandPercentage])
}

// setPolicy reads the types and the purchase mix from the Auto Scaling
// group's mixed instances policy, when it has one: what the group buys
// now. Spot means some of its capacity may be spot (less than all of it
// on demand above the base).
func (g *Group) setPolicy(p *asgtypes.MixedInstancesPolicy) {
	if p == nil || p.LaunchTemplate == nil || len(p.LaunchTemplate.Overrides) == 0 {
		return
	}
	g.InstanceTypes = nil
	for _, o := range p.LaunchTemplate.Overrides {
		g.InstanceTypes = append(g.InstanceTypes, aws.ToString(o.InstanceType))
	}
	g.InstanceType = strings.Join(g.InstanceTypes, ",")
	d := p.InstancesDistribution
	if d == nil {
		return
	}
	g.OnDemandBase = int(aws.ToInt32(d.OnDemandBaseCapacity))
	g.OnDemandPercent = int(aws.ToInt32(d.OnDemandPercentageAboveBaseCapacity))
	g.Spot = d.OnDemandPercentageAboveBaseCapacity != nil && g.OnDemandPercent < 100
	g.SpotAllocation = ""
	if g.Spot {
		g.SpotAllocation = aws.ToString(d.SpotAllocationStrategy)
	}
}

// Mix says how a group's nodes are bought, for a table: on-demand, spot,
// or spot with an on-demand share ("spot, on-demand 1 + 25%").
func (g Group) Mix() string {
	switch {
	case !g.Spot:
		return OnDemand
	case g.OnDemandBase == 0 && g.OnDemandPercent == 0:
		return "spot"
	}
	return fmt.Sprintf("spot, on-demand %d + %d%%", g.OnDemandBase, g.OnDemandPercent)
}

// Joined tells whether a group's join parameters (the join-contract outputs
// it receives as parameters of the same names) equal the core's current
// outputs. A group whose core is gone is not joined. A group of an older
// contract is joined when the outputs it shares with the core's contract
// are equal: a core keeps serving the groups of earlier contracts (agents
// of contract 1 pinned the control node's address only as a fallback and
// find the managers in the bucket too), so upgrading a core leaves its
// groups joined, and update-group brings each to the new contract.
func Joined(groupParams, coreOutputs map[string]string) bool {
	if coreOutputs == nil {
		return false
	}
	for _, k := range append(names.JoinOutputs(), names.LegacyJoinOutputs()...) {
		if k == names.OutputSubnetIDs {
			continue // a group may run in subnets of its own
		}
		v, ok := groupParams[k]
		_, published := coreOutputs[k]
		if !ok || !published && slices.Contains(names.LegacyJoinOutputs(), k) {
			continue // the group's contract or the core's does not have that value
		}
		if k == names.OutputContractVersion && render.ContractOlder(v, coreOutputs[k]) {
			continue
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
		in.Filters = []asgtypes.Filter{{Name: aws.String("tag-key"), Values: []string{names.TagCluster}}}
	} else {
		in.Filters = []asgtypes.Filter{{Name: aws.String("tag:" + names.TagCluster), Values: []string{cluster}}}
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
				case names.TagCluster:
					c = aws.ToString(t.Value)
				case names.TagGroup:
					name = aws.ToString(t.Value)
				}
			}
			out[c+"/"+name] = g
		}
	}
	return out, nil
}

// asgAutoscale reads a group's autoscaling from its Auto Scaling group's
// tag (names.TagAutoscale); nil without one.
func asgAutoscale(tags []asgtypes.TagDescription) *GroupAutoscale {
	for _, t := range tags {
		if aws.ToString(t.Key) == names.TagAutoscale {
			return &GroupAutoscale{ScaleDownAfter: aws.ToString(t.Value)}
		}
	}
	return nil
}

func asgLabels(tags []asgtypes.TagDescription) map[string]string {
	out := map[string]string{}
	for _, t := range tags {
		if k := aws.ToString(t.Key); strings.HasPrefix(k, names.TagLabelPrefix) {
			out[strings.TrimPrefix(k, names.TagLabelPrefix)] = aws.ToString(t.Value)
		}
	}
	return out
}

// GroupsTable is the table form of list-groups. The default table fits
// 120 columns (see Columns): the instance types and the spot mix shortened,
// the last update as an age, autoscaling as its bounds; -o wide has every
// value in full, with min, max, running, the spot allocation, the stack,
// the labels and the load balancer.
func GroupsTable(groups []Group, c Columns) Table {
	var t Table
	if c.Wide {
		t.Header = c.withCluster("GROUP", "STATUS", "TYPE", "LIFECYCLE", "DESIRED", "MIN", "MAX", "RUNNING", "READY", "JOINED", "UPDATED", "AUTOSCALE",
			"SPOT-ALLOCATION", "STACK", "LABELS", "ENDPOINT", "PORTS")
	} else {
		t.Header = c.withCluster("GROUP", "STATUS", "TYPE", "LIFECYCLE", "DESIRED", "READY", "JOINED", "UPDATED", "AUTOSCALE")
	}
	for _, g := range groups {
		joined := "yes"
		if !g.Joined {
			joined = "no"
		}
		var row []string
		if c.Wide {
			row = c.rowWithCluster(g.Cluster, g.Group, g.Status, dash(g.InstanceType), g.Mix(), strconv.Itoa(g.Desired), strconv.Itoa(g.Min), strconv.Itoa(g.Max), strconv.Itoa(g.Running), ReadyText(g.Ready), joined, g.Updated.Format(time.RFC3339), g.AutoscaleText(),
				dash(g.SpotAllocation), g.Stack, dash(FormatLabels(g.Labels)), g.LoadBalancer.EndpointText(), g.LoadBalancer.PortsText())
		} else {
			row = c.rowWithCluster(g.Cluster, g.Group, g.Status, dash(shortTypes(g.InstanceType)), g.shortMix(), strconv.Itoa(g.Desired), ReadyText(g.Ready), joined, c.age(&g.Updated), g.shortAutoscale())
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// ReadyText is a Ready count for a table: "?" when unknown.
func ReadyText(ready *int) string {
	if ready == nil {
		return swarmUnknown
	}
	return strconv.Itoa(*ready)
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
		c := s.Tags[names.TagCluster]
		if c == "" || s.Status == string(cfntypes.StackStatusDeleteComplete) {
			continue
		}
		role, _ := Ownership(s)
		switch role {
		case names.RoleCore:
			n.Clusters = append(n.Clusters, c)
		case names.RoleAgents:
			if g := s.Tags[names.TagGroup]; g != "" {
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
