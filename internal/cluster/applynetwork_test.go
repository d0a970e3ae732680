package cluster

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// netFile is cluster name as a file declares it, in network net.
func netFile(name string, n spec.Network, groups ...spec.Group) spec.Cluster {
	c := spec.New(name)
	c.Network = &n
	c.Groups = groups
	return c
}

// seedNetwork seeds network n's stack as create-network would have made
// it, with these tags instead of its own when given.
func (e *fakeEnv) seedNetwork(t *testing.T, n spec.Network, tags map[string]string) {
	t.Helper()
	n.Default()
	r, err := render.Network(n, testBuild)
	if err != nil {
		t.Fatal(err)
	}
	if tags == nil {
		tags = r.Tags
	}
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}[:n.ZoneCount()]
	e.fake.Seed(cfnfake.Seed{Name: r.StackName, Template: string(r.Template), Params: r.Parameters, Tags: tags, Outputs: map[string]string{
		names.OutputNetworkName: n.Name, names.OutputNetworkVpcID: "vpc-0123abcd", names.OutputVpcCidr: n.Cidr, names.OutputNat: n.Nat,
		names.OutputZones:            strings.Join(zones, ","),
		names.OutputPublicSubnetIDs:  "subnet-0aaa1111,subnet-0bbb2222",
		names.OutputPrivateSubnetIDs: "subnet-0ccc3333,subnet-0ddd4444",
	}})
}

// A file's network that does not exist is planned first, with what it is
// billed by the hour, as create-network says it; a dry run creates nothing.
func TestApplyPlansNetworkFirst(t *testing.T) {
	e := fakeService(t)
	p, err := NewApplier(e.s).Apply(t.Context(), ApplyOptions{DryRun: true,
		Spec: netFile("fresh", spec.Network{Name: "net", Zones: intp(2)}, group("web", 2))})
	if err != nil {
		t.Fatal(err)
	}
	np := p.Network
	if np == nil || np.Action != ActionCreate || np.Stack != "net-network" || p.NoChanges || len(np.Billed) != 2 || np.MonthlyUSD < 36 || np.MonthlyUSD > 37 {
		t.Fatalf("network plan %+v", np)
	}
	var settings []string
	for _, c := range np.Settings {
		settings = append(settings, c.Path+"="+c.NewText)
	}
	if !slices.Equal(settings, []string{"zones=2", "cidr=10.0.0.0/16", "nat=single"}) {
		t.Errorf("network settings %v", settings)
	}
	if got := actions(p); !slices.Equal(got, []string{"fresh create", "fresh-web create"}) {
		t.Errorf("actions %v", got)
	}
	var b bytes.Buffer
	if err := WriteClusterPlan(&b, p); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{"net-network   create   network: 10.0.0.0/16 over 2 zones, NAT single, about $36.50/month\nfresh ",
		"net-network: create\nNetwork net (stack net-network): VPC 10.0.0.0/16 over 2 zones", "1 NAT gateway: $0.045/hour", "total: about $36.50/month"} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
	if _, err := e.s.Stacks.Get(t.Context(), "net-network"); err == nil {
		t.Error("a dry run created the network")
	}
}

// An existing network proven clusterctl's is compared with the file: the
// same is left alone; one that differs, a stack of its name that is not
// the network, a network the deployed core did not join, or a network
// only named that does not exist are refused before anything changes.
func TestApplyNetworkRefusals(t *testing.T) {
	net := spec.Network{Name: "net", Zones: intp(2)}
	tests := []struct {
		name  string
		seed  func(e *fakeEnv)
		file  spec.Cluster
		want  string // part of the refusal; "" when planned
		usage bool   // bad input (exit 2) rather than refused (exit 1)
	}{
		{"the same", func(e *fakeEnv) { e.seedNetwork(t, net, nil) }, netFile("fresh", net), "", false},
		{"differs", func(e *fakeEnv) { e.seedNetwork(t, net, nil) },
			netFile("fresh", spec.Network{Name: "net", Zones: intp(3), Nat: "per-zone", Tags: spec.Tags{"team": "web"}}),
			`network "net" (stack net-network) is not what the file declares (zones 2 → 3, nat single → per-zone, tags (none) → team=web), and apply does not change a network`, false},
		{"a group's stack", func(e *fakeEnv) {
			e.fake.Seed(cfnfake.Seed{Name: "net-network", Template: "{}", Tags: map[string]string{
				names.TagRole: names.RoleAgents, names.TagCluster: "net", names.TagGroup: "network", names.TagVersion: "1"}})
		}, netFile("fresh", net), `stack net-network exists and is group network of cluster net, not network "net" of clusterctl's`, false},
		{"another network's", func(e *fakeEnv) {
			e.seedNetwork(t, net, map[string]string{names.TagRole: names.RoleNetwork, names.TagNetwork: "other"})
		}, netFile("fresh", net), `stack net-network exists and is network "other"'s by its tags`, false},
		{"unproven", func(e *fakeEnv) { e.seedNetwork(t, net, map[string]string{"team": "web"}) },
			netFile("fresh", net), `stack net-network exists and is not clusterctl's`, false},
		{"the core is elsewhere", func(e *fakeEnv) { e.seed(t); e.seedNetwork(t, net, nil) },
			netFile("core", net), "a cluster's network cannot change ((none) → net)", true},
		{"only named, missing", nil,
			func() spec.Cluster { c := spec.New("fresh"); c.Core.Network = "gone"; return c }(),
			`core.network: network "gone" not found (create it with: clusterctl create-network gone)`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := fakeService(t)
			if tt.seed != nil {
				tt.seed(e)
			}
			p, err := NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: tt.file, Yes: true, DryRun: tt.want == ""})
			if tt.want == "" {
				if err != nil || p.Network == nil || p.Network.Action != ActionUnchanged {
					t.Fatalf("plan %+v, %v", p, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if usage := errs.ExitCode(err) == errs.ExitUsage; tt.usage != usage || !tt.usage && !errors.Is(err, ErrRefused) {
				t.Errorf("%v: usage %v, refused %v", err, usage, errors.Is(err, ErrRefused))
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("not one line: %v", err)
			}
			if p != nil && p.Applied {
				t.Error("applied")
			}
			if _, err := e.s.Stacks.Get(t.Context(), "fresh"); err == nil {
				t.Error("the core was created")
			}
		})
	}
}
