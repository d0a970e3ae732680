package spec

import (
	"net/netip"
	"slices"

	"github.com/clusterctl/clusterctl/internal/names"
)

// Defaults and bounds of a network.
const (
	DefaultNetworkCidr  = "10.0.0.0/16"
	DefaultNetworkZones = 3
	MaxNetworkZones     = 3
	DefaultNat          = names.NatSingle
	// A network's CIDR is cut into 8 equal blocks: a public and a private
	// subnet per zone (3 zones at most), 2 blocks spare. /16 to /24 give
	// subnets of /19 (8,192 addresses) to /27 (32).
	MinNetworkPrefix = 16
	MaxNetworkPrefix = 24
)

// NatModes are the NAT modes a network may take.
func NatModes() []string { return []string{names.NatSingle, names.NatPerZone, names.NatNone} }

// Network is a network stack's settings: a VPC over Zones zones, each with
// a public and a private subnet, reaching the internet through NAT (one
// gateway, one per zone) or reaching only AWS, through VPC endpoints.
// create-network's flags and a cluster file's network: fill it.
type Network struct {
	Name  string `json:"name" yaml:"name" help:"Network name; the stack is <name>-network." kong:"-"`
	Zones *int   `json:"zones,omitempty" yaml:"zones,omitempty" name:"zones" placeholder:"N" help:"Availability zones, each with a public and a private subnet: 1 to 3 (default 3)." jsonschema:"minimum=1,maximum=3" cfn:"-"`
	Cidr  string `json:"cidr,omitempty" yaml:"cidr,omitempty" name:"cidr" placeholder:"CIDR" help:"The VPC's IPv4 range, /16 to /24 (default 10.0.0.0/16); cut into 8 equal subnets, 2 per zone." cfn:"VpcCidr"`
	Nat   string `json:"nat,omitempty" yaml:"nat,omitempty" name:"nat" placeholder:"single|per-zone|none" help:"How the private subnets reach out: single (one NAT gateway, default), per-zone (one per zone: a zone's outage leaves the others connected) or none (no internet: VPC endpoints for every AWS service the nodes call)." jsonschema:"enum=single,enum=per-zone,enum=none" cfn:"-"`
	Tags  Tags   `json:"tags,omitempty" yaml:"tags,omitempty" name:"tags" placeholder:"KEY=VALUE,..." help:"AWS tags key=value[,key=value] on the network's stack and every resource it makes (repeatable)." file:"AWS tags, key: value: on the network's stack and every resource it makes." unset:"none"`
}

// Default fills in the network's defaults.
func (n *Network) Default() {
	n.Zones = ptr(n.ZoneCount())
	if n.Cidr == "" {
		n.Cidr = DefaultNetworkCidr
	}
	if n.Nat == "" {
		n.Nat = DefaultNat
	}
	if len(n.Tags) == 0 {
		n.Tags = nil
	}
}

// ZoneCount is the number of zones, defaulted.
func (n Network) ZoneCount() int { return orDefault(n.Zones, DefaultNetworkZones) }

// Complete applies the network's defaults, then validates it.
func (n *Network) Complete() error {
	n.Default()
	return n.Check()
}

// Check checks the network's settings; paths are a cluster file's keys
// under network:.
func (n Network) Check() error {
	if err := CheckNetworkName(n.Name); err != nil {
		return err
	}
	if z := n.ZoneCount(); z < 1 || z > MaxNetworkZones {
		return invalid("zones", "%d zones: a network has 1 to %d", z, MaxNetworkZones)
	}
	if n.Cidr != "" {
		p, err := netip.ParsePrefix(n.Cidr)
		switch {
		case err != nil || !p.Addr().Is4():
			return invalid("cidr", "invalid CIDR %q: expected an IPv4 address/prefix, e.g. 10.0.0.0/16", n.Cidr)
		case p.Masked() != p:
			return invalid("cidr", "invalid CIDR %q: host bits set, did you mean %s?", n.Cidr, p.Masked())
		case p.Bits() < MinNetworkPrefix || p.Bits() > MaxNetworkPrefix:
			return invalid("cidr", "CIDR %q: a VPC's range is /%d to /%d here", n.Cidr, MinNetworkPrefix, MaxNetworkPrefix)
		}
	}
	if n.Nat != "" && !slices.Contains(NatModes(), n.Nat) {
		return invalid("nat", "invalid NAT mode %q: expected single, per-zone or none", n.Nat)
	}
	return checkTags("tags", n.Tags, 0)
}

// CheckNetworkName checks a network name; the error's path is "name".
func CheckNetworkName(name string) error { return checkNetworkName("name", name) }

// checkNetworkRef checks the name of a network a core joins ("" for none).
func checkNetworkRef(path, name string) error {
	if name == "" {
		return nil
	}
	return checkNetworkName(path, name)
}

func checkNetworkName(path, name string) error {
	if !nameRE.MatchString(name) {
		return invalid(path, "invalid network name %q: must start with a letter and contain only letters, digits and hyphens", name)
	}
	if n := len(names.NetworkStack(name)); n > MaxStackName {
		return invalid(path, "invalid network name %q: stack name %s would be %d characters, over the %d allowed", name, names.NetworkStack(name), n, MaxStackName)
	}
	return nil
}
