package spec

import (
	"strings"
	"testing"
)

func TestNetworkCheck(t *testing.T) {
	tests := []struct {
		n    Network
		want string // "" for valid: a part of the error
	}{
		{Network{Name: "prod"}, ""},
		{Network{Name: "prod", Zones: intp(1), Cidr: "192.168.0.0/24", Nat: "none"}, ""},
		{Network{Name: "prod", Zones: intp(2), Cidr: "10.1.0.0/16", Nat: "per-zone", Tags: Tags{"team": "web"}}, ""},
		{Network{Name: ""}, `name: invalid network name ""`},
		{Network{Name: "9lives"}, "name: invalid network name"},
		{Network{Name: "a_b"}, "name: invalid network name"},
		{Network{Name: strings.Repeat("n", 121)}, "over the 128 allowed"},
		{Network{Name: "prod", Zones: intp(0)}, "zones: 0 zones: a network has 1 to 3"},
		{Network{Name: "prod", Zones: intp(4)}, "zones: 4 zones"},
		{Network{Name: "prod", Cidr: "10.0.0.0/8"}, "cidr: CIDR \"10.0.0.0/8\": a VPC's range is /16 to /24"},
		{Network{Name: "prod", Cidr: "10.0.0.0/25"}, "a VPC's range is /16 to /24"},
		{Network{Name: "prod", Cidr: "10.0.0.1/16"}, "host bits set, did you mean 10.0.0.0/16?"},
		{Network{Name: "prod", Cidr: "fd00::/64"}, "expected an IPv4 address/prefix"},
		{Network{Name: "prod", Cidr: "ten"}, "expected an IPv4 address/prefix"},
		{Network{Name: "prod", Nat: "double"}, `nat: invalid NAT mode "double": expected single, per-zone or none`},
		{Network{Name: "prod", Tags: Tags{"clusterctl:x": "y"}}, "reserved for the tags clusterctl sets"},
	}
	for _, tt := range tests {
		err := tt.n.Complete()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.n, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: error %v, want %q", tt.n, err, tt.want)
		}
	}
	n := Network{Name: "prod"}
	if err := n.Complete(); err != nil || n.Cidr != DefaultNetworkCidr || n.Nat != "single" || n.ZoneCount() != 3 {
		t.Errorf("defaults: %+v, %v", n, err)
	}
}

// A core names its network by a network's name, or none.
func TestCoreNetworkCheck(t *testing.T) {
	for name, want := range map[string]string{"": "", "prod": "", "no way": `network: invalid network name "no way"`} {
		c := Core{Network: name}
		err := c.Complete()
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("network %q: %v, want %q", name, err, want)
		}
	}
	c := Core{PublicSubnetIDs: []string{"subnet-1"}}
	if err := c.Complete(); err == nil || !strings.Contains(err.Error(), "publicSubnetIds: invalid subnet id") {
		t.Errorf("bad public subnet: %v", err)
	}
}
