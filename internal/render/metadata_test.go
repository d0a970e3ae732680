package render

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// Every variant reads back into the spec it was rendered from: its
// parameters and its template's recorded intent say every setting.
func TestReadBack(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			r, err := v.render()
			if err != nil {
				t.Fatal(err)
			}
			d := Deployed{Template: r.Template, Parameters: r.Parameters, Tags: r.Tags}
			if v.core != nil {
				want := *v.core
				want.Default()
				got, err := ReadCore(d)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("ReadCore = %+v, %v\nwant %+v", got, err, want)
				}
				return
			}
			want := *v.group
			want.Default()
			got, err := ReadGroup(v.group.Name, d)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("ReadGroup = %+v, %v\nwant %+v", got, err, want)
			}
		})
	}
}

// A parameter the template no longer declares says nothing: the spot mix
// some implementations keep reporting after spot was turned off.
func TestReadGroupIgnoresStaleParameters(t *testing.T) {
	g := *variants()[3].group
	r, err := Group("prod", g, testJoin, build(testVersion))
	if err != nil {
		t.Fatal(err)
	}
	params := maps.Clone(r.Parameters)
	params[names.ParamOnDemandBaseCapacity], params[names.ParamOnDemandPercentage], params[names.ParamSpotAllocationStrategy] = "1", "20", "lowest-price"
	got, err := ReadGroup(g.Name, Deployed{Template: r.Template, Parameters: params, Tags: r.Tags})
	g.Default()
	if err != nil || !reflect.DeepEqual(got, g) {
		t.Errorf("ReadGroup = %+v, %v\nwant %+v", got, err, g)
	}
	if err := got.Check("prod"); err != nil {
		t.Errorf("read back a group that does not check: %v", err)
	}
}

// What an update needs from the deployed stack, in the forms CloudFormation
// implementations and earlier clusterctl versions leave it.
func TestReadGroupForms(t *testing.T) {
	base := variants()[4]
	r, err := base.render()
	if err != nil {
		t.Fatal(err)
	}
	params := func(over map[string]string) map[string]string {
		p := map[string]string{}
		for k, v := range r.Parameters {
			p[k] = v
		}
		for k, v := range over {
			p[k] = v
		}
		return p
	}
	// Rendered by the clusterctl before this intent format: Metadata.clusterctl
	// held the tags' spelling, 0 for rolling-update defaults.
	legacy := []byte(`{"Metadata":{"clusterctl":{"labels":"role=worker,tier=memory","image":"/my/images/node","subnets":"own","maxBatch":0,"minInService":2}},"Resources":{}}`)
	tests := []struct {
		name  string
		d     Deployed
		check func(t *testing.T, g spec.Group)
	}{
		{"parameters win over the template", Deployed{Template: r.Template, Parameters: params(map[string]string{names.ParamDesiredCapacity: "2", names.ParamSSHCIDR: ""})}, func(t *testing.T, g spec.Group) {
			if *g.Count != 2 || g.SSHCIDR != "" || g.KeyName != "ops" {
				t.Errorf("got %+v", g)
			}
		}},
		{"legacy metadata", Deployed{Template: legacy, Parameters: params(map[string]string{names.ParamSubnetIDs: "['subnet-1', 'subnet-2']"})}, func(t *testing.T, g spec.Group) {
			if g.Labels.String() != "role=worker,tier=memory" || g.ImageID != "/my/images/node" || len(g.SubnetIDs) != 2 || g.SubnetIDs[1] != "subnet-2" ||
				g.RollingUpdate.MaxBatch != nil || *g.RollingUpdate.MinInService != 2 || g.SSHCIDR != "198.51.100.7/32" {
				t.Errorf("got %+v", g)
			}
		}},
		{"legacy defaults", Deployed{Template: []byte(`{"Metadata":{"clusterctl":{"labels":"-","image":"default","subnets":"core","maxBatch":0,"minInService":0}}}`), Parameters: params(nil)}, func(t *testing.T, g spec.Group) {
			if g.Labels != nil || g.ImageID != "" || g.SubnetIDs != nil || g.RollingUpdate != (spec.RollingUpdate{}) {
				t.Errorf("got %+v", g)
			}
		}},
		{"no metadata: the stack tags", Deployed{Template: []byte(`{"Resources":{}}`), Parameters: params(nil),
			Tags: map[string]string{names.TagLabels: "a=1", names.TagImage: names.ImageDefault, names.TagSubnets: names.SubnetsCore}}, func(t *testing.T, g spec.Group) {
			if g.Labels.String() != "a=1" || g.ImageID != "" || g.SubnetIDs != nil {
				t.Errorf("got %+v", g)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ReadGroup("r7g-agents", tt.d)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, g)
		})
	}
	if _, err := ReadGroup("g", Deployed{Template: []byte("not json")}); err == nil {
		t.Error("an unreadable template was read")
	}
	if _, err := ReadGroup("g", Deployed{Template: r.Template, Parameters: params(map[string]string{names.ParamMaxSize: "many"})}); err == nil {
		t.Error("a non-numeric size was read")
	}
}

