package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/iostreams"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// What apply does to a stack.
const (
	ActionCreate    = "create"
	ActionUpdate    = "update"
	ActionDelete    = "delete"
	ActionUnchanged = "unchanged"
	ActionKept      = "kept" // deployed, not in the file, and no --prune
)

// How a stack's action went.
const (
	ResultDone        = "done"
	ResultFailed      = "failed"
	ResultNotStarted  = "not started"
	ResultInterrupted = "interrupted"
)

// DefaultParallel is how many group stacks apply changes at a time.
const DefaultParallel = 4

// ApplyOptions say what apply should make of a cluster.
type ApplyOptions struct {
	Spec spec.Cluster // as the file declares it
	// File names the file in the advice: `clusterctl apply -f FILE`.
	File     string
	DryRun   bool
	Prune    bool // delete the groups deployed but not in the file
	Yes      bool // delete them, and replace nodes, without asking
	Parallel int  // group stacks changed at a time; < 1 means DefaultParallel
	// OnPlan, when set, is shown the plan before anything changes.
	OnPlan func(*ClusterPlan) error
}

// ClusterPlan is what apply does to each stack of a cluster and, once
// applied, how each went. Its JSON form is apply's -o json.
type ClusterPlan struct {
	Cluster string `json:"cluster"`
	// Network is the network the file declares (applynetwork.go), created
	// before the core; nil when it declares none.
	Network *NetworkPlan `json:"network,omitempty"`
	Stacks  []*StackPlan `json:"stacks"` // the core, the file's groups in its order, then the others by name
	DryRun  bool         `json:"dryRun"`
	// NoChanges: every stack is unchanged or kept.
	NoChanges bool `json:"noChanges"`
	Applied   bool `json:"applied"`
}

// StackPlan is what apply does to one stack: for an update the group's
// Plan (settings old → new, resource changes, nodes replaced); for a
// create every setting given (old unset); then the outcome.
type StackPlan struct {
	Plan
	Group  string `json:"group,omitempty"` // "" for the core
	Action string `json:"action"`
	// Note says more, for people: "3 x c5.large", "not in the file, kept".
	Note string `json:"note,omitempty"`

	Result          string  `json:"result,omitempty"`
	DurationSeconds float64 `json:"durationSeconds,omitempty"`
	Error           string  `json:"error,omitempty"`

	core    *spec.Core   // the core to create
	group   *spec.Group  // the group to create
	replace bool         // create over a dead stack of the group's name
	update  *groupUpdate // the planned update
	err     error        // how it failed
}

// Changing tells whether the stack is created, updated or deleted.
func (p *StackPlan) Changing() bool {
	return p.Action == ActionCreate || p.Action == ActionUpdate || p.Action == ActionDelete
}

// Applier plans and applies a cluster file.
type Applier struct {
	artifacts *Artifacts
	core      *Core
	find      *Finder
	groups    *Groups
	observer  *Observer
	plans     *Plans
	say       *Say
	IO        *iostreams.IO
	Stacks    StackManager
}

// Apply makes a cluster what the file declares: it observes what is
// deployed, plans every stack (the core, then the groups, planned in
// parallel), shows the plan, asks before deleting groups (--prune), then
// creates a missing core first and changes the groups in parallel, at most
// Parallel at a time; one group's failure does not stop the others.
// Nothing changes when the plan cannot be made. The plan comes back with
// each stack's outcome, also when some failed (then the error names each
// failure with what to do).
func (s *Applier) Apply(ctx context.Context, o ApplyOptions) (*ClusterPlan, error) {
	c := o.Spec
	if err := c.Complete(); err != nil {
		return nil, err
	}
	parallel := o.Parallel
	if parallel < 1 {
		parallel = DefaultParallel
	}
	p := &ClusterPlan{Cluster: c.Name, Stacks: []*StackPlan{}, DryRun: o.DryRun}
	obs, err := s.observeForApply(ctx, c.Name)
	if err != nil {
		return nil, err
	}
	if p.Network, err = s.planNetwork(ctx, c, obs); err != nil {
		return p, err
	}
	corePlan, err := s.planCoreStack(ctx, c, obs)
	p.Stacks = append(p.Stacks, corePlan)
	if err != nil {
		return p, err
	}
	p.Stacks = append(p.Stacks, s.planGroups(c, obs, o.Prune)...)
	deletes := p.names(ActionDelete)
	if err := s.prepare(ctx, p, obs, parallel); err != nil {
		s.discardAll(ctx, p)
		return p, err
	}
	p.NoChanges = !slices.ContainsFunc(p.all(), (*StackPlan).Changing)
	if o.OnPlan != nil {
		if err := o.OnPlan(p); err != nil {
			s.discardAll(ctx, p)
			return p, err
		}
	}
	if o.DryRun || p.NoChanges {
		s.discardAll(ctx, p)
		return p, nil
	}
	// Only now, after the plan was shown: what --yes would do is seen.
	if err := s.refuseUnasked(o.Yes, deletes, lbRemovals(p, obs)); err != nil {
		s.discardAll(ctx, p)
		return p, err
	}
	var asks []string
	if len(deletes) > 0 {
		asks = append(asks, fmt.Sprintf("delete %s of cluster %q, not in the file: %s", query.Plural(len(deletes), "group stack"), c.Name, strings.Join(deletes, ", ")))
	}
	for _, what := range append(asks, p.asks(obs)...) {
		if err := s.say.confirm(ctx, o.Yes, what); err != nil {
			s.discardAll(ctx, p)
			return p, err
		}
	}
	p.Applied = true
	return p, s.execute(ctx, p, obs, parallel, o.File)
}

