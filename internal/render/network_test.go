package render

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// networkVariants are the network forms covered by golden files and lint.
func networkVariants() map[string]spec.Network {
	return map[string]spec.Network{
		"network-default":       {Name: "prod"},
		"network-per-zone":      {Name: "prod", Zones: intp(2), Nat: names.NatPerZone, Cidr: "10.20.0.0/20"},
		"network-none":          {Name: "prod", Nat: names.NatNone, Tags: spec.Tags{"team": "platform"}},
		"network-one-zone-none": {Name: "lab", Zones: intp(1), Nat: names.NatNone, Cidr: "192.168.0.0/24"},
	}
}

func TestNetworkGolden(t *testing.T) {
	for name, n := range networkVariants() {
		t.Run(name, func(t *testing.T) {
			r, err := Network(n, build(testVersion))
			if err != nil {
				t.Fatal(err)
			}
			meta, err := json.MarshalIndent(stackMeta{r.StackName, r.Parameters, r.Tags, r.Capabilities, nil}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, bytes.TrimSpace(r.Template), "", "  "); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".golden.json", append(pretty.Bytes(), '\n'))
			golden(t, name+".stack.golden.json", append(meta, '\n'))
		})
	}
}

// networkDoc is what the structural checks read of a network template.
type networkDoc struct {
	Resources map[string]struct {
		Type       string
		Properties map[string]any
	}
	Outputs map[string]any
}

