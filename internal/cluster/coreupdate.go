package cluster

import (
	"context"
	"fmt"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
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

// ObserveCore reads the core of cluster back into the model.
func (s *Service) ObserveCore(ctx context.Context, cluster string) (*ObservedCore, error) {
	if err := spec.CheckClusterName(cluster); err != nil {
		return nil, err
	}
	st, err := s.getCore(ctx, cluster)
	if err != nil {
		return nil, err
	}
	return s.observeCore(ctx, st)
}

func (s *Service) observeCore(ctx context.Context, st *stacks.Stack) (*ObservedCore, error) {
	body, err := s.Stacks.Template(ctx, st.Name)
	if err != nil {
		return nil, err
	}
	c, err := render.ReadCore(render.Deployed{Template: body, Parameters: st.Parameters, Tags: st.Tags})
	if err != nil {
		return nil, fmt.Errorf("core %s: %w", st.Name, err)
	}
	managers, err := s.groupNodes(ctx, st)
	if err != nil {
		return nil, err
	}
	contract := st.Outputs[names.OutputContractVersion]
	if contract == "" {
		contract = "1" // the first cores said nothing when their outputs were missing
	}
	return &ObservedCore{Spec: c, Stack: st, Template: body, Managers: managers, Contract: contract}, nil
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
func (s *Service) UpdateCore(ctx context.Context, o CoreUpdateOptions) (*UpdateResult, error) {
	if err := spec.CheckClusterName(o.Cluster); err != nil {
		return nil, err
	}
	st, err := s.getCore(ctx, o.Cluster)
	if err != nil {
		return nil, err
	}
	if err := usable(st, "core"); err != nil {
		return nil, err
	}
	deployed, err := s.observeCore(ctx, st)
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
	u, err := s.planCoreUpdate(ctx, deployed, desired)
	if err != nil {
		return nil, err
	}
	res := &UpdateResult{Plan: u.plan, NoOp: u.noop()}
	if res.NoOp {
		return res, nil
	}
	if o.OnPlan != nil {
		if err := o.OnPlan(u.plan); err != nil {
			s.discard(ctx, u)
			return res, err
		}
	}
	if o.DryRun {
		return res, s.Stacks.Discard(ctx, u.changeSet)
	}
	if err := s.confirm(ctx, o.Yes, coreAsk(o.Cluster)); err != nil {
		s.discard(ctx, u)
		return res, err
	}
	if u.plan.NodesReplaced > 0 || deployed.Spec.ManagerCount() != desired.ManagerCount() {
		s.backupBeforeManagersChange(ctx, st)
	}
	if err := s.applyUpdate(ctx, u); err != nil {
		return res, err
	}
	res.Applied = true
	return res, nil
}

// planCoreUpdate plans the update of a deployed core to desired: the
// settings that change, what becomes of the managers, and, unless the
// rendered stack equals the deployed one, a change set. Apply it with
// applyUpdate, or discard it. What the core cannot become is refused
// (exit 2) before anything is planned.
func (s *Service) planCoreUpdate(ctx context.Context, deployed *ObservedCore, desired spec.Core) (*groupUpdate, error) {
	cluster := deployed.Stack.Name
	if err := desired.Complete(); err != nil {
		return nil, err
	}
	// A core deployed before operators gets the caller as its operator.
	if err := s.resolveOperators(ctx, &desired, deployed.Spec.Operators); err != nil {
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
	b, err := s.build(ctx)
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

// checkCoreChange refuses what a core cannot become: another VPC (its
// security groups, and every group's nodes, live in it), or fewer managers
// by more than one step (the Auto Scaling group would terminate them all
// at once; one step at a time, the swarm keeps a majority of the managers
// it had even if none of them were demoted in time).
func checkCoreChange(deployed *ObservedCore, desired spec.Core) error {
	if desired.VpcID != deployed.Spec.VpcID {
		return errs.AsUsage(&spec.FieldError{Path: "vpcId", Msg: fmt.Sprintf("a cluster's VPC cannot change (%s → %s): its security groups and every group's nodes are in it; create another cluster in that VPC", deployed.Spec.VpcID, desired.VpcID)})
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

// planCore compares a core as deployed with its desired spec rendered as
// r: the settings, the managers replaced (by what they are launched with)
// and those added or removed.
func (s *Service) planCore(ctx context.Context, deployed *ObservedCore, desired spec.Core, r *render.Rendered) (*Plan, error) {
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
