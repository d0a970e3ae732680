package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// Groups runs the agent groups' lifecycle: add, update, remove.
type Groups struct {
	artifacts *Artifacts
	find      *Finder
	leases    *Leases
	observer  *Observer
	plans     *Plans
	say       *Say
	EC2       EC2API
	Stacks    StackManager
}

// AddAgents creates group g of cluster joined to the core's current
// outputs, waits, and returns the group's nodes. It holds the group's
// lease from before it reads anything it decides from until the stack is
// created.
func (s *Groups) AddAgents(ctx context.Context, cluster string, g spec.Group, o CreateOptions) ([]query.Node, error) {
	if err := spec.CheckClusterName(cluster); err != nil {
		return nil, err
	}
	if err := g.Complete(cluster); err != nil {
		return nil, err
	}
	err := s.leases.withLease(ctx, cluster, lease.Group(g.Name), func(ctx context.Context, in leased) error {
		return s.addAgents(ctx, in, g, o)
	})
	if err != nil {
		return nil, err
	}
	return query.ListNodes(ctx, s.EC2, cluster, g.Name)
}

func (s *Groups) addAgents(ctx context.Context, in leased, g spec.Group, o CreateOptions) error {
	if err := usable(in.core, "core"); err != nil {
		return err
	}
	r, dead, err := s.prepareNewGroup(ctx, in.core, g, o)
	if err != nil {
		return err
	}
	return s.deployGroup(ctx, in, g, r, dead, o)
}

