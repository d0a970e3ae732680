package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/preflight"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// Plan is what an update does to one stack: the difference of the
// deployed and the desired spec, CloudFormation's resource actions, and
// the nodes the rolling update replaces. clusterctl computes the settings
// and the nodes itself: change sets do not always say (some CloudFormation
// implementations leave parameter-only changes out).
type Plan struct {
	Stack string `json:"stack"`
	// Settings lists every setting that changes, old → new, in the order
	// of the spec; then the core's outputs the group follows, as
	// "join.<Output>", and an image path that now resolves to a newer AMI.
	Settings []spec.Change `json:"settings"`
	// Changes is CloudFormation's change set.
	Changes []ResourceChange `json:"changes"`
	// NodesReplaced nodes are replaced by the rolling update, BatchSize at
	// a time.
	NodesReplaced int `json:"nodesReplaced"`
	BatchSize     int `json:"batchSize"`
	// NodesTerminated nodes are terminated by a smaller capacity (a group's
	// count or max lowered), apart from those replaced.
	NodesTerminated int `json:"nodesTerminated"`
	// Notes say what else the update does: managers added or removed, a
	// core brought to the current join contract.
	Notes []string `json:"notes,omitempty"`
	// NodeAgent is the change of the node agent the nodes run, short
	// hashes old → new ("" when it does not change).
	NodeAgent string `json:"nodeAgent,omitempty"`

	managers  bool // the plan of a core: its nodes are the swarm's managers
	unchanged bool // rendered template and parameters equal the deployed ones
}

// ResourceChange is one resource action of a change set.
type ResourceChange struct {
	Action       string `json:"action"` // Add, Modify, Remove, ...
	LogicalID    string `json:"logicalId"`
	ResourceType string `json:"resourceType"`
	Replacement  string `json:"replacement"` // True, False, Conditional or ""
}

func (p *Plan) setChanges(cs []stacks.Change) {
	p.Changes = []ResourceChange{}
	for _, c := range cs {
		p.Changes = append(p.Changes, ResourceChange{Action: c.Action, LogicalID: c.LogicalID, ResourceType: c.ResourceType, Replacement: c.Replacement})
	}
}

// resolvedImage names the plan row of an image path whose AMI moved.
const resolvedImage = "imageId (resolved)"

// Plans renders a stack, plans its change and applies or discards it.
type Plans struct {
	artifacts *Artifacts
	leases    *Leases
	requests  *Requests
	say       *Say
	ACM       preflight.ACMAPI
	EC2       EC2API
	SSM       SSMAPI
	Stacks    StackManager
	Sources   preflight.Sources
}