func TestReadCoreWithoutMetadata(t *testing.T) {
	def := DefaultImageParameter("m7g.large")
	for _, tc := range []struct {
		param, id, want string
	}{
		{def, "", ""},
		{def, "ami-0123456789abcdef0", "ami-0123456789abcdef0"},
		{"/my/images/control", "", "/my/images/control"},
	} {
		c, err := ReadCore(Deployed{Template: []byte(`{"Resources":{}}`), Parameters: map[string]string{
			names.ParamInstanceType: "m7g.large", names.ParamImageParameter: tc.param, names.ParamImageID: tc.id, names.ParamVolumeSize: "20",
		}})
		if err != nil || c.ImageID != tc.want || c.InstanceType != "m7g.large" {
			t.Errorf("ImageParameter %s, ImageId %q: core %+v, %v; want image %q", tc.param, tc.id, c, err, tc.want)
		}
	}
}

// Launch changes exactly when the rolling update replaces the nodes.
func TestLaunch(t *testing.T) {
	base := variants()[3] // default image, the core's subnets, SSH closed
	launch := func(f func(*spec.Group, *Join, map[string]string)) string {
		t.Helper()
		g, j := *base.group, base.join
		g.InstanceType = slices.Clone(g.InstanceType)
		over := map[string]string{}
		f(&g, &j, over)
		r, err := Group(base.cluster, g, j, build(testVersion))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range over {
			r.Parameters[k] = v
		}
		l, err := Launch(r.Template, r.Parameters)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l0 := launch(func(*spec.Group, *Join, map[string]string) {})
	for name, f := range map[string]func(*spec.Group, *Join, map[string]string){
		"instance type": func(g *spec.Group, _ *Join, _ map[string]string) { g.InstanceType = spec.InstanceTypes{"c5.2xlarge"} },
		"volume":        func(g *spec.Group, _ *Join, _ map[string]string) { g.VolumeSize = intp(31) },
		"labels":        func(g *spec.Group, _ *Join, _ map[string]string) { g.Labels = spec.Labels{"a": "1"} },
		"image":         func(g *spec.Group, _ *Join, _ map[string]string) { g.ImageID = "ami-12345678" },
		"SSH opened":    func(g *spec.Group, _ *Join, _ map[string]string) { g.SSHCIDR = "203.0.113.0/24" },
		"key pair":      func(g *spec.Group, _ *Join, _ map[string]string) { g.KeyName = "ops" },
		"own subnets":   func(g *spec.Group, _ *Join, _ map[string]string) { g.SubnetIDs = []string{"subnet-0000000000000000c"} },
		"managers key":  func(_ *spec.Group, j *Join, _ map[string]string) { j.ManagersKey = "join/swarm/other" },
		"AMI behind SSM": func(_ *spec.Group, _ *Join, p map[string]string) {
			p[names.ParamImageParameter] = "ami-0fedcba9876543210"
		},
	} {
		if launch(f) == l0 {
			t.Errorf("%s: launch data unchanged, the nodes would not be replaced", name)
		}
	}
	for name, f := range map[string]func(*spec.Group, *Join, map[string]string){
		"count":          func(g *spec.Group, _ *Join, _ map[string]string) { g.Count, g.Max = intp(3), intp(9) },
		"rolling update": func(g *spec.Group, _ *Join, _ map[string]string) { g.RollingUpdate.MaxBatch = intp(2) },
		"subnets as a Python list": func(_ *spec.Group, _ *Join, p map[string]string) {
			p[names.ParamSubnetIDs] = "['subnet-0000000000000000a', 'subnet-0000000000000000b']"
		},
	} {
		if launch(f) != l0 {
			t.Errorf("%s: launch data changed, the nodes would be replaced", name)
		}
	}
	withSSH := func(cidr string) string {
		return launch(func(g *spec.Group, _ *Join, _ map[string]string) { g.SSHCIDR = cidr })
	}
	if withSSH("203.0.113.0/24") != withSSH("198.51.100.0/24") {
		t.Error("changing the SSH CIDR changes the launch data; only its rule changes")
	}
	spot := func(g *spec.Group, _ *Join, _ map[string]string) { g.Spot = true }
	if launch(spot) == l0 {
		t.Error("spot: launch data unchanged, the nodes would not be replaced by spot ones")
	}
	if launch(func(g *spec.Group, j *Join, p map[string]string) {
		g.InstanceType = append(g.InstanceType, "c5a.xlarge")
	}) == l0 {
		t.Error("a second type: launch data unchanged")
	}

	// A mixed group: its policy is part of what the nodes are launched
	// with, the types resolved from their list parameter.
	base = variants()[8]
	l0 = launch(func(*spec.Group, *Join, map[string]string) {})
	if !strings.Contains(l0, `"InstanceType":"m7g.large"`) || !strings.Contains(l0, `{"InstanceType":"c7g.xlarge"}`) {
		t.Errorf("launch data of a mixed group: %s", l0)
	}
	for name, f := range map[string]func(*spec.Group, *Join, map[string]string){
		"type order": func(g *spec.Group, _ *Join, _ map[string]string) {
			g.InstanceType = spec.InstanceTypes{"m6g.large", "m7g.large", "c7g.xlarge"}
		},
		"type replaced":     func(g *spec.Group, _ *Join, _ map[string]string) { g.InstanceType[2] = "r7g.large" },
		"type dropped":      func(g *spec.Group, _ *Join, _ map[string]string) { g.InstanceType = g.InstanceType[:2] },
		"on-demand base":    func(g *spec.Group, _ *Join, _ map[string]string) { g.OnDemandBase = intp(2) },
		"on-demand percent": func(g *spec.Group, _ *Join, _ map[string]string) { g.OnDemandPercent = intp(50) },
		"spot allocation":   func(g *spec.Group, _ *Join, _ map[string]string) { g.SpotAllocation = spec.SpotLowestPrice },
		"spot off": func(g *spec.Group, _ *Join, _ map[string]string) {
			g.Spot, g.OnDemandBase, g.OnDemandPercent, g.SpotAllocation = false, nil, nil, ""
		},
		"one type, on-demand": func(g *spec.Group, _ *Join, _ map[string]string) {
			g.InstanceType, g.Spot, g.OnDemandBase, g.OnDemandPercent, g.SpotAllocation = spec.InstanceTypes{"m7g.large"}, false, nil, nil, ""
		},
	} {
		if launch(f) == l0 {
			t.Errorf("mixed group, %s: launch data unchanged, the nodes would not be replaced", name)
		}
	}
	if launch(func(_ *spec.Group, _ *Join, p map[string]string) {
		p[names.ParamInstanceType] = "['m7g.large', 'm6g.large', 'c7g.xlarge']"
	}) != l0 {
		t.Error("types as a Python list: launch data changed")
	}
	if launch(func(g *spec.Group, _ *Join, _ map[string]string) { g.Count = intp(8) }) != l0 {
		t.Error("mixed group, count: launch data changed")
	}
	if _, err := Launch([]byte(`{"Resources":{}}`), nil); err == nil {
		t.Error("a template without a launch template has launch data")
	}
}
