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
	if dead != nil {
		s.printf("Deleting dead group stack %s (%s) before creating it again\n", dead.Name, dead.Status)
		if err := s.Stacks.Delete(ctx, dead.Name); err != nil {
			return nil, explain(err, cluster, g.Name)
		}
	}
	if err := s.uploadArtifacts(ctx, r.Parameters[names.OutputBucketName], r); err != nil {
		return nil, err
	}
	s.printf("Creating group stack %s (%d x %s) in cluster %s\n", r.StackName, g.Desired(), g.InstanceType, cluster)
	if _, err := s.Stacks.Create(ctx, specFrom(r, o.NoRollback)); err != nil {
		return nil, explain(err, cluster, g.Name)
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
	r, err := renderJoined(core, desired, s.Version)
	if err != nil {
		return nil, err
	}
	plan, err := s.planGroup(ctx, deployed, desired, r)
	if err != nil {
		return nil, err
	}
	if plan.unchanged {
		return &UpdateResult{Plan: plan, NoOp: true}, nil
	}
	cs, err := s.Stacks.Plan(ctx, specFrom(r, false))
	if err != nil {
		return nil, explain(err, o.Cluster, o.Group)
	}
	res := &UpdateResult{Plan: plan}
	if cs.Empty {
		res.NoOp = true
		return res, nil
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
	if err := s.uploadArtifacts(ctx, r.Parameters[names.OutputBucketName], r); err != nil {
		return res, err
	}
	if _, err := s.Stacks.Apply(ctx, cs); err != nil {
		return res, explain(err, o.Cluster, o.Group)
	}
	res.Applied = true
	return res, nil
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
	name := names.GroupStack(o.Cluster, o.Group)
	st, err := s.groupStack(ctx, o.Cluster, o.Group)
	if err != nil {
		return nil, err
	}
	if err := s.confirm(ctx, o.Yes, fmt.Sprintf("remove group %q of cluster %q (stack %s)", o.Group, o.Cluster, st.Name)); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := s.deleteStack(ctx, name, o.RetainFailed, o.Cluster, o.Group); err != nil {
		return nil, err
	}
	done := &stacks.Outcome{Stack: name, Status: "DELETE_COMPLETE", Duration: time.Since(start)}
	// The group's node configurations are of no use without it.
	core, err := s.Stacks.Get(ctx, o.Cluster)
	if err != nil || core.Outputs[names.OutputBucketName] == "" {
		return done, nil // no core, or no bucket: nothing to clean
	}
	if _, err := s.emptyBucket(ctx, core.Outputs[names.OutputBucketName], names.GroupConfigPrefix(o.Group)); err != nil {
		return nil, fmt.Errorf("removing node configuration of group %q: %w", o.Group, err)
	}
	return done, nil
}