// planGroup compares a group as deployed with its desired spec rendered
// as r.
func (s *Plans) planGroup(ctx context.Context, deployed *ObservedGroup, desired spec.Group, r *render.Rendered) (*Plan, error) {
	settings := spec.Diff(deployed.Spec, desired)
	from, keep := shrink(deployed, desired)
	if desired.Autoscale.Enabled {
		// The stack of an autoscaled group sets no capacity: the group
		// keeps the one it has, within its bounds, whatever the count
		// (which follows the min) becomes.
		settings = slices.DeleteFunc(settings, func(c spec.Change) bool { return c.Path == "count" })
	}
	p := newPlan(r.StackName, settings, desired.MaxBatchSize())
	if desired.Autoscale.Enabled && !deployed.Spec.Autoscale.Enabled {
		p.Notes = append(p.Notes, fmt.Sprintf("The group keeps its %s; the managers' autoscaler changes its capacity between %d and %d.", query.Plural(keep, "node"), desired.MinSize(), desired.MaxSize()))
	}
	prev := deployed.Stack
	for _, k := range append(names.JoinOutputs(), names.LegacyJoinOutputs()...) {
		if k == names.OutputSubnetIDs && len(desired.SubnetIDs) > 0 {
			continue // the group's own subnets: a setting
		}
		old, had := prev.Parameters[k]
		new, has := r.Parameters[k]
		if (had || has) && !sameValue(old, new) {
			p.Settings = append(p.Settings, spec.Change{Path: "join." + k, Old: old, New: new, OldText: orNone(old), NewText: orNone(new)})
		}
	}
	// The engines' log settings come from the core into the node
	// configuration: new ones replace the nodes, which the plan says.
	if old, new := render.ReadNodeLogs(deployed.Template), render.ReadNodeLogs(r.Template); old.String() != new.String() {
		p.Settings = append(p.Settings, spec.Change{Path: "join.logs", Old: old, New: new, OldText: old.String(), NewText: new.String()})
		p.Notes = append(p.Notes, fmt.Sprintf("The nodes' engines log %s instead of %s (the core's log settings): the rolling update replaces the nodes to apply it.", new, old))
	}
	oldParams, newParams, err := s.compare(ctx, p, prev, deployed.Template, r, changes(p.Settings, "imageId", "instanceType"))
	if err != nil {
		return nil, err
	}
	planAgent(p, prev.Parameters, r.Parameters)
	oldLaunch, errOld := render.Launch(deployed.Template, oldParams)
	newLaunch, err := render.Launch(r.Template, newParams)
	if err != nil {
		return nil, err
	}
	// A deployed template that cannot be read this way is assumed to
	// change: better to announce a replacement that does not happen.
	if errOld != nil || oldLaunch != newLaunch {
		p.NodesReplaced = min(from, keep)
	}
	p.NodesTerminated = max(from-keep, 0)
	return p, nil
}

func newPlan(stack string, settings []spec.Change, batch int) *Plan {
	if settings == nil {
		settings = []spec.Change{}
	}
	return &Plan{Stack: stack, Settings: settings, Changes: []ResourceChange{}, BatchSize: batch}
}

// compare completes a plan with what the deployed stack (prev, its
// template prevTemplate) and the rendered one r say beyond the settings:
// an image path that now resolves to a newer AMI (unless the image or the
// type changes anyway), and whether anything changes at all. It returns
// both sides' parameters with the image path resolved to its AMI, as
// CloudFormation sees them.
func (s *Plans) compare(ctx context.Context, p *Plan, prev *stacks.Stack, prevTemplate []byte, r *render.Rendered, imageChanges bool) (oldParams, newParams map[string]string, err error) {
	// The image path resolves to an AMI on every deploy: compare AMIs.
	// CloudFormation reports the resolved AMI as ResolvedValue; some
	// implementations report it as the value itself.
	oldParams, newParams = maps.Clone(prev.Parameters), maps.Clone(r.Parameters)
	if v := prev.Resolved[names.ParamImageParameter]; v != "" {
		oldParams[names.ParamImageParameter] = v
	}
	path := r.Parameters[names.ParamImageParameter]
	out, err := s.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(path)})
	if err != nil {
		return nil, nil, fmt.Errorf("resolving image parameter %s: %w", path, err)
	}
	newParams[names.ParamImageParameter] = aws.ToString(out.Parameter.Value)
	oldAMI, newAMI := oldParams[names.ParamImageParameter], newParams[names.ParamImageParameter]
	if oldAMI != newAMI && r.Parameters[names.ParamImageID] == "" && !imageChanges {
		p.Settings = append(p.Settings, spec.Change{Path: resolvedImage, Old: oldAMI, New: newAMI, OldText: oldAMI, NewText: newAMI})
	}

	p.unchanged = bytes.Equal(bytes.TrimSpace(prevTemplate), bytes.TrimSpace(r.Template))
	for k, v := range newParams {
		if pv, ok := oldParams[k]; !ok || !sameValue(pv, v) {
			p.unchanged = false
		}
	}
	return oldParams, newParams, nil
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// sameValue compares parameter values; lists in either form SplitList
// reads are equal when their items are.
func sameValue(a, b string) bool {
	if a == b {
		return true
	}
	la, lb := spec.SplitList(a), spec.SplitList(b)
	if len(la) == 0 && len(lb) == 0 {
		// An empty list parameter reads back as "" or as [''] (moto's form).
		return emptyList(a) && emptyList(b)
	}
	return slices.Equal(la, lb)
}

