package network

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// fakeStacks holds stacks by name and records what was created and deleted.
type fakeStacks struct {
	stacks           map[string]stacks.Stack
	created, deleted []string
}

func (f *fakeStacks) Get(_ context.Context, name string) (*stacks.Stack, error) {
	st, ok := f.stacks[name]
	if !ok {
		return nil, stacks.ErrNotFound
	}
	return &st, nil
}

func (f *fakeStacks) List(context.Context) ([]stacks.Stack, error) {
	var out []stacks.Stack
	for _, st := range f.stacks {
		out = append(out, st)
	}
	return out, nil
}

func (f *fakeStacks) Create(_ context.Context, s stacks.Spec) (*stacks.Stack, error) {
	f.created = append(f.created, s.Name)
	st := stacks.Stack{Name: s.Name, Status: "CREATE_COMPLETE", Tags: s.Tags}
	return &st, nil
}

func (f *fakeStacks) Delete(_ context.Context, name string) error {
	f.deleted = append(f.deleted, name)
	return nil
}

func networkStack(name string) stacks.Stack {
	return stacks.Stack{Name: names.NetworkStack(name), Status: "CREATE_COMPLETE",
		Tags: map[string]string{names.TagRole: names.RoleNetwork, names.TagNetwork: name},
		Outputs: map[string]string{
			names.OutputNetworkName: name, names.OutputNetworkVpcID: "vpc-0123456789abcdef0", names.OutputVpcCidr: "10.0.0.0/16",
			names.OutputPublicSubnetIDs:  "subnet-0000000000000000a,subnet-0000000000000000b",
			names.OutputPrivateSubnetIDs: "subnet-0000000000000000c,subnet-0000000000000000d", names.OutputNat: "single",
		}}
}

func coreStack(cluster, network string) stacks.Stack {
	return stacks.Stack{Name: cluster, Status: "CREATE_COMPLETE",
		Tags: map[string]string{names.TagCluster: cluster, names.TagRole: names.RoleCore, names.TagNetwork: network}}
}

var build = render.Build{Version: "1.2.3"}

// delete-network deletes only clusterctl's network of that name, and only
// when no core uses it.
func TestDelete(t *testing.T) {
	foreign := networkStack("net")
	foreign.Tags = map[string]string{"team": "other"}
	tests := []struct {
		name    string
		stacks  []stacks.Stack
		want    string // part of the refusal; "" when deleted
		refused bool
	}{
		{"free", []stacks.Stack{networkStack("net"), coreStack("other", "elsewhere")}, "", false},
		{"used", []stacks.Stack{networkStack("net"), coreStack("shop", "net"), coreStack("blog", "net")}, `network "net" is used by clusters blog, shop: delete them first`, true},
		{"missing", nil, `network "net" not found`, true},
		{"not ours", []stacks.Stack{foreign}, "is not network \"net\" of clusterctl's", true},
	}
	for _, tt := range tests {
		f := &fakeStacks{stacks: map[string]stacks.Stack{}}
		for _, st := range tt.stacks {
			f.stacks[st.Name] = st
		}
		m := Manager{Stacks: f, Build: build}
		_, err := m.Delete(context.Background(), "net")
		switch {
		case !tt.refused && (err != nil || len(f.deleted) != 1 || f.deleted[0] != "net-network"):
			t.Errorf("%s: %v, deleted %v", tt.name, err, f.deleted)
		case tt.refused && (err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.want) || len(f.deleted) > 0):
			t.Errorf("%s: error %v, want a refusal with %q; deleted %v", tt.name, err, tt.want, f.deleted)
		}
	}
}

