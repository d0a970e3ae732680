package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/names"
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

// planGroup compares a group as deployed with its desired spec rendered
// as r.
func (s *Service) planGroup(ctx context.Context, deployed *ObservedGroup, desired spec.Group, r *render.Rendered) (*Plan, error) {
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
func (s *Service) compare(ctx context.Context, p *Plan, prev *stacks.Stack, prevTemplate []byte, r *render.Rendered, imageChanges bool) (oldParams, newParams map[string]string, err error) {
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