// prepareAgents is everything add-agents does before it changes anything:
// the checks, the group rendered joined to the core, and the dead stack of
// the group that ReplaceFailed deletes first (nil when there is none). A
// dry run shows what it returns.
func (s *Groups) prepareAgents(ctx context.Context, cluster string, g spec.Group, o CreateOptions) (*render.Rendered, *stacks.Stack, error) {
	if err := spec.CheckClusterName(cluster); err != nil {
		return nil, nil, err
	}
	if err := g.Complete(cluster); err != nil {
		return nil, nil, err
	}
	core, err := s.find.getCore(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	if err := usable(core, "core"); err != nil {
		return nil, nil, err
	}
	return s.prepareNewGroup(ctx, core, g, o)
}

// prepareNewGroup checks that group g (completed and checked) may be
// created in the cluster of core and renders it joined to the core's
// current outputs, after pre-flight. A stack of that name is refused
// unless it is dead and o.ReplaceFailed: it is then returned, for
// deployGroup to delete first.
func (s *Groups) prepareNewGroup(ctx context.Context, core *stacks.Stack, g spec.Group, o CreateOptions) (*render.Rendered, *stacks.Stack, error) {
	cluster := core.Name
	name := names.GroupStack(cluster, g.Name)
	var dead *stacks.Stack
	existing, err := s.Stacks.Get(ctx, name)
	switch {
	case err == nil && !isGroupOf(existing, cluster, g.Name):
		// Another cluster's core or group, or not clusterctl's: never
		// replaced, whatever its state.
		return nil, nil, refused("stack %s already exists and is %s (status %s): group %q of cluster %q would need that name; choose another group name", name, stackKind(existing), existing.Status, g.Name, cluster)
	case err == nil && o.ReplaceFailed && stacks.Classify(existing.Status) == stacks.FailedDead:
		dead = existing
	case err == nil && stacks.Classify(existing.Status) == stacks.FailedDead:
		return nil, nil, refused("group %q of cluster %q exists but is dead (stack %s, %s)\n%s", g.Name, cluster, name, existing.Status, Advice(existing, RefOf(existing), nil))
	case err == nil && stacks.Classify(existing.Status) == stacks.InProgress:
		return nil, nil, refused("group %q already exists in cluster %q (stack %s, status %s): follow the operation in progress with `clusterctl wait %s -n %s`", g.Name, cluster, name, existing.Status, cluster, g.Name)
	case err == nil:
		return nil, nil, refused("group %q already exists in cluster %q (stack %s, status %s)", g.Name, cluster, name, existing.Status)
	case !errors.Is(err, stacks.ErrNotFound):
		return nil, nil, err
	}
	r, err := s.plans.renderChecked(ctx, core, g, nil)
	if err != nil {
		return nil, nil, err
	}
	return r, dead, nil
}

// createGroup creates group g (completed and checked) under its lease:
// how apply creates a group, with the same steps as add-agents.
func (s *Groups) createGroup(ctx context.Context, core *stacks.Stack, g spec.Group, o CreateOptions) error {
	return s.leases.withLease(ctx, core.Name, lease.Group(g.Name), func(ctx context.Context, in leased) error {
		return s.addAgents(ctx, in, g, o)
	})
}

// deployGroup deletes the dead stack a prepared group replaces, uploads
// its node configuration and creates its stack, waiting for it.
func (s *Groups) deployGroup(ctx context.Context, in leased, g spec.Group, r *render.Rendered, dead *stacks.Stack, o CreateOptions) error {
	cluster := in.core.Name
	if dead != nil {
		s.say.printf("Deleting dead group stack %s (%s) before creating it again\n", dead.Name, dead.Status)
		if err := s.Stacks.Delete(ctx, dead.Name); err != nil {
			return explain(err, cluster, g.Name)
		}
	}
	// Whatever an earlier group of that name left in the bucket is of no
	// use: no stack of the name exists.
	if _, err := s.artifacts.tidyNodeConfigs(ctx, in, g.Name, nil, ConfigGrace); err != nil {
		return err
	}
	if err := s.artifacts.uploadAll(ctx, in.bucket, r); err != nil {
		return err
	}
	s.say.printf("Creating group stack %s (%s) in cluster %s\n", r.StackName, g.Size(), cluster)
	if _, err := s.Stacks.Create(ctx, specFrom(r, o.NoRollback)); err != nil {
		return explain(err, cluster, g.Name)
	}
	return nil
}

// UpdateOptions say what update-group should make of a group.
type UpdateOptions struct {
	Cluster, Group string
	// Desired returns the group as it should be, given the group as
	// deployed: update-group applies the flags given to it (spec.Group.Update).
	Desired func(deployed spec.Group) spec.Group
	DryRun  bool
	// Yes replaces nodes, and removes (or replaces) the group's load
	// balancer, without asking (needed when not on a terminal).
	Yes bool
	// OnPlan, when set, is shown the plan before it is applied.
	OnPlan func(*Plan) error
}

// UpdateResult says what update-group did.
type UpdateResult struct {
	Plan    *Plan
	NoOp    bool // nothing would change
	Applied bool
	// Repaired lists what was missing from the deployed group and was put
	// back (a node configuration deleted from the bucket).
	Repaired []string
}

// UpdateGroup reads the group back as deployed, takes the desired group
// from it, renders that joined to the core's current outputs and applies
// the difference through a change set. It touches neither the core nor any
// other group. It holds the group's lease while it reads, plans and
// applies; a dry run changes nothing and takes none.
func (s *Groups) UpdateGroup(ctx context.Context, o UpdateOptions) (*UpdateResult, error) {
	if err := checkNames(o.Cluster, o.Group); err != nil {
		return nil, err
	}
	var res *UpdateResult
	update := func(ctx context.Context, in leased) (err error) {
		res, err = s.updateGroup(ctx, in, o)
		return err
	}
	if o.DryRun {
		in, err := s.leases.unleased(ctx, o.Cluster)
		if err != nil {
			return nil, err
		}
		return res, update(ctx, in)
	}
	err := s.leases.withLease(ctx, o.Cluster, lease.Group(o.Group), update)
	return res, err
}

func (s *Groups) updateGroup(ctx context.Context, in leased, o UpdateOptions) (*UpdateResult, error) {
	// The revision first: a change after it, even between the reads below
	// (by a tool that takes no lease), stops the update before it reverts
	// that change.
	revision, err := s.Stacks.Revision(ctx, names.GroupStack(o.Cluster, o.Group))
	if err != nil && !errors.Is(err, stacks.ErrNotFound) {
		return nil, err
	}
	st, err := s.find.groupStack(ctx, o.Cluster, o.Group)
	if err != nil {
		return nil, err
	}
	if err := usable(st, "group"); err != nil {
		return nil, err
	}
	if err := usable(in.core, "core"); err != nil {
		return nil, err
	}
	deployed, err := s.observer.observeGroup(ctx, o.Group, st)
	if err != nil {
		return nil, err
	}
	if deployed.Nodes < 0 {
		// No stack update brings back a resource deleted behind
		// CloudFormation's back.
		return nil, refused("group %q of cluster %q has no Auto Scaling group (deleted outside CloudFormation): an update cannot bring it back\n%s",
			o.Group, o.Cluster, recreateAdvice(o.Cluster, deployed.Spec))
	}
	desired := deployed.Spec
	if o.Desired != nil {
		desired = o.Desired(deployed.Spec)
	}
	desired.Name = o.Group
	if err := desired.Complete(o.Cluster); err != nil {
		return nil, err
	}
	r, err := s.plans.renderChecked(ctx, in.core, desired, &deployed.Spec)
	if err != nil {
		return nil, err
	}
	plan, err := s.plans.planGroup(ctx, deployed, desired, r)
	if err != nil {
		return nil, err
	}
	res := &UpdateResult{Plan: plan}
	var configs nodeConfigs // nil in a dry run: nothing tidied, nothing known
	if !o.DryRun {
		if configs, err = s.artifacts.tidyNodeConfigs(ctx, in, o.Group, st, ConfigGrace); err != nil {
			return nil, err
		}
	}
	if plan.unchanged {
		res.NoOp = true
		return res, s.artifacts.repairGroup(ctx, in.bucket, o.Group, r, configs, res)
	}
	stackSpec := specFrom(r, false)
	stackSpec.Revision = revision
	cs, err := s.Stacks.Plan(ctx, stackSpec)
	if err != nil {
		return nil, explain(err, o.Cluster, o.Group)
	}
	if cs.Empty {
		res.NoOp = true
		return res, s.artifacts.repairGroup(ctx, in.bucket, o.Group, r, configs, res)
	}
	plan.setChanges(cs.Changes)
	if o.OnPlan != nil {
		if err := o.OnPlan(plan); err != nil {
			s.Stacks.Discard(ctx, cs)
			return res, err
		}
	}
	if o.DryRun {
		return res, s.Stacks.Discard(ctx, cs)
	}
	for _, what := range groupAsks(o.Cluster, deployed, desired, plan) {
		if err := s.say.confirm(ctx, o.Yes, what); err != nil {
			s.Stacks.Discard(ctx, cs)
			return res, err
		}
	}
	if err := s.artifacts.uploadAll(ctx, in.bucket, r); err != nil {
		return res, err
	}
	if _, err := s.Stacks.Apply(ctx, cs); err != nil {
		return res, explain(err, o.Cluster, o.Group)
	}
	res.Applied = true
	return res, nil
}

// deleteStack deletes one stack; with retainFailed a DELETE_FAILED stack is
// deleted keeping the resources that failed to delete. resume is what to
// run when the wait is stopped.
func (s *Groups) deleteStack(ctx context.Context, name string, retainFailed bool, resume string) error {
	if retainFailed {
		s.say.printf("Deleting stack %s, keeping the resources that failed to delete\n", name)
		return explainResume(s.Stacks.DeleteRetaining(ctx, name, nil), resume)
	}
	s.say.printf("Deleting stack %s\n", name)
	return explainResume(s.Stacks.Delete(ctx, name), resume)
}

// RemoveOptions are the remove-group flags.
type RemoveOptions struct {
	Cluster, Group string
	Yes            bool
	// RetainFailed deletes a DELETE_FAILED stack keeping the resources that
	// could not be deleted (they are listed for the operator to remove).
	RetainFailed bool
}

// GroupRemoval is how remove-group ended.
type GroupRemoval struct {
	stacks.Outcome
	// AlreadyRemoved: the stack was deleted before this run (by an
	// interrupted remove-group); this run only cleaned up after it.
	AlreadyRemoved bool
}

// RemoveGroup deletes exactly one group's stack, then the group's node
// configurations, holding the group's lease. Re-run after an interruption
// it converges: a stack being deleted is followed to its end, one already
// deleted is cleaned up after.
func (s *Groups) RemoveGroup(ctx context.Context, o RemoveOptions) (*GroupRemoval, error) {
	if err := checkNames(o.Cluster, o.Group); err != nil {
		return nil, err
	}
	name := names.GroupStack(o.Cluster, o.Group)
	// Read first for the question; what is done is decided under the lease.
	st, err := s.find.groupStack(ctx, o.Cluster, o.Group)
	gone := errors.Is(err, stacks.ErrNotFound)
	if err != nil && !gone {
		return nil, err
	}
	if !gone && st.Status != "DELETE_IN_PROGRESS" {
		if err := s.say.confirm(ctx, o.Yes, fmt.Sprintf("remove group %q of cluster %q (stack %s)", o.Group, o.Cluster, st.Name)); err != nil {
			return nil, err
		}
	}
	var done *GroupRemoval
	err = s.leases.withLease(ctx, o.Cluster, lease.Group(o.Group), func(ctx context.Context, in leased) (err error) {
		done, err = s.removeGroup(ctx, in, o)
		return err
	})
	if errors.Is(err, errNoCore) && !gone {
		// No core, no bucket: nothing to hold a lease in or to clean.
		start := time.Now()
		if err := s.deleteStack(ctx, name, o.RetainFailed, s.resumeRemove(o)); err != nil {
			return nil, err
		}
		return &GroupRemoval{Outcome: stacks.Outcome{Stack: name, Status: "DELETE_COMPLETE", Duration: time.Since(start)}}, nil
	}
	return done, err
}

func (s *Groups) removeGroup(ctx context.Context, in leased, o RemoveOptions) (*GroupRemoval, error) {
	name := names.GroupStack(o.Cluster, o.Group)
	start := time.Now()
	done := &GroupRemoval{Outcome: stacks.Outcome{Stack: name, Status: "DELETE_COMPLETE"}}
	st, err := s.find.groupStack(ctx, o.Cluster, o.Group)
	switch {
	case errors.Is(err, stacks.ErrNotFound):
		// Deleted before this run: clean up after it, if there is anything
		// to clean or it was a group that existed.
		prev, err := s.Stacks.LastDeleted(ctx, name)
		if err != nil && !errors.Is(err, stacks.ErrNotFound) {
			return nil, err
		}
		left, err := s.artifacts.listNodeConfigs(ctx, in.bucket, names.GroupConfigPrefix(o.Group))
		if err != nil {
			return nil, err
		}
		if prev == nil && len(left[o.Group]) == 0 {
			return nil, notFound(stacks.ErrNotFound, o.Cluster, o.Group)
		}
		done.AlreadyRemoved = true
	case err != nil:
		return nil, err
	default:
		if err := s.deleteStack(ctx, st.Name, o.RetainFailed, s.resumeRemove(o)); err != nil {
			return nil, err
		}
	}
	done.Duration = time.Since(start)
	// The group's node configurations are of no use without it.
	_, err = s.artifacts.tidyNodeConfigs(ctx, in, o.Group, nil, 0)
	return done, err
}

// resumeRemove says what finishes a remove-group whose wait was stopped:
// running it again (the node configurations are removed after the stack).
func (s *Groups) resumeRemove(o RemoveOptions) string {
	return fmt.Sprintf("finish with: clusterctl remove-group -n %s -j %s (it waits for the deletion, then cleans up)", o.Group, o.Cluster)
}

// groupUpdate is an update of one group (or, group "", of the core),
// planned and ready to apply or discard: how update-core and apply update
// a stack.
type groupUpdate struct {
	cluster, group string
	plan           *Plan
	rendered       *render.Rendered
	changeSet      *stacks.Plan // nil when nothing changes
}

func (u *groupUpdate) noop() bool { return u.changeSet == nil }

// pruneGroup removes a group under its lease: how apply --prune removes
// one, with the same steps as remove-group.
func (s *Groups) pruneGroup(ctx context.Context, cluster, group string) error {
	return s.leases.withLease(ctx, cluster, lease.Group(group), func(ctx context.Context, in leased) error {
		_, err := s.removeGroup(ctx, in, RemoveOptions{Cluster: cluster, Group: group, Yes: true})
		return err
	})
}

// joinOf reads the core's join contract, refusing a core of another
// contract version (saying how to upgrade an older one) and one whose
// outputs are missing or not what they name.
func joinOf(core *stacks.Stack) (render.Join, error) {
	join, err := render.JoinFromOutputs(core.Outputs)
	var ce *render.ContractError
	switch {
	case errors.As(err, &ce) && ce.Older():
		return join, refused("core %q has join contract %s, older than this clusterctl's %s: upgrade it in place with `clusterctl update-core %s` (its groups keep running)", core.Name, ce.Core, ce.Want, core.Name)
	case errors.As(err, &ce):
		return join, refused("core %q has join contract %s, newer than this clusterctl's %s: use a newer clusterctl", core.Name, ce.Core, ce.Want)
	case err != nil:
		return join, refused("core %q cannot be joined: %v (changed outside clusterctl?): refusing to use it; see `clusterctl describe %s`", core.Name, err, core.Name)
	}
	return join, nil
}

// RenderGroup renders group g joined to the current outputs of the core of
// cluster: exactly what add-agents (or update-group) would deploy, node
// configuration included. It changes nothing.
func (s *Groups) RenderGroup(ctx context.Context, cluster string, g spec.Group) (*render.Rendered, error) {
	if err := spec.CheckClusterName(cluster); err != nil {
		return nil, err
	}
	if err := g.Complete(cluster); err != nil {
		return nil, err
	}
	core, err := s.find.getCore(ctx, cluster)
	if err != nil {
		return nil, err
	}
	join, err := s.plans.groupJoin(ctx, core, g)
	if err != nil {
		return nil, err
	}
	return s.plans.renderGroup(ctx, core, g, join)
}

// PlanAgents is add-agents --dry-run: every check add-agents makes before
// it uploads or creates anything (the core usable, the group free or, with
// ReplaceFailed, dead), and what it would deploy and upload. It changes
// nothing.
func (s *Groups) PlanAgents(ctx context.Context, cluster string, g spec.Group, o CreateOptions) (*Deployment, error) {
	r, dead, err := s.prepareAgents(ctx, cluster, g, o)
	if err != nil {
		return nil, err
	}
	d := DeploymentOf(r)
	if dead != nil {
		d.Replaces = dead.Status
	}
	return d, nil
}

// ContinueRollback continues a group's failed update rollback
// (UPDATE_ROLLBACK_FAILED) and waits for it, holding the group's lease
// (the core's for the core stack, group "").
func (s *Groups) ContinueRollback(ctx context.Context, cluster, group string) (*stacks.Stack, error) {
	if err := checkAnyNames(cluster, group); err != nil {
		return nil, err
	}
	scope := lease.Core()
	if group != "" {
		scope = lease.Group(group)
	}
	name := stackName(cluster, group)
	var st *stacks.Stack
	err := s.leases.withLease(ctx, cluster, scope, func(ctx context.Context, _ leased) (err error) {
		st, err = s.Stacks.Get(ctx, name)
		if err != nil {
			return notFound(err, cluster, group)
		}
		if st.Status != "UPDATE_ROLLBACK_FAILED" {
			return refused("stack %s is %s, not UPDATE_ROLLBACK_FAILED: there is no rollback to continue", name, st.Status)
		}
		s.say.printf("Continuing the update rollback of %s\n", name)
		st, err = s.Stacks.ContinueUpdateRollback(ctx, name)
		return explain(err, cluster, group)
	})
	return st, err
}
