// Package network manages clusterctl's network stacks: a VPC with public
// and private subnets, NAT or VPC endpoints, that cores join by reading its
// outputs (create-core --network), as groups join a core. It creates,
// reads and deletes them through internal/stacks; the template is
// internal/render's.
//
// A stack is a network of clusterctl's when its name is <name>-network and
// its tags say clusterctl:role=network and clusterctl:network=<name>. A
// core joined to a network carries clusterctl:network=<name> too: that is
// how delete-network finds the cores that still use it.
package network

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// ErrRefused marks an operation refused because of the state it met: the
// network is missing, not clusterctl's, or still used. Exit code 1.
var ErrRefused = errors.New("refused")

type refusal struct{ msg string }

func (r *refusal) Error() string        { return r.msg }
func (r *refusal) Is(target error) bool { return target == ErrRefused }

func refused(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

// Stacks is what a Manager asks of CloudFormation; *stacks.Manager
// satisfies it.
type Stacks interface {
	Get(ctx context.Context, name string) (*stacks.Stack, error)
	List(ctx context.Context) ([]stacks.Stack, error)
	Create(ctx context.Context, spec stacks.Spec) (*stacks.Stack, error)
	Delete(ctx context.Context, name string) error
}

// Manager creates, reads and deletes network stacks.
type Manager struct {
	Stacks Stacks
	Build  render.Build // the version that tags what it creates
	// Out takes the plan and what is done (stderr); nil: nothing said.
	Out io.Writer
	// Confirm asks the operator (nil: deletion needs no question). It
	// returns an error when the answer is no or cannot be had.
	Confirm func(ctx context.Context, question string) error
}

func (m *Manager) printf(format string, args ...any) {
	if m.Out != nil {
		fmt.Fprintf(m.Out, format, args...)
	}
}

// Plan is what create-network is about to create, and what it costs by the
// hour. Its JSON keys are a public interface (create-network --dry-run -o json).
type Plan struct {
	Stack      string            `json:"stack"`
	Network    spec.Network      `json:"network"`
	Parameters map[string]string `json:"parameters"`
	Tags       map[string]string `json:"tags"`
	Billed     []Billed          `json:"billedHourly"`
	MonthlyUSD float64           `json:"monthlyUsd"`
	rendered   *render.Rendered
}

// Plan completes n and renders its stack: what Create would create.
func (m *Manager) Plan(n spec.Network) (*Plan, error) {
	if err := n.Complete(); err != nil {
		return nil, err
	}
	r, err := render.Network(n, m.Build)
	if err != nil {
		return nil, errs.AsUsage(err)
	}
	billed := Billing(n)
	return &Plan{Stack: r.StackName, Network: n, Parameters: r.Parameters, Tags: r.Tags,
		Billed: billed, MonthlyUSD: Monthly(billed), rendered: r}, nil
}

// WritePlan says what a plan creates and what is billed by the hour.
func WritePlan(w io.Writer, p *Plan) {
	n := p.Network
	fmt.Fprintf(w, "Network %s (stack %s): VPC %s over %d %s, a public and a private subnet in each, NAT %s\n",
		n.Name, p.Stack, n.Cidr, n.ZoneCount(), plural(n.ZoneCount(), "zone", "zones"), n.Nat)
	if len(p.Billed) == 0 {
		fmt.Fprintf(w, "Billed by the hour: nothing\n")
		return
	}
	fmt.Fprintf(w, "Billed by the hour (list prices of us-east-1, traffic extra):\n")
	for _, b := range p.Billed {
		fmt.Fprintf(w, "  %d %s: $%.3f/hour, about $%.2f/month\n", b.Count, b.What, b.HourlyUSD, b.MonthlyUSD)
	}
	fmt.Fprintf(w, "  total: about $%.2f/month\n", p.MonthlyUSD)
}

// Create creates network n's stack after saying its plan, waits for it
// and returns it.
func (m *Manager) Create(ctx context.Context, n spec.Network) (*stacks.Stack, error) {
	p, err := m.Plan(n)
	if err != nil {
		return nil, err
	}
	switch st, err := m.Stacks.Get(ctx, p.Stack); {
	case err == nil && isNetwork(st, n.Name):
		return nil, refused("network %q already exists (stack %s, status %s)", n.Name, st.Name, st.Status)
	case err == nil:
		return nil, refused("stack %s already exists and is not network %q's (its tags say otherwise): choose another network name", st.Name, n.Name)
	case !errors.Is(err, stacks.ErrNotFound):
		return nil, err
	}
	if m.Out != nil {
		WritePlan(m.Out, p)
	}
	r := p.rendered
	s := stacks.Spec{Name: r.StackName, Template: r.Template, Tags: r.Tags, Capabilities: r.Capabilities}
	for _, k := range slices.Sorted(maps.Keys(r.Parameters)) {
		s.Parameters = append(s.Parameters, stacks.Param{Key: k, Value: r.Parameters[k]})
	}
	return m.Stacks.Create(ctx, s)
}

// isNetwork tells whether st is network name's stack, by its name and tags.
func isNetwork(st *stacks.Stack, name string) bool {
	return st.Name == names.NetworkStack(name) && st.Tags[names.TagRole] == names.RoleNetwork && st.Tags[names.TagNetwork] == name
}

// Outputs are a network's join contract, read from its stack.
type Outputs struct {
	Name             string   `json:"name"`
	Stack            string   `json:"stack"`
	Status           string   `json:"status"`
	VpcID            string   `json:"vpcId"`
	VpcCidr          string   `json:"vpcCidr"`
	PublicSubnetIDs  []string `json:"publicSubnetIds"`
	PrivateSubnetIDs []string `json:"privateSubnetIds"`
	Zones            []string `json:"zones"`
	Nat              string   `json:"nat"`
}

var (
	vpcRE    = regexp.MustCompile(`^vpc-[0-9a-f]{8,17}$`)
	subnetRE = regexp.MustCompile(`^subnet-[0-9a-f]{8,17}$`)
)

// Getter is what reading a network asks of CloudFormation.
type Getter interface {
	Get(ctx context.Context, name string) (*stacks.Stack, error)
}

// Get reads network name: see Read.
func (m *Manager) Get(ctx context.Context, name string) (*Outputs, error) {
	return Read(ctx, m.Stacks, name)
}

// Read reads network name: its stack must be clusterctl's network of that
// name (by its tags) and usable, its outputs whole. What create-core
// --network joins.
func Read(ctx context.Context, api Getter, name string) (*Outputs, error) {
	st, err := get(ctx, api, name)
	if err != nil {
		return nil, err
	}
	return outputsOf(st)
}

// Observe reads network name as Read does, and its settings back into the
// spec that create-network (or a cluster file) gave: what apply compares
// a file's network: with, and export writes.
func Observe(ctx context.Context, api Getter, name string) (spec.Network, *Outputs, error) {
	st, err := get(ctx, api, name)
	if err != nil {
		return spec.Network{}, nil, err
	}
	out, err := outputsOf(st)
	if err != nil {
		return spec.Network{}, nil, err
	}
	zones := len(out.Zones)
	n := spec.Network{Name: name, Zones: &zones, Cidr: out.VpcCidr, Nat: out.Nat}
	// The operator's tags are the stack's but for clusterctl's own and
	// those AWS adds: neither may be given.
	for k, v := range st.Tags {
		if l := strings.ToLower(k); !strings.HasPrefix(l, names.TagPrefix) && !strings.HasPrefix(l, "aws:") {
			if n.Tags == nil {
				n.Tags = spec.Tags{}
			}
			n.Tags[k] = v
		}
	}
	n.Default()
	return n, out, nil
}

// get reads network name's stack: clusterctl's network of that name, by
// its tags, and usable.
func get(ctx context.Context, api Getter, name string) (*stacks.Stack, error) {
	if err := spec.CheckNetworkName(name); err != nil {
		return nil, err
	}
	st, err := api.Get(ctx, names.NetworkStack(name))
	if errors.Is(err, stacks.ErrNotFound) {
		return nil, refused("network %q not found (create it with: clusterctl create-network %s)", name, name)
	}
	if err != nil {
		return nil, err
	}
	if !isNetwork(st, name) {
		return nil, refused("stack %s is not network %q of clusterctl's (its tags are not %s=%s, %s=%s)", st.Name, name, names.TagRole, names.RoleNetwork, names.TagNetwork, name)
	}
	switch c := st.Class(); {
	case c == stacks.InProgress:
		return nil, refused("network %q is not ready (stack %s is %s): wait until it is done (aws cloudformation describe-stacks --stack-name %s) and run again", name, st.Name, st.Status, st.Name)
	case c == stacks.FailedDead:
		return nil, refused("network %q is not ready (stack %s is %s): its creation failed; delete it (clusterctl delete-network %s) and create it again", name, st.Name, st.Status, name)
	case !c.OK():
		return nil, refused("network %q is not ready (stack %s is %s)", name, st.Name, st.Status)
	}
	return st, nil
}

// Owned tells whether st is network name's stack, by its name and tags.
func Owned(st *stacks.Stack, name string) bool { return isNetwork(st, name) }

// outputsOf reads a network stack's outputs, checking each: they become
// parameters of a core.
func outputsOf(st *stacks.Stack) (*Outputs, error) {
	o := st.Outputs
	out := &Outputs{Name: o[names.OutputNetworkName], Stack: st.Name, Status: st.Status, VpcID: o[names.OutputNetworkVpcID],
		VpcCidr: o[names.OutputVpcCidr], PublicSubnetIDs: spec.SplitList(o[names.OutputPublicSubnetIDs]),
		PrivateSubnetIDs: spec.SplitList(o[names.OutputPrivateSubnetIDs]), Zones: spec.SplitList(o[names.OutputZones]), Nat: o[names.OutputNat]}
	bad := func(output, value string) error {
		return refused("network stack %s has an unusable output %s = %q", st.Name, output, value)
	}
	if out.Name != st.Tags[names.TagNetwork] {
		return nil, bad(names.OutputNetworkName, out.Name)
	}
	if !vpcRE.MatchString(out.VpcID) {
		return nil, bad(names.OutputNetworkVpcID, out.VpcID)
	}
	for output, ids := range map[string][]string{names.OutputPublicSubnetIDs: out.PublicSubnetIDs, names.OutputPrivateSubnetIDs: out.PrivateSubnetIDs} {
		if len(ids) == 0 || slices.ContainsFunc(ids, func(id string) bool { return !subnetRE.MatchString(id) }) {
			return nil, bad(output, strings.Join(ids, ","))
		}
	}
	return out, nil
}

// Users are the clusters whose cores joined network name, by their tags.
func (m *Manager) Users(ctx context.Context, name string) ([]string, error) {
	all, err := m.Stacks.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, st := range all {
		if st.Tags[names.TagRole] == names.RoleCore && st.Tags[names.TagNetwork] == name {
			out = append(out, st.Tags[names.TagCluster])
		}
	}
	slices.Sort(out)
	return out, nil
}

// Delete deletes network name's stack and waits. It refuses while a core
// uses the network (its nodes and security groups are in the VPC), and a
// stack of that name that is not the network's.
func (m *Manager) Delete(ctx context.Context, name string) (*Outputs, error) {
	if err := spec.CheckNetworkName(name); err != nil {
		return nil, err
	}
	stack := names.NetworkStack(name)
	st, err := m.Stacks.Get(ctx, stack)
	if errors.Is(err, stacks.ErrNotFound) {
		return nil, refused("network %q not found", name)
	}
	if err != nil {
		return nil, err
	}
	if !isNetwork(st, name) {
		return nil, refused("stack %s is not network %q of clusterctl's (its tags are not %s=%s, %s=%s): it was left untouched", stack, name, names.TagRole, names.RoleNetwork, names.TagNetwork, name)
	}
	users, err := m.Users(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(users) > 0 {
		return nil, refused("network %q is used by %s %s: delete %s first (clusterctl delete-core %s --cascade)",
			name, plural(len(users), "cluster", "clusters"), strings.Join(users, ", "), plural(len(users), "it", "them"), users[0])
	}
	if m.Confirm != nil {
		if err := m.Confirm(ctx, fmt.Sprintf("delete network %q (stack %s, VPC %s)", name, stack, st.Outputs[names.OutputNetworkVpcID])); err != nil {
			return nil, err
		}
	}
	m.printf("Deleting stack %s\n", stack)
	if err := m.Stacks.Delete(ctx, stack); err != nil {
		return nil, err
	}
	out := &Outputs{Name: name, Stack: stack, Status: "DELETE_COMPLETE", VpcID: st.Outputs[names.OutputNetworkVpcID]}
	return out, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