func renderNetworkDoc(t *testing.T, n spec.Network) networkDoc {
	t.Helper()
	r, err := Network(n, build(testVersion))
	if err != nil {
		t.Fatal(err)
	}
	var doc networkDoc
	if err := json.Unmarshal(r.Template, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func (d networkDoc) count(typ string) int {
	n := 0
	for _, r := range d.Resources {
		if r.Type == typ {
			n++
		}
	}
	return n
}

// The shape of a network follows its zones and NAT mode: a public and a
// private subnet per zone, NAT gateways as asked, interface endpoints for
// every service the nodes call exactly when there is no NAT, the S3 gateway
// endpoint always, and every output of the contract.
func TestNetworkShape(t *testing.T) {
	tests := []struct {
		n                      spec.Network
		subnets, nats, ifaces  int
		privateRoutesToNatZero bool
	}{
		{spec.Network{Name: "a"}, 6, 1, 0, true},
		{spec.Network{Name: "a", Zones: intp(2), Nat: names.NatPerZone}, 4, 2, 0, false},
		{spec.Network{Name: "a", Zones: intp(3), Nat: names.NatNone}, 6, 0, len(NodeEndpoints()), false},
		{spec.Network{Name: "a", Zones: intp(1)}, 2, 1, 0, true},
	}
	for _, tt := range tests {
		d := renderNetworkDoc(t, tt.n)
		what := tt.n.Nat + "/" + strings.Repeat("z", tt.n.ZoneCount())
		if got := d.count("AWS::EC2::Subnet"); got != tt.subnets {
			t.Errorf("%s: %d subnets, want %d", what, got, tt.subnets)
		}
		if got := d.count("AWS::EC2::NatGateway"); got != tt.nats {
			t.Errorf("%s: %d NAT gateways, want %d", what, got, tt.nats)
		}
		if got := d.count("AWS::EC2::EIP"); got != tt.nats {
			t.Errorf("%s: %d addresses, want %d", what, got, tt.nats)
		}
		var ifaces, gateways int
		for id, r := range d.Resources {
			switch {
			case r.Type == "AWS::EC2::VPCEndpoint" && r.Properties["VpcEndpointType"] == "Interface":
				ifaces++
				if r.Properties["PrivateDnsEnabled"] != true {
					t.Errorf("%s: %s without private DNS: nodes would not use it", what, id)
				}
			case r.Type == "AWS::EC2::VPCEndpoint":
				gateways++
			case r.Type == "AWS::EC2::Subnet" && r.Properties["MapPublicIpOnLaunch"] != false:
				t.Errorf("%s: subnet %s maps public IPs on launch", what, id)
			}
		}
		if ifaces != tt.ifaces || gateways != 1 {
			t.Errorf("%s: %d interface and %d gateway endpoints, want %d and 1", what, ifaces, gateways, tt.ifaces)
		}
		for i := range tt.n.ZoneCount() {
			route, ok := d.Resources["PrivateRoute"+string(rune('0'+i))]
			if tt.nats == 0 {
				if ok {
					t.Errorf("%s: a private route out without NAT", what)
				}
				continue
			}
			nat, _ := json.Marshal(route.Properties["NatGatewayId"])
			want := `{"Ref":"NatGateway` + string(rune('0'+i)) + `"}`
			if tt.privateRoutesToNatZero {
				want = `{"Ref":"NatGateway0"}`
			}
			if string(nat) != want {
				t.Errorf("%s: zone %d routes to %s, want %s", what, i, nat, want)
			}
		}
		var outs []string
		for k := range d.Outputs {
			outs = append(outs, k)
		}
		slices.Sort(outs)
		want := slices.Sorted(slices.Values(names.NetworkOutputs()))
		if !slices.Equal(outs, want) {
			t.Errorf("%s: outputs %v, want %v", what, outs, want)
		}
	}
}

// A network's tags are its ownership (role network, its name) and the
// operator's; its stack name is <name>-network.
func TestNetworkStackAndTags(t *testing.T) {
	r, err := Network(spec.Network{Name: "prod", Tags: spec.Tags{"team": "platform"}}, build(testVersion))
	if err != nil {
		t.Fatal(err)
	}
	if r.StackName != "prod-network" || r.Tags[names.TagRole] != names.RoleNetwork || r.Tags[names.TagNetwork] != "prod" ||
		r.Tags[names.TagVersion] != testVersion || r.Tags["team"] != "platform" || r.Tags[names.TagCluster] != "" {
		t.Errorf("stack %s tags %v", r.StackName, r.Tags)
	}
	if r.Parameters[names.ParamNetworkCidr] != spec.DefaultNetworkCidr {
		t.Errorf("parameters %v", r.Parameters)
	}
}

// TestNetworkCfnLint lints every network variant.
func TestNetworkCfnLint(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for name, n := range networkVariants() {
		r, err := Network(n, build(testVersion))
		if err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, name+".json")
		if err := os.WriteFile(f, r.Template, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	lint(t, files)
}

// An internet-facing load balancer goes in the core's public subnets when
// it has them; an internal one, or one of a group with subnets of its own,
// stays in the group's subnets.
func TestLoadBalancerSubnets(t *testing.T) {
	public := []string{"subnet-0000000000000000c", "subnet-0000000000000000d"}
	own := []string{"subnet-0000000000000000e"}
	withPublic := testJoin
	withPublic.PublicSubnetIds = public
	tests := []struct {
		name string
		g    spec.Group
		join Join
		want []string
	}{
		{"internet-facing, network", spec.Group{Publish: spec.Ports{"80"}}, withPublic, public},
		{"internal, network", spec.Group{Publish: spec.Ports{"80"}, LoadBalancer: spec.SchemeInternal}, withPublic, testJoin.SubnetIds},
		{"internet-facing, own subnets", spec.Group{Publish: spec.Ports{"80"}, SubnetIDs: own}, withPublic, own},
		{"internet-facing, no network", spec.Group{Publish: spec.Ports{"80"}}, testJoin, testJoin.SubnetIds},
	}
	for _, tt := range tests {
		if got := LoadBalancerSubnets(tt.g, tt.join); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
		tt.g.Name, tt.g.InstanceType = "web", spec.InstanceTypes{"t3.small"}
		r, err := Group("prod", tt.g, tt.join, build(testVersion))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Parameters[names.ParamLoadBalancerSubnetIDs]; got != strings.Join(tt.want, ",") {
			t.Errorf("%s: parameter %s = %s, want %v", tt.name, names.ParamLoadBalancerSubnetIDs, got, tt.want)
		}
	}
}
