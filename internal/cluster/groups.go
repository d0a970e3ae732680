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
	if err := spec.CheckClusterName(cluster); err != nil {
		return nil, err
	}
	if err := g.Complete(cluster); err != nil {
		return nil, err
	}
	core, err := s.getCore(ctx, cluster)
	if err != nil {
		return nil, err
	}
	if err := usable(core, "core"); err != nil {
		return nil, err
	}
	name := names.GroupStack(cluster, g.Name)
	existing, err := s.Stacks.Get(ctx, name)
	switch {
	case err == nil && o.ReplaceFailed && stacks.Classify(existing.Status) == stacks.FailedDead:
		s.printf("Deleting dead group stack %s (%s) before creating it again\n", name, existing.Status)
		if err := s.Stacks.Delete(ctx, name); err != nil {
			return nil, explain(err, cluster, g.Name)
		}
	case err == nil && stacks.Classify(existing.Status) == stacks.FailedDead:
		return nil, refused("group %q of cluster %q exists but is dead (stack %s, %s)\n%s", g.Name, cluster, name, existing.Status, Advice(existing, RefOf(existing), nil))
	case err == nil:
		return nil, refused("group %q already exists in cluster %q (stack %s, status %s)", g.Name, cluster, name, existing.Status)
	case !errors.Is(err, stacks.ErrNotFound):
		return nil, err
	}
	r, err := s.renderChecked(ctx, core, g)
	if err != nil {
		return nil, err
	}
	if err := s.uploadArtifacts(ctx, r.Parameters[names.OutputBucketName], r); err != nil {
		return nil, err
	}
	s.printf("Creating group stack %s (%d x %s) in cluster %s\n", name, g.Desired(), g.InstanceType, cluster)
	if _, err := s.Stacks.Create(ctx, specFrom(r, o.NoRollback)); err != nil {
		return nil, explain(err, cluster, g.Name)
	}
	return query.ListNodes(ctx, s.EC2, cluster, g.Name)
}

// renderChecked renders a group joined to the core's current outputs,
// after checking its settings against the account (pre-flight): nothing is
// uploaded or created for a group that cannot launch.
func (s *Service) renderChecked(ctx context.Context, core *stacks.Stack, g spec.Group) (*render.Rendered, error) {
	join, err := render.JoinFromOutputs(core.Outputs)
	if err != nil {
		return nil, fmt.Errorf("reading the join contract of core %q: %w", core.Name, err)
	}
	if err := s.preflightGroup(ctx, join, g); err != nil {
		return nil, err
	}
	r, err := render.Group(core.Name, g, join, s.Version)
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
	// The revision first: a change after it, even between the reads below,
	// stops the update before it reverts that change.
	revision, err := s.Stacks.Revision(ctx, names.GroupStack(o.Cluster, o.Group))
	if err != nil && !errors.Is(err, stacks.ErrNotFound) {
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
	r, err := s.renderChecked(ctx, core, desired)
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
	stackSpec := specFrom(r, false)
	stackSpec.Revision = revision
	cs, err := s.Stacks.Plan(ctx, stackSpec)
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
	// The group's node configurations are of no use without it. They are
	// removed from the bucket the core owns, whatever its output says.
	core, err := s.Stacks.Get(ctx, o.Cluster)
	if err != nil {
		return done, nil // no core: nothing to clean
	}
	bucket, err := s.coreBucket(ctx, core)
	if err != nil || bucket == "" {
		return done, err
	}
	if _, err := s.emptyBucket(ctx, bucket, names.GroupConfigPrefix(o.Group)); err != nil {
		return nil, fmt.Errorf("removing node configuration of group %q: %w", o.Group, err)
	}
	return done, nil
}