func emptyList(s string) bool {
	s = strings.TrimSpace(s)
	return s == "" || strings.HasPrefix(s, "[")
}

func changes(cs []spec.Change, paths ...string) bool {
	for _, c := range cs {
		if slices.Contains(paths, c.Path) {
			return true
		}
	}
	return false
}

// WritePlan prints a plan for a terminal: the settings that change, the
// resources CloudFormation changes, and the nodes replaced.
func WritePlan(w io.Writer, p *Plan) error {
	if len(p.Settings) == 0 {
		fmt.Fprintln(w, "No setting changes: the template is rendered anew by this clusterctl.")
	} else {
		t := query.Table{Header: []string{"SETTING", "CHANGE"}}
		for _, c := range p.Settings {
			t.Rows = append(t.Rows, []string{c.Path, c.OldText + " → " + c.NewText})
		}
		if err := query.WriteTable(w, t); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if len(p.Changes) == 0 {
		fmt.Fprintln(w, "CloudFormation lists no resource changes.")
	} else {
		t := query.Table{Header: []string{"ACTION", "RESOURCE", "TYPE", "REPLACEMENT"}}
		for _, c := range p.Changes {
			t.Rows = append(t.Rows, []string{c.Action, c.LogicalID, c.ResourceType, replacement(c.Replacement)})
		}
		if err := query.WriteTable(w, t); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if _, err := fmt.Fprintln(w, p.NodesLine()); err != nil {
		return err
	}
	for _, n := range p.Notes {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

// NodesLine says how many nodes are replaced: "3 nodes will be replaced, 1
// at a time"; of a core, "3 managers will be replaced one at a time"; and
// how many a smaller capacity terminates ("2 nodes will be terminated"),
// so that the plan counts the nodes the question after it names.
func (p *Plan) NodesLine() string {
	noun := "node"
	if p.managers {
		noun = "manager"
	}
	line := ""
	switch {
	case p.NodesReplaced == 0 && p.NodesTerminated > 0:
		return query.Plural(p.NodesTerminated, noun) + " will be terminated"
	case p.NodesReplaced == 1:
		line = "1 " + noun + " will be replaced"
	case p.NodesReplaced == 0:
		return "0 " + noun + "s will be replaced"
	case p.managers:
		line = fmt.Sprintf("%d managers will be replaced one at a time", p.NodesReplaced)
	default:
		line = fmt.Sprintf("%d nodes will be replaced, %d at a time", p.NodesReplaced, p.BatchSize)
	}
	if p.NodeAgent != "" {
		line += ": " + p.NodeAgent
	}
	if p.NodesTerminated > 0 {
		line += fmt.Sprintf("; %s will be terminated", query.Plural(p.NodesTerminated, "other "+noun))
	}
	return line
}

func replacement(r string) string {
	switch r {
	case "True":
		return "replaced"
	case "Conditional":
		return "maybe replaced"
	case "False":
		return "in place"
	}
	return "-"
}

// preflightGroup checks a group's settings against the account before
// anything is uploaded or created: subnets the operator named must all
// offer every type of the group; the core's, taken by default, at least
// one of them each. The types must share one architecture as EC2 says.
//
// Which zones do not offer a type is said when it is news: for a new
// group, or when an update changes its types or subnets; not on every
// update of a group that already lives with it.
func (s *Plans) preflightGroup(ctx context.Context, join render.Join, g spec.Group, deployed *spec.Group) error {
	subnets, rule := g.SubnetIDs, preflight.EveryZone
	if len(subnets) == 0 {
		subnets, rule = join.SubnetIds, preflight.SomeZone
	}
	rep, err := preflight.Check(ctx, s.EC2, s.SSM, preflight.Request{
		InstanceTypes: g.InstanceType, Image: g.ImageID, KeyName: g.KeyName,
		SubnetIDs: subnets, VpcID: join.VpcId, Zones: rule,
	})
	if err != nil {
		return err
	}
	if err := s.checkPublicIPs(ctx, "group "+g.Name+"'s nodes", join.VpcId, subnets, g.PublicIPs); err != nil {
		return err
	}
	news := deployed == nil || !slices.Equal(deployed.InstanceType, g.InstanceType) || !slices.Equal(deployed.SubnetIDs, g.SubnetIDs)
	for _, n := range zoneNotes(g.Name, rep.Unoffered) {
		if news {
			s.say.noteOnce(n)
		}
	}
	if !g.Published() {
		return nil
	}
	cert := ""
	if g.TLS() {
		cert = g.Certificate
	}
	return preflight.CheckLoadBalancer(ctx, s.EC2, s.ACM, preflight.LoadBalancerRequest{
		Scheme: g.Scheme(), Certificate: cert, SubnetIDs: render.LoadBalancerSubnets(g, join), SubnetZones: rep.SubnetZones, VpcID: join.VpcId,
	})
}

// zoneNotes says, once per zone, which of a group's types that zone does
// not offer: one line per zone, however many types the group has.
func zoneNotes(group string, gaps []preflight.Gap) []string {
	var zones []string
	types := map[string][]string{}
	subnets := map[string][]string{}
	for _, g := range gaps {
		if _, ok := types[g.Zone]; !ok {
			zones = append(zones, g.Zone)
		}
		types[g.Zone] = append(types[g.Zone], g.InstanceType)
		subnets[g.Zone] = g.Subnets
	}
	var out []string
	for _, z := range zones {
		verb := "is"
		if len(types[z]) > 1 {
			verb = "are"
		}
		out = append(out, fmt.Sprintf("Note: group %s: %s %s not offered in %s (subnet %s): its nodes launch in the other zones\n",
			group, strings.Join(types[z], ", "), verb, z, strings.Join(subnets[z], ", ")))
	}
	return out
}

// planCore compares a core as deployed with its desired spec rendered as
// r: the settings, the managers replaced (by what they are launched with)
// and those added or removed.
func (s *Plans) planCore(ctx context.Context, deployed *ObservedCore, desired spec.Core, r *render.Rendered) (*Plan, error) {
	p := newPlan(r.StackName, spec.Diff(deployed.Spec, desired), 1)
	p.managers = true
	if deployed.Contract != render.ContractVersion {
		p.Settings = append(p.Settings, spec.Change{Path: "contractVersion", Old: deployed.Contract, New: render.ContractVersion,
			OldText: deployed.Contract, NewText: render.ContractVersion})
	}
	oldParams, newParams, err := s.compare(ctx, p, deployed.Stack, deployed.Template, r, changes(p.Settings, "imageId", "instanceType"))
	if err != nil {
		return nil, err
	}
	planAgent(p, deployed.Stack.Parameters, r.Parameters)
	from, to := deployed.Spec.ManagerCount(), desired.ManagerCount()
	if deployed.Legacy() {
		p.NodesReplaced = 1
		p.Notes = append(p.Notes, fmt.Sprintf("The control node of join contract %s is replaced by %s in an Auto Scaling group. It cannot hand its swarm over: "+
			"the managers form a new swarm, the agents rejoin it on their own, and the services, secrets and networks of the old swarm must be created again. "+
			"The groups keep running, joined; `clusterctl update-group` brings each to contract %s.", deployed.Contract, query.Plural(to, "manager"), render.ContractVersion))
		return p, nil
	}
	oldLaunch, errOld := render.CoreLaunch(deployed.Template, oldParams)
	newLaunch, err := render.CoreLaunch(r.Template, newParams)
	if err != nil {
		return nil, err
	}
	current := deployed.Managers
	if current < 0 {
		current = from
	}
	if errOld != nil || oldLaunch != newLaunch {
		p.NodesReplaced = min(current, to)
		p.Notes = append(p.Notes, "Each new manager joins the swarm, and is a Reachable manager, before an old one is drained, demoted and removed: the swarm keeps its quorum.")
	}
	switch {
	case to > from:
		p.Notes = append(p.Notes, fmt.Sprintf("%s will be added (%d → %d): they join the swarm as managers.", query.Plural(to-from, "manager"), from, to))
	case to < from:
		p.Notes = append(p.Notes, fmt.Sprintf("%s will be demoted and removed, one at a time (%d → %d).", query.Plural(from-to, "manager"), from, to))
	}
	return p, nil
}

// renderChecked renders a group joined to the core's current outputs,
// after checking its settings against the account (pre-flight): nothing is
// uploaded or created for a group that cannot launch. deployed is the
// group as it is (nil for a new one): what pre-flight notes of it is said
// only when news.
func (s *Plans) renderChecked(ctx context.Context, core *stacks.Stack, g spec.Group, deployed *spec.Group) (*render.Rendered, error) {
	join, err := s.groupJoin(ctx, core, g)
	if err != nil {
		return nil, err
	}
	if err := s.preflightGroup(ctx, join, g, deployed); err != nil {
		return nil, err
	}
	return s.renderGroup(ctx, core, g, join)
}

// renderGroup renders a group joined to its core, for this clusterctl.
func (s *Plans) renderGroup(ctx context.Context, core *stacks.Stack, g spec.Group, join render.Join) (*render.Rendered, error) {
	b, err := s.artifacts.build(ctx)
	if err != nil {
		return nil, err
	}
	r, err := render.Group(core.Name, g, join, b)
	if err != nil {
		return nil, errs.AsUsage(err)
	}
	return r, nil
}

// planUpdate plans the update of a deployed group to desired (completed
// and checked), joined to the core's current outputs: the settings that
// change, and, unless the rendered stack equals the deployed one, a change
// set with CloudFormation's resource actions (refused at apply time if the
// stack changed since it was read).
func (s *Plans) planUpdate(ctx context.Context, core *stacks.Stack, deployed *ObservedGroup, desired spec.Group) (*groupUpdate, error) {
	u := &groupUpdate{cluster: core.Name, group: desired.Name}
	revision, err := s.Stacks.Revision(ctx, names.GroupStack(core.Name, desired.Name))
	if err != nil {
		return nil, err
	}
	r, err := s.renderChecked(ctx, core, desired, &deployed.Spec)
	if err != nil {
		return nil, err
	}
	u.rendered = r
	if u.plan, err = s.planGroup(ctx, deployed, desired, r); err != nil {
		return nil, err
	}
	if u.plan.unchanged {
		return u, nil
	}
	stackSpec := specFrom(r, false)
	stackSpec.Revision = revision
	cs, err := s.Stacks.Plan(ctx, stackSpec)
	if err != nil {
		return nil, explain(err, u.cluster, u.group)
	}
	if cs.Empty {
		return u, nil
	}
	u.changeSet = cs
	u.plan.setChanges(cs.Changes)
	return u, nil
}

// applyUpdate uploads the node agent and the new node configuration,
// then executes the
// change set and waits, holding the stack's lease.
func (s *Plans) applyUpdate(ctx context.Context, u *groupUpdate) error {
	if u.noop() {
		return nil
	}
	scope := lease.Group(u.group)
	if u.group == "" {
		scope = lease.Core()
	}
	return s.leases.withLease(ctx, u.cluster, scope, func(ctx context.Context, in leased) error {
		if err := s.artifacts.uploadAll(ctx, in.bucket, u.rendered); err != nil {
			return err
		}
		if _, err := s.Stacks.Apply(ctx, u.changeSet); err != nil {
			return explain(err, u.cluster, u.group)
		}
		if u.group == "" && u.plan != nil && u.plan.changes("secrets") {
			s.requests.requestSecretsSync(ctx, in.core)
		}
		return nil
	})
}

// discard deletes a planned update's change set, even when ctx is done (a
// change set left behind clutters the stack); it is best effort.
func (s *Plans) discard(ctx context.Context, u *groupUpdate) {
	if u == nil || u.noop() {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = s.Stacks.Discard(cctx, u.changeSet)
}

// groupJoin is the core's join contract for group g, with what g's load
// balancer needs besides: the VPC's CIDR, as EC2 says it, when an
// internal load balancer admits the VPC by default.
func (s *Plans) groupJoin(ctx context.Context, core *stacks.Stack, g spec.Group) (render.Join, error) {
	join, err := joinOf(core)
	if err != nil {
		return join, err
	}
	if !g.Published() || g.Scheme() != spec.SchemeInternal || len(g.AllowFrom) > 0 {
		return join, nil
	}
	out, err := s.EC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{join.VpcId}})
	if err != nil {
		return join, fmt.Errorf("describing the core's VPC %s: %w", join.VpcId, err)
	}
	if len(out.Vpcs) != 1 || aws.ToString(out.Vpcs[0].CidrBlock) == "" {
		return join, refused("the core's VPC %s was not found: the internal load balancer's default --allow-from is its CIDR; give --allow-from (allowFrom in a cluster file) the CIDRs to admit, or check the core with `clusterctl describe %s`", join.VpcId, core.Name)
	}
	join.VpcCidr = aws.ToString(out.Vpcs[0].CidrBlock)
	return join, nil
}

// planCoreUpdate plans the update of a deployed core to desired: the
// settings that change, what becomes of the managers, and, unless the
// rendered stack equals the deployed one, a change set. Apply it with
// applyUpdate, or discard it. What the core cannot become is refused
// (exit 2) before anything is planned.
func (s *Plans) planCoreUpdate(ctx context.Context, deployed *ObservedCore, desired spec.Core) (*groupUpdate, error) {
	cluster := deployed.Stack.Name
	if err := desired.Complete(); err != nil {
		return nil, err
	}
	// A core deployed before operators gets the caller as its operator.
	if err := s.leases.resolveOperators(ctx, &desired, deployed.Spec.Operators); err != nil {
		return nil, err
	}
	if err := checkCoreChange(deployed, desired); err != nil {
		return nil, err
	}
	if err := s.checkPublicIPs(ctx, "the managers", desired.VpcID, desired.SubnetIDs, desired.PublicIPs); err != nil {
		return nil, err
	}
	notes, err := s.Sources.CheckCore(ctx, &deployed.Spec, desired)
	if err != nil {
		return nil, err
	}
	b, err := s.artifacts.build(ctx)
	if err != nil {
		return nil, err
	}
	r, err := render.Core(cluster, desired, b)
	if err != nil {
		return nil, errs.AsUsage(err)
	}
	u := &groupUpdate{cluster: cluster, rendered: r}
	if u.plan, err = s.planCore(ctx, deployed, desired, r); err != nil {
		return nil, err
	}
	u.plan.Notes = append(u.plan.Notes, notes...)
	if u.plan.unchanged {
		return u, nil
	}
	if from, to := deployed.Spec.ManagerCount(), desired.ManagerCount(); from != to && u.plan.NodesReplaced > 0 && !deployed.Legacy() {
		return nil, managersError("changing the number of managers (%d → %d) and what they run at once would replace and add or remove managers in one rolling update: make the changes in two updates", from, to)
	}
	cs, err := s.Stacks.Plan(ctx, specFrom(r, false))
	if err != nil {
		return nil, explain(err, cluster, "")
	}
	if cs.Empty {
		return u, nil
	}
	u.changeSet = cs
	u.plan.setChanges(cs.Changes)
	return u, nil
}
