package cluster

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/preflight"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// CreateOptions shape how a stack is created.
type CreateOptions struct {
	NoRollback bool // keep a failed stack for debugging
	// ReplaceFailed deletes a dead stack of the same name (rolled back, or
	// kept failed by --no-rollback) before creating it again (groups only).
	ReplaceFailed bool
}

// Core runs the core's lifecycle: create, update, delete.
type Core struct {
	artifacts *Artifacts
	find      *Finder
	leases    *Leases
	observer  *Observer
	plans     *Plans
	requests  *Requests
	say       *Say
	CWLogs    LogsAPI
	EC2       EC2API
	S3        S3API
	SSM       SSMAPI
	Stacks    StackManager
	Version   string
}

// CreateCore creates the core stack of cluster name from its spec, waits
// for it and returns it. The VPC and subnets left out are resolved from
// the account (its default VPC, the VPC's subnets).
func (s *Core) CreateCore(ctx context.Context, name string, core spec.Core, o CreateOptions) (*stacks.Stack, error) {
	return s.createCore(ctx, name, core, o)
}

// createCore is how create-core and apply create a core: prepare, then
// create the stack and wait.
func (s *Core) createCore(ctx context.Context, name string, core spec.Core, o CreateOptions) (*stacks.Stack, error) {
	if err := spec.CheckClusterName(name); err != nil {
		return nil, err
	}
	if st, err := s.Stacks.Get(ctx, name); err == nil && creatingCore(st, name) {
		// A re-run of an interrupted create-core converges: it waits for
		// the creation, uploading the node agent as the first run would.
		s.say.printf("Core stack %s is being created (by an earlier create-core): waiting for it\n", name)
		sts, err := s.artifacts.resumeCreate(ctx, st, func(ctx context.Context) ([]*stacks.Stack, error) {
			st, err := s.Stacks.Wait(ctx, name)
			return []*stacks.Stack{st}, err
		})
		if err != nil {
			return nil, explain(err, name, "")
		}
		return sts[0], nil
	}
	r, set, err := s.prepareCore(ctx, name, core)
	if err != nil {
		return nil, err
	}
	subnets := spec.SplitList(r.Parameters[names.ParamSubnetIDs])
	s.say.printf("Creating core stack %s in %s (%s)\n", r.StackName, r.Parameters[names.ParamVpcID], query.Plural(len(subnets), "subnet"))
	st, err := s.artifacts.whileCreating(ctx, name, set, func(ctx context.Context, started func(string)) (*stacks.Stack, error) {
		return s.Stacks.CreateStarted(ctx, specFrom(r, o.NoRollback), started)
	})
	if err != nil {
		return nil, explain(err, name, "")
	}
	return st, nil
}

// prepareCore is everything create-core does before it changes anything:
// the core rendered, pinning the node agents it returns.
func (s *Core) prepareCore(ctx context.Context, name string, core spec.Core) (*render.Rendered, agentbin.Set, error) {
	if err := spec.CheckClusterName(name); err != nil {
		return nil, nil, err
	}
	if err := core.Complete(); err != nil {
		return nil, nil, err
	}
	existing, err := s.Stacks.Get(ctx, name)
	switch {
	case err == nil && isCoreOf(existing, name) && stacks.Classify(existing.Status) == stacks.InProgress:
		return nil, nil, refused("cluster %q already exists (stack status %s): follow the operation in progress with `clusterctl wait %s`", name, existing.Status, name)
	case err == nil && isCoreOf(existing, name):
		return nil, nil, refused("cluster %q already exists (stack status %s)", name, existing.Status)
	case err == nil:
		return nil, nil, refused("stack %s already exists and is %s (status %s): the core of cluster %q would need that name; choose another cluster name", name, stackKind(existing), existing.Status, name)
	case !errors.Is(err, stacks.ErrNotFound):
		return nil, nil, err
	}
	vpc, subnets, err := s.resolveNetwork(ctx, core.VpcID, core.SubnetIDs)
	if err != nil {
		return nil, nil, err
	}
	if err := s.preflightCore(ctx, core, vpc, subnets); err != nil {
		return nil, nil, err
	}
	core.VpcID, core.SubnetIDs = vpc, subnets
	set, err := s.artifacts.agents(ctx)
	if err != nil {
		return nil, nil, err
	}
	r, err := render.Core(name, core, BuildOf(s.Version, set))
	if err != nil {
		return nil, nil, errs.AsUsage(err)
	}
	return r, set, nil
}

// preflightCore checks the core's settings against the account before the
// stack is created. The control node runs in the first subnet, so its
// zone must offer the type; the others are for groups, which launch
// where their types are offered.
func (s *Core) preflightCore(ctx context.Context, core spec.Core, vpc string, subnets []string) error {
	rep, err := preflight.Check(ctx, s.EC2, s.SSM, preflight.Request{
		InstanceTypes: []string{core.InstanceType}, Image: core.ImageID, KeyName: core.KeyName,
		SubnetIDs: subnets, VpcID: vpc, Zones: preflight.SomeZone,
	})
	if err != nil {
		return err
	}
	for _, g := range rep.Unoffered {
		if slices.Contains(g.Subnets, subnets[0]) {
			return errs.Usage("pre-flight: instance type %s is not offered in %s, the zone of subnet %s where the control node runs: pass --subnet-ids starting with a subnet of another zone", core.InstanceType, g.Zone, subnets[0])
		}
	}
	return nil
}

// DeleteCoreOptions are the delete-core flags.
type DeleteCoreOptions struct {
	Name         string
	Cascade      bool
	Yes          bool
	RetainFailed bool // as RemoveOptions.RetainFailed, for the core stack
}

// CoreDeletion is how delete-core ended: the core stack's deletion and,
// with --cascade, each group stack's.
type CoreDeletion struct {
	stacks.Outcome
	Groups []stacks.Outcome
	// AlreadyDeleted: the core was deleted before this run (an interrupted
	// delete-core finished meanwhile); at most its bucket, which the stack
	// leaves behind, was left to delete.
	AlreadyDeleted bool
	// Bucket is the core's bucket, deleted after its stack ("" when it had
	// none, or it was gone already).
	Bucket string
}

func groupNamesOf(groups []query.Group) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g.Group)
	}
	return out
}

// specFrom turns a rendered template into a stack spec.
func specFrom(r *render.Rendered, noRollback bool) stacks.Spec {
	spec := stacks.Spec{Name: r.StackName, Template: r.Template, Tags: r.Tags, Capabilities: r.Capabilities, DisableRollback: noRollback}
	for _, k := range slices.Sorted(maps.Keys(r.Parameters)) {
		spec.Parameters = append(spec.Parameters, stacks.Param{Key: k, Value: r.Parameters[k]})
	}
	return spec
}

// PlanCore is create-core --dry-run: every check and lookup create-core
// makes before it creates anything (the name is free, the network
// resolved), and what it would deploy. It changes nothing.
func (s *Core) PlanCore(ctx context.Context, name string, core spec.Core) (*Deployment, error) {
	r, _, err := s.prepareCore(ctx, name, core)
	if err != nil {
		return nil, err
	}
	return DeploymentOf(r), nil
}
