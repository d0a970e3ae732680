package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// AddAgents creates group g of cluster joined to the core's current
// outputs, waits, and returns the group's nodes.
func (s *Service) AddAgents(ctx context.Context, cluster string, g spec.Group, o CreateOptions) ([]query.Node, error) {
	r, dead, err := s.prepareAgents(ctx, cluster, g, o)
	if err != nil {
		return nil, err
	}
	if err := s.deployGroup(ctx, cluster, g, r, dead, o); err != nil {
		return nil, err
	}
	return query.ListNodes(ctx, s.EC2, cluster, g.Name)
}

// prepareAgents is everything add-agents does before it changes anything:
// the checks, the group rendered joined to the core, and the dead stack of
// the group that ReplaceFailed deletes first (nil when there is none).
func (s *Service) prepareAgents(ctx context.Context, cluster string, g spec.Group, o CreateOptions) (*render.Rendered, *stacks.Stack, error) {
	if err := spec.CheckClusterName(cluster); err != nil {
		return nil, nil, err
	}
	if err := g.Complete(cluster); err != nil {
		return nil, nil, err
	}
	core, err := s.getCore(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	if err := usable(core, "core"); err != nil {
		return nil, nil, err
	}
	return s.prepareNewGroup(ctx, core, g, o)
}

// prepareNewGroup checks that group g (completed and checked) may be created
// in the cluster of core and renders it joined to the core's current
// outputs. A stack of that name is refused unless it is dead and
// o.ReplaceFailed: it is then returned, for deployGroup to delete first.
func (s *Service) prepareNewGroup(ctx context.Context, core *stacks.Stack, g spec.Group, o CreateOptions) (*render.Rendered, *stacks.Stack, error) {
	cluster := core.Name
	name := names.GroupStack(cluster, g.Name)
	var dead *stacks.Stack
	existing, err := s.Stacks.Get(ctx, name)
	switch {
	case err == nil && o.ReplaceFailed && stacks.Classify(existing.Status) == stacks.FailedDead:
		dead = existing
	case err == nil && stacks.Classify(existing.Status) == stacks.FailedDead:
		return nil, nil, refused("group %q of cluster %q exists but is dead (stack %s, %s)\n%s", g.Name, cluster, name, existing.Status, Advice(existing, RefOf(existing), nil))
	case err == nil:
		return nil, nil, refused("group %q already exists in cluster %q (stack %s, status %s)", g.Name, cluster, name, existing.Status)
	case !errors.Is(err, stacks.ErrNotFound):
		return nil, nil, err
	}
	r, err := renderJoined(core, g, s.Version)
	if err != nil {
		return nil, nil, err
	}
	return r, dead, nil
}

// createGroup creates group g (completed and checked) joined to the
// core's current outputs and waits: how apply creates a group, with the
// same steps as add-agents.
func (s *Service) createGroup(ctx context.Context, core *stacks.Stack, g spec.Group, o CreateOptions) error {
	r, dead, err := s.prepareNewGroup(ctx, core, g, o)
	if err != nil {
		return err
	}
	return s.deployGroup(ctx, core.Name, g, r, dead, o)
}

// deployGroup deletes the dead stack a prepared group replaces, uploads
// its node configuration and creates its stack, waiting for it.
func (s *Service) deployGroup(ctx context.Context, cluster string, g spec.Group, r *render.Rendered, dead *stacks.Stack, o CreateOptions) error {
	if dead != nil {
		s.printf("Deleting dead group stack %s (%s) before creating it again\n", dead.Name, dead.Status)
		if err := s.Stacks.Delete(ctx, dead.Name); err != nil {
			return explain(err, cluster, g.Name)
		}
	}
	if err := s.uploadArtifacts(ctx, r.Parameters[names.OutputBucketName], r); err != nil {
		return err
	}
	s.printf("Creating group stack %s (%d x %s) in cluster %s\n", r.StackName, g.Desired(), g.InstanceType, cluster)
	if _, err := s.Stacks.Create(ctx, specFrom(r, o.NoRollback)); err != nil {
		return explain(err, cluster, g.Name)
	}
	return nil
}

// renderJoined renders a group joined to the core's current outputs.
func renderJoined(core *stacks.Stack, g spec.Group, version string) (*render.Rendered, error) {
	join, err := render.JoinFromOutputs(core.Outputs)
	var ce *render.ContractError
	switch {
	case errors.As(err, &ce) && ce.Older():
		return nil, refused("core %q has join contract %s, older than this clusterctl's %s: upgrade it in place with `clusterctl update-core %s` (its groups keep running)", core.Name, ce.Core, ce.Want, core.Name)
	case errors.As(err, &ce):
		return nil, refused("core %q has join contract %s, newer than this clusterctl's %s: use a newer clusterctl", core.Name, ce.Core, ce.Want)
	case err != nil:
		return nil, fmt.Errorf("reading the join contract of core %q: %w", core.Name, err)
	}
	r, err := render.Group(core.Name, g, join, version)
	if err != nil {
		return nil, errs.AsUsage(err)
	}
	return r, nil
}

// UpdateOptions say what update-group should make of a group.
type UpdateOptions struct {
	Cluster, Group string
	// Desired returns the group as it should be, given the group as
	// deployed: update-group applies the flags given to it (spec.Group.Update).
	Desired func(deployed spec.Group) spec.Group
	DryRun  bool
	// OnPlan, when set, is shown the plan before it is applied.
	OnPlan func(*Plan) error
}

// UpdateResult says what update-group did.
type UpdateResult struct {
	Plan    *Plan
	NoOp    bool // nothing would change
	Applied bool
}

// UpdateGroup reads the group back as deployed, takes the desired group
// from it, renders that joined to the core's current outputs and applies
// the difference through a change set. It touches neither the core nor any
// other group.
func (s *Service) UpdateGroup(ctx context.Context, o UpdateOptions) (*UpdateResult, error) {
	if err := checkNames(o.Cluster, o.Group); err != nil {
		return nil, err
	}
	core, err := s.getCore(ctx, o.Cluster)
	if err != nil {
		return nil, err
	}
	st, err := s.groupStack(ctx, o.Cluster, o.Group)
	if err != nil {
		return nil, err
	}
	if err := usable(st, "group"); err != nil {
		return nil, err
	}
	if err := usable(core, "core"); err != nil {
		return nil, err
	}
	deployed, err := s.observeGroup(ctx, o.Group, st)
	if err != nil {
		return nil, err
	}
	desired := deployed.Spec
	if o.Desired != nil {
		desired = o.Desired(deployed.Spec)
	}
	desired.Name = o.Group
	if err := desired.Complete(o.Cluster); err != nil {
		return nil, err
	}
	ch, err := s.planUpdate(ctx, core, deployed, desired)
	if err != nil {
		return nil, err
	}
	res := &UpdateResult{Plan: ch.plan, NoOp: ch.noop()}
	if res.NoOp {
		return res, nil
	}
	if o.OnPlan != nil {
		if err := o.OnPlan(ch.plan); err != nil {
			s.discard(ctx, ch)
			return res, err
		}
	}
	if o.DryRun {
		return res, s.Stacks.Discard(ctx, ch.changeSet)
	}
	if err := s.applyUpdate(ctx, ch); err != nil {
		return res, err
	}
	res.Applied = true
	return res, nil
}

// groupUpdate is an update of one group (or, group "", of the core),
// planned and ready to apply or discard: how update-group, update-core
// and apply update a stack.
type groupUpdate struct {
	cluster, group string
	plan           *Plan
	rendered       *render.Rendered
	changeSet      *stacks.Plan // nil when nothing changes
}

func (u *groupUpdate) noop() bool { return u.changeSet == nil }

// planUpdate plans the update of a deployed group to desired (completed
// and checked), joined to the core's current outputs: the settings that
// change, and, unless the rendered stack equals the deployed one, a change
// set with CloudFormation's resource actions.
func (s *Service) planUpdate(ctx context.Context, core *stacks.Stack, deployed *ObservedGroup, desired spec.Group) (*groupUpdate, error) {
	u := &groupUpdate{cluster: core.Name, group: desired.Name}
	r, err := renderJoined(core, desired, s.Version)
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
	cs, err := s.Stacks.Plan(ctx, specFrom(r, false))
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

// applyUpdate uploads the new node configuration, then executes the
// change set and waits.
func (s *Service) applyUpdate(ctx context.Context, u *groupUpdate) error {
	if u.noop() {
		return nil
	}
	if err := s.uploadArtifacts(ctx, u.rendered.Parameters[names.OutputBucketName], u.rendered); err != nil {
		return err
	}
	if _, err := s.Stacks.Apply(ctx, u.changeSet); err != nil {
		return explain(err, u.cluster, u.group)
	}
	return nil
}

// discard deletes a planned update's change set, even when ctx is done (a
// change set left behind clutters the stack); it is best effort.
func (s *Service) discard(ctx context.Context, u *groupUpdate) {
	if u == nil || u.noop() {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = s.Stacks.Discard(cctx, u.changeSet)
}

// deleteStack deletes one stack; with retainFailed a DELETE_FAILED stack is
// deleted keeping the resources that failed to delete.
func (s *Service) deleteStack(ctx context.Context, name string, retainFailed bool, cluster, group string) error {
	if retainFailed {
		s.printf("Deleting stack %s, keeping the resources that failed to delete\n", name)
		return explain(s.Stacks.DeleteRetaining(ctx, name, nil), cluster, group)
	}
	s.printf("Deleting stack %s\n", name)
	return explain(s.Stacks.Delete(ctx, name), cluster, group)
}

// RemoveOptions are the remove-group flags.
type RemoveOptions struct {
	Cluster, Group string
	Yes            bool
	// RetainFailed deletes a DELETE_FAILED stack keeping the resources that
	// could not be deleted (they are listed for the operator to remove).
	RetainFailed bool
}

// RemoveGroup deletes exactly one group's stack and reports how the
// deletion ended.
func (s *Service) RemoveGroup(ctx context.Context, o RemoveOptions) (*stacks.Outcome, error) {
	if err := checkNames(o.Cluster, o.Group); err != nil {
		return nil, err
	}
	st, err := s.groupStack(ctx, o.Cluster, o.Group)
	if err != nil {
		return nil, err
	}
	if err := s.confirm(ctx, o.Yes, fmt.Sprintf("remove group %q of cluster %q (stack %s)", o.Group, o.Cluster, st.Name)); err != nil {
		return nil, err
	}
	return s.removeGroup(ctx, o.Cluster, o.Group, o.RetainFailed)
}

// removeGroup deletes a group's stack and waits, then deletes the group's
// node configurations from the cluster bucket: how remove-group and apply
// --prune remove a group.
func (s *Service) removeGroup(ctx context.Context, cluster, group string, retainFailed bool) (*stacks.Outcome, error) {
	name := names.GroupStack(cluster, group)
	start := time.Now()
	if err := s.deleteStack(ctx, name, retainFailed, cluster, group); err != nil {
		return nil, err
	}
	done := &stacks.Outcome{Stack: name, Status: "DELETE_COMPLETE", Duration: time.Since(start)}
	// The group's node configurations are of no use without it.
	core, err := s.Stacks.Get(ctx, cluster)
	if err != nil || core.Outputs[names.OutputBucketName] == "" {
		return done, nil // no core, or no bucket: nothing to clean
	}
	if _, err := s.emptyBucket(ctx, core.Outputs[names.OutputBucketName], names.GroupConfigPrefix(group)); err != nil {
		return nil, fmt.Errorf("removing node configuration of group %q: %w", group, err)
	}
	return done, nil
}
