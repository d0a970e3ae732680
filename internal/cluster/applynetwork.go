package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/network"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// NetworkPlan is what apply does to the network a file declares: create
// it (with what it is billed by the hour, as create-network's plan says)
// or leave it as it is. apply never updates or deletes a network: a
// network's settings are its VPC's shape, and other clusters may use it.
type NetworkPlan struct {
	StackPlan
	Network    string           `json:"network"`
	Billed     []network.Billed `json:"billedHourly,omitempty"`
	MonthlyUSD float64          `json:"monthlyUsd,omitempty"`

	plan *network.Plan // the network to create
}

// networks is create-network's manager, on the run's stacks.
func (s *Applier) networks() *network.Manager {
	return &network.Manager{Stacks: s.Stacks, Build: render.Build{Version: s.core.Version}}
}

// planNetwork plans the network the file declares (nil when it declares
// none): created when its stack does not exist; left alone when the
// stack is clusterctl's network of that name, by its tags, and what the
// file says of it is what it is. A network that differs is refused, as
// is a stack of that name that is not the network's. A file that only
// names a network (core.network) for a new core needs it to exist now.
func (s *Applier) planNetwork(ctx context.Context, c spec.Cluster, obs *Observed) (*NetworkPlan, error) {
	if c.Network == nil {
		if obs == nil && c.Core.Network != "" {
			if _, err := network.Read(ctx, s.Stacks, c.Core.Network); err != nil {
				return nil, networkRefusal(fmt.Errorf("core.network: %w", err))
			}
		}
		return nil, nil
	}
	plan, err := s.networks().Plan(*c.Network)
	if err != nil {
		return nil, err
	}
	name := plan.Network.Name
	np := &NetworkPlan{StackPlan: StackPlan{Plan: Plan{Stack: plan.Stack, Settings: []spec.Change{}, Changes: []ResourceChange{}}}, Network: name}
	st, err := s.Stacks.Get(ctx, plan.Stack)
	switch {
	case errors.Is(err, stacks.ErrNotFound):
		if obs != nil && obs.Spec.Core.Network == name {
			return np, refused("network %q that cluster %q runs in has no stack %s: it was deleted under the cluster; delete the cluster (clusterctl delete-core %s --cascade) before creating the network again", name, c.Name, plan.Stack, c.Name)
		}
		np.Action, np.plan = ActionCreate, plan
		np.Settings = spec.Diff(spec.Network{Name: name}, plan.Network)
		np.Billed, np.MonthlyUSD = plan.Billed, plan.MonthlyUSD
		n := plan.Network
		np.Note = fmt.Sprintf("network: %s over %d zones, NAT %s, about $%.2f/month", n.Cidr, n.ZoneCount(), n.Nat, plan.MonthlyUSD)
		return np, nil
	case err != nil:
		return np, err
	case !network.Owned(st, name):
		return np, refused("stack %s exists and is %s, not network %q of clusterctl's: name the file's network otherwise", st.Name, networkStackKind(st), name)
	}
	have, _, err := network.Observe(ctx, s.Stacks, name)
	if err != nil {
		return np, networkRefusal(err)
	}
	if diff := spec.Diff(have, plan.Network); len(diff) > 0 {
		var what []string
		for _, d := range diff {
			what = append(what, fmt.Sprintf("%s %s → %s", d.Path, d.OldText, d.NewText))
		}
		return np, refused("network %q (stack %s) is not what the file declares (%s), and apply does not change a network: make the file's network: say what it is (clusterctl export shows it), or name another network to create", name, plan.Stack, strings.Join(what, ", "))
	}
	np.Action, np.Note = ActionUnchanged, "network: "+have.Cidr
	return np, nil
}

// networkStackKind says what a stack named as a network's is, when it is
// not that network.
func networkStackKind(st *stacks.Stack) string {
	if st.Tags[names.TagRole] == names.RoleNetwork {
		return fmt.Sprintf("network %q's by its tags (%s=%s)", st.Tags[names.TagNetwork], names.TagNetwork, st.Tags[names.TagNetwork])
	}
	return stackKind(st)
}

// networkRefusal keeps a network's refusal one of this package's (exit 1).
func networkRefusal(err error) error {
	if errors.Is(err, network.ErrRefused) {
		return refused("%s", errs.Message(err))
	}
	return err
}

// inheritNetwork completes a deployed core's desired settings with what
// the file leaves out of its network, as of its VPC: the network it
// joined, and that network's public subnets.
func inheritNetwork(want *spec.Core, deployed spec.Core) {
	if want.VpcID != deployed.VpcID {
		return
	}
	if want.Network == "" {
		want.Network = deployed.Network
	}
	if want.Network != "" && want.Network == deployed.Network && len(want.PublicSubnetIDs) == 0 {
		want.PublicSubnetIDs = deployed.PublicSubnetIDs
	}
}

// createNetwork creates the planned network before anything else: the
// core joins it. When it fails, nothing else starts (false).
func (s *Applier) createNetwork(ctx context.Context, p *ClusterPlan) bool {
	np := p.Network
	if np == nil || np.Action != ActionCreate {
		return true
	}
	s.say.printf("Creating network stack %s\n", np.Stack)
	np.run(func() error {
		_, err := s.networks().Create(ctx, np.plan.Network)
		return err
	})
	if np.err == nil {
		return true
	}
	for _, sp := range p.Stacks {
		if sp.Changing() {
			sp.Result = ResultNotStarted
		}
	}
	return false
}

// all is every stack of the plan: the network first, when the file
// declares one, then the core and the groups.
func (p *ClusterPlan) all() []*StackPlan {
	if p.Network == nil {
		return p.Stacks
	}
	return append([]*StackPlan{&p.Network.StackPlan}, p.Stacks...)
}

// exportNetwork declares the network the core joined, read back from its
// stack, and leaves out of the core what it took from the network's
// outputs (its VPC, its private and public subnets): applied, the file
// finds the network as it is and the core unchanged. A network whose
// stack is gone or is not clusterctl's stays a name (core.network), with
// the core's VPC and subnets.
func (s *Observer) exportNetwork(ctx context.Context, c *spec.Cluster) error {
	core := &c.Core
	if core.Network == "" {
		return nil
	}
	n, out, err := network.Observe(ctx, s.Stacks, core.Network)
	if errors.Is(err, network.ErrRefused) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading network %s: %w", core.Network, err)
	}
	c.Network = &n
	if core.VpcID == out.VpcID {
		core.VpcID = ""
	}
	if slices.Equal(core.SubnetIDs, out.PrivateSubnetIDs) {
		core.SubnetIDs = nil
	}
	if slices.Equal(core.PublicSubnetIDs, out.PublicSubnetIDs) {
		core.PublicSubnetIDs = nil
	}
	return nil
}
