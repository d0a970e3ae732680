package cluster

import (
	"context"
	"fmt"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// ObservedCore is a core as deployed.
type ObservedCore struct {
	Spec     spec.Core
	Stack    *stacks.Stack
	Template []byte // as deployed
	// Managers counts the instances of the managers' Auto Scaling group;
	// -1 when there is none (a core of join contract 1 has one control
	// node instead).
	Managers int
	// Contract is the join contract version of the core's outputs.
	Contract string
}

// Legacy reports whether the core predates the managers' Auto Scaling
// group (join contract 1: one control node).
func (c *ObservedCore) Legacy() bool {
	return render.ContractOlder(c.Contract, render.ManagersContract)
}

// CoreUpdateOptions say what update-core should make of a core.
type CoreUpdateOptions struct {
	Cluster string
	// Desired returns the core as it should be, given the core as
	// deployed: update-core applies the flags given to it
	// (spec.Core.Update).
	Desired func(deployed spec.Core) spec.Core
	DryRun  bool
	// Yes applies the plan without asking (needed when not on a terminal).
	Yes bool
	// OnPlan, when set, is shown the plan before it is applied.
	OnPlan func(*Plan) error
}

// UpdateCore reads the core back as deployed, takes the desired core from
// it, and applies the difference through a change set: the managers are
// replaced one at a time, each new one a Reachable manager of the swarm
// before the next old one is drained, demoted and removed. A core of join
// contract 1 is brought to the current contract in place. No group is
// touched: a manager replaced or added changes nothing a group receives.
func (s *Core) UpdateCore(ctx context.Context, o CoreUpdateOptions) (*UpdateResult, error) {
	if err := spec.CheckClusterName(o.Cluster); err != nil {
		return nil, err
	}
	st, err := s.find.getCore(ctx, o.Cluster)
	if err != nil {
		return nil, err
	}
	if err := usable(st, "core"); err != nil {
		return nil, err
	}
	deployed, err := s.observer.observeCore(ctx, st)
	if err != nil {
		return nil, err
	}
	if render.ContractOlder(render.ContractVersion, deployed.Contract) {
		return nil, refused("core %s has join contract %s, newer than this clusterctl's %s: update it with a newer clusterctl", o.Cluster, deployed.Contract, render.ContractVersion)
	}
	desired := deployed.Spec
	if o.Desired != nil {
		desired = o.Desired(deployed.Spec)
	}
	u, err := s.plans.planCoreUpdate(ctx, deployed, desired)
	if err != nil {
		return nil, err
	}
	res := &UpdateResult{Plan: u.plan, NoOp: u.noop()}
	if res.NoOp {
		return res, nil
	}
	if o.OnPlan != nil {
		if err := o.OnPlan(u.plan); err != nil {
			s.plans.discard(ctx, u)
			return res, err
		}
	}
	if o.DryRun {
		return res, s.Stacks.Discard(ctx, u.changeSet)
	}
	if err := s.say.confirm(ctx, o.Yes, coreAsk(o.Cluster)); err != nil {
		s.plans.discard(ctx, u)
		return res, err
	}
	if u.plan.NodesReplaced > 0 || deployed.Spec.ManagerCount() != desired.ManagerCount() {
		s.requests.backupBeforeManagersChange(ctx, st)
	}
	if err := s.plans.applyUpdate(ctx, u); err != nil {
		return res, err
	}
	res.Applied = true
	return res, nil
}

// checkCoreChange refuses what a core cannot become: another VPC (its
// security groups, and every group's nodes, live in it), or fewer managers
// by more than one step (the Auto Scaling group would terminate them all
// at once; one step at a time, the swarm keeps a majority of the managers
// it had even if none of them were demoted in time).
func checkCoreChange(deployed *ObservedCore, desired spec.Core) error {
	if desired.VpcID != deployed.Spec.VpcID {
		return errs.AsUsage(&spec.FieldError{Path: "vpcId", Msg: fmt.Sprintf("a cluster's VPC cannot change (%s → %s): its security groups and every group's nodes are in it; create another cluster in that VPC", deployed.Spec.VpcID, desired.VpcID)})
	}
	if desired.Network != deployed.Spec.Network {
		return errs.AsUsage(&spec.FieldError{Path: "network", Msg: fmt.Sprintf("a cluster's network cannot change (%s → %s): its nodes run in the network's VPC; create another cluster in that network", orNone(deployed.Spec.Network), orNone(desired.Network))})
	}
	from, to := deployed.Spec.ManagerCount(), desired.ManagerCount()
	if to < from && from-to > 2 {
		return managersError("%d → %d removes %d of %d managers at once: go down one step at a time (%d → %d, then %d → %d), so the swarm keeps a majority of its managers at every step", from, to, from-to, from, from, from-2, from-2, to)
	}
	return nil
}

func managersError(format string, args ...any) error {
	return errs.AsUsage(&spec.FieldError{Path: "managers", Msg: fmt.Sprintf(format, args...)})
}