// create-network refuses a name taken, by its network or by another stack,
// and bad input before it asks AWS anything.
func TestCreate(t *testing.T) {
	f := &fakeStacks{stacks: map[string]stacks.Stack{"net-network": networkStack("net"), "x-network": {Name: "x-network"}}}
	m := Manager{Stacks: f, Build: build}
	for name, want := range map[string]string{"net": `network "net" already exists`, "x": "stack x-network already exists and is not network \"x\"'s"} {
		if _, err := m.Create(context.Background(), spec.Network{Name: name}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	if _, err := m.Create(context.Background(), spec.Network{Name: "new", Nat: "double"}); err == nil || !strings.Contains(err.Error(), "invalid NAT mode") {
		t.Errorf("bad NAT: %v", err)
	}
	if _, err := m.Create(context.Background(), spec.Network{Name: "new"}); err != nil || len(f.created) != 1 || f.created[0] != "new-network" {
		t.Errorf("create: %v, created %v", err, f.created)
	}
}

// What a core joins is checked: the stack clusterctl's network, usable,
// its outputs of the shape of what they name.
func TestRead(t *testing.T) {
	ok := networkStack("net")
	failed := networkStack("net")
	failed.Status = "ROLLBACK_COMPLETE"
	creating := networkStack("net")
	creating.Status = "CREATE_IN_PROGRESS"
	tampered := networkStack("net")
	tampered.Outputs = map[string]string{}
	for k, v := range ok.Outputs {
		tampered.Outputs[k] = v
	}
	tampered.Outputs[names.OutputPrivateSubnetIDs] = "subnet-0000000000000000c,$(reboot)"
	for _, tt := range []struct {
		st   stacks.Stack
		want string
	}{
		{ok, ""},
		{failed, "is not ready (stack net-network is ROLLBACK_COMPLETE): its creation failed; delete it (clusterctl delete-network net) and create it again"},
		{creating, "is not ready (stack net-network is CREATE_IN_PROGRESS): wait until it is done"},
		{tampered, "unusable output PrivateSubnetIds"},
	} {
		f := &fakeStacks{stacks: map[string]stacks.Stack{"net-network": tt.st}}
		out, err := Read(context.Background(), f, "net")
		switch {
		case tt.want == "" && (err != nil || out.VpcID != "vpc-0123456789abcdef0" || len(out.PrivateSubnetIDs) != 2 || len(out.PublicSubnetIDs) != 2):
			t.Errorf("read: %+v, %v", out, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}

// The plan's estimate follows the documented prices.
func TestBilling(t *testing.T) {
	for _, tt := range []struct {
		n    spec.Network
		want float64
	}{
		{spec.Network{Name: "a", Nat: names.NatSingle, Zones: intp(3)}, (PriceNatGatewayHour + PricePublicIPv4Hour) * HoursPerMonth},
		{spec.Network{Name: "a", Nat: names.NatPerZone, Zones: intp(2)}, 2 * (PriceNatGatewayHour + PricePublicIPv4Hour) * HoursPerMonth},
		{spec.Network{Name: "a", Nat: names.NatNone, Zones: intp(3)}, float64(3*len(render.NodeEndpoints())) * PriceInterfaceEndpointHour * HoursPerMonth},
	} {
		if got := Monthly(Billing(tt.n)); got < tt.want-0.001 || got > tt.want+0.001 {
			t.Errorf("%s × %d: $%.2f/month, want $%.2f", tt.n.Nat, tt.n.ZoneCount(), got, tt.want)
		}
	}
}

func intp(n int) *int { return &n }

// A network reads back into the settings it was made with: zones from its
// outputs, the operator's tags from the stack's without clusterctl's own
// or AWS's.
func TestObserve(t *testing.T) {
	st := networkStack("net")
	st.Outputs[names.OutputZones] = "us-east-1a,us-east-1b"
	st.Outputs[names.OutputNat] = "per-zone"
	st.Outputs[names.OutputVpcCidr] = "10.20.0.0/20"
	st.Tags["team"] = "web"
	st.Tags[names.TagVersion] = "1.2.3"
	st.Tags["aws:cloudformation:stack-name"] = st.Name
	f := &fakeStacks{stacks: map[string]stacks.Stack{st.Name: st}}
	n, out, err := Observe(t.Context(), f, "net")
	if err != nil {
		t.Fatal(err)
	}
	want := spec.Network{Name: "net", Zones: intp(2), Cidr: "10.20.0.0/20", Nat: "per-zone", Tags: spec.Tags{"team": "web"}}
	if d := spec.Diff(want, n); len(d) > 0 || out.VpcID != "vpc-0123456789abcdef0" {
		t.Errorf("observed %+v (%v), outputs %+v", n, d, out)
	}
	// What a file declares of it compares equal once defaulted.
	file := spec.Network{Name: "net", Zones: intp(2), Cidr: "10.20.0.0/20", Nat: "per-zone", Tags: spec.Tags{"team": "web"}}
	file.Default()
	if d := spec.Diff(n, file); len(d) > 0 {
		t.Errorf("differs from the file: %v", d)
	}
	foreign := networkStack("other")
	foreign.Tags[names.TagRole] = names.RoleCore
	f.stacks[foreign.Name] = foreign
	if _, _, err := Observe(t.Context(), f, "other"); !errors.Is(err, ErrRefused) {
		t.Errorf("a stack of another kind: %v", err)
	}
}