// observeForApply reads the cluster as deployed; nil when it has no core
// yet. A cluster with group stacks but no core is refused: apply would
// create a core beside groups it cannot read.
func (s *Applier) observeForApply(ctx context.Context, name string) (*Observed, error) {
	_, err := s.Stacks.Get(ctx, name)
	if errors.Is(err, stacks.ErrNotFound) {
		groups, _, err := s.find.groupStacks(ctx, name)
		if err != nil {
			return nil, err
		}
		if len(groups) > 0 {
			var stackNames []string
			for _, g := range groups {
				stackNames = append(stackNames, g.Stack)
			}
			return nil, refused("cluster %q has no core stack but has group stacks %s: remove them with `clusterctl remove-group -n GROUP -j %s` first", name, strings.Join(stackNames, ", "), name)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	obs, err := s.observer.Observe(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := usable(obs.Core, "core"); err != nil {
		return nil, err
	}
	return obs, nil
}

// planCoreStack plans the core: created when there is none; otherwise
// updated as update-core would (managers replaced one at a time, groups
// untouched), planned with its change set. A VPC, subnets or network the
// file leaves out are the ones the core was created in.
func (s *Applier) planCoreStack(ctx context.Context, c spec.Cluster, obs *Observed) (*StackPlan, error) {
	sp := &StackPlan{Plan: Plan{Stack: c.Name, Settings: []spec.Change{}, Changes: []ResourceChange{}}}
	if obs == nil {
		sp.Action, sp.core = ActionCreate, &c.Core
		sp.Settings = spec.Diff(spec.Core{}, c.Core)
		sp.Note = "core: " + c.Core.Type()
		// A new cluster named close to a live one may be a slip.
		if live, err := s.find.listNames(ctx); err == nil {
			if near := Closest(c.Name, live.Clusters); near != "" {
				sp.Note += " (a new cluster: did you mean " + near + "?)"
			}
		}
		return sp, nil
	}
	deployed, want := obs.Spec.Core, c.Core
	if want.VpcID == "" {
		want.VpcID = deployed.VpcID
	}
	if len(want.SubnetIDs) == 0 && want.VpcID == deployed.VpcID {
		want.SubnetIDs = deployed.SubnetIDs
	}
	inheritNetwork(&want, deployed)
	if len(spec.Diff(deployed, want)) == 0 {
		sp.Action = ActionUnchanged
		return sp, nil
	}
	oc, err := s.observer.observeCore(ctx, obs.Core)
	if err != nil {
		return sp, err
	}
	if render.ContractOlder(render.ContractVersion, oc.Contract) {
		return sp, refused("core %s has join contract %s, newer than this clusterctl's %s: apply it with a newer clusterctl", c.Name, oc.Contract, render.ContractVersion)
	}
	u, err := s.plans.planCoreUpdate(ctx, oc, want)
	if err != nil {
		return sp, within(c.Name, err)
	}
	sp.Action, sp.update, sp.Plan = ActionUpdate, u, *u.plan
	if u.noop() {
		sp.Action = ActionUnchanged
	} else {
		sp.Note = u.plan.NodesLine()
	}
	return sp, nil
}

// planGroups says what becomes of each group, before anything is read
// of them: created (also over a dead stack), updated (planned by
// prepare), kept or deleted.
func (s *Applier) planGroups(c spec.Cluster, obs *Observed, prune bool) []*StackPlan {
	var out []*StackPlan
	deployed := map[string]*ObservedGroup{}
	if obs != nil {
		deployed = obs.Groups
	}
	for i := range c.Groups {
		g := &c.Groups[i]
		sp := &StackPlan{Plan: Plan{Stack: names.GroupStack(c.Name, g.Name), Settings: []spec.Change{}, Changes: []ResourceChange{}}, Group: g.Name}
		og := deployed[g.Name]
		switch {
		case og == nil || stacks.Classify(og.Stack.Status) == stacks.FailedDead:
			sp.Action, sp.group = ActionCreate, g
			sp.Settings = spec.Diff(spec.Group{Name: g.Name}, *g)
			sp.Note = g.Size()
			if og != nil {
				sp.replace = true
				sp.Note += fmt.Sprintf(", replacing the dead stack (%s)", og.Stack.Status)
			}
		default:
			sp.Action, sp.group = ActionUpdate, g // prepare plans it
		}
		out = append(out, sp)
	}
	var gone []string
	for name := range deployed {
		if c.Group(name) == nil {
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	for _, name := range gone {
		og := deployed[name]
		sp := &StackPlan{Plan: Plan{Stack: og.Stack.Name, Settings: []spec.Change{}, Changes: []ResourceChange{}}, Group: name, Action: ActionKept, Note: "not in the file, kept (--prune deletes it)"}
		if prune {
			sp.Action, sp.Note = ActionDelete, "not in the file: "+query.Plural(max(og.Nodes, 0), "node")+" removed"
		}
		out = append(out, sp)
	}
	return out
}

// prepare completes the plan of every group, in parallel: an update is
// read back, rendered and planned (with its change set); a create is
// rendered, so that what cannot be rendered is refused before anything
// changes. Every problem is reported, not only the first.
func (s *Applier) prepare(ctx context.Context, p *ClusterPlan, obs *Observed, parallel int) error {
	var g errgroup.Group
	g.SetLimit(parallel)
	for _, sp := range p.Stacks {
		if sp.group == nil {
			continue
		}
		g.Go(func() error {
			sp.err = s.prepareGroup(ctx, p.Cluster, sp, obs)
			return nil
		})
	}
	_ = g.Wait()
	var problems []error
	for _, sp := range p.Stacks {
		if sp.err != nil {
			problems = append(problems, sp.err)
			sp.Error, sp.err = errs.Message(sp.err), nil
		}
	}
	return joinProblems(problems)
}

func (s *Applier) prepareGroup(ctx context.Context, cluster string, sp *StackPlan, obs *Observed) error {
	if sp.Action == ActionCreate && !sp.replace {
		// A stack of the group's name that Observe did not take for a
		// group is someone else's.
		switch _, err := s.Stacks.Get(ctx, sp.Stack); {
		case err == nil:
			return refused("stack %s exists but is not a group of cluster %q (its tags say otherwise): rename the group in the file", sp.Stack, cluster)
		case !errors.Is(err, stacks.ErrNotFound):
			return err
		}
	}
	if sp.Action == ActionCreate {
		// Joined to the core's outputs when it exists; before the core
		// exists, to nothing: rendering then checks the limits only.
		var err error
		if obs != nil {
			_, err = s.plans.renderChecked(ctx, obs.Core, *sp.group, nil)
		} else if b, berr := s.artifacts.build(ctx); berr != nil {
			err = berr
		} else if _, rerr := render.Group(cluster, *sp.group, render.Join{}, b); rerr != nil {
			err = errs.AsUsage(rerr)
		}
		return within(sp.Stack, err)
	}
	og := obs.Groups[sp.Group]
	if err := usable(og.Stack, "group"); err != nil {
		return err
	}
	u, err := s.plans.planUpdate(ctx, obs.Core, og, *sp.group)
	if err != nil {
		return within(sp.Stack, err)
	}
	sp.update, sp.Plan = u, *u.plan
	if u.noop() {
		sp.Action = ActionUnchanged
	} else {
		sp.Note = u.plan.NodesLine()
	}
	return nil
}

// within says which stack an error is about, keeping its kind.
func within(stack string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", stack, err)
}

// joinProblems joins errors; the whole is bad input (exit 2) only when
// every one is.
func joinProblems(problems []error) error {
	if len(problems) == 0 {
		return nil
	}
	err := errors.Join(problems...)
	for _, e := range problems {
		if errs.ExitCode(e) != errs.ExitUsage {
			return &joined{err}
		}
	}
	return errs.AsUsage(err)
}

// joined hides the usage errors among others, so that the exit code is
// that of the failures (1).
type joined struct{ err error }

func (j *joined) Error() string { return j.err.Error() }

// asks are the questions update-core and update-group would ask before
// the updates of the plan, in its order (coreAsk, groupAsks).
func (p *ClusterPlan) asks(obs *Observed) []string {
	var out []string
	for _, sp := range p.Stacks {
		switch {
		case sp.Action != ActionUpdate || obs == nil:
		case sp.Group == "":
			out = append(out, coreAsk(p.Cluster))
		case sp.group != nil && obs.Groups[sp.Group] != nil:
			desired := *sp.group
			desired.Default()
			out = append(out, groupAsks(p.Cluster, obs.Groups[sp.Group], desired, &sp.Plan)...)
		}
	}
	return out
}

// Kept names the deployed group stacks the file leaves out and apply
// keeps (no --prune).
func (p *ClusterPlan) Kept() []string { return p.names(ActionKept) }

func (p *ClusterPlan) names(action string) []string {
	var out []string
	for _, sp := range p.Stacks {
		if sp.Action == action {
			out = append(out, sp.Stack)
		}
	}
	return out
}

// run runs one stack's action and records how it went.
func (sp *StackPlan) run(action func() error) {
	start := time.Now()
	err := action()
	sp.DurationSeconds = math.Round(time.Since(start).Seconds()*10) / 10
	switch {
	case err == nil:
		sp.Result = ResultDone
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		sp.Result, sp.err = ResultInterrupted, err
	default:
		sp.Result, sp.err = ResultFailed, err
	}
	if err != nil {
		sp.Error = errs.Message(err)
	}
}

// applyError is an apply some of whose stacks failed (exit code 1).
type applyError struct{ msg string }

func (e *applyError) Error() string { return e.msg }
