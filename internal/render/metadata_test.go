package render

import (
	"reflect"
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
		over := map[string]string{}
		f(&g, &j, over)
		r, err := Group(base.cluster, g, j, testVersion)
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
		"instance type": func(g *spec.Group, _ *Join, _ map[string]string) { g.InstanceType = "c5.2xlarge" },
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
	if _, err := Launch([]byte(`{"Resources":{}}`), nil); err == nil {
		t.Error("a template without a launch template has launch data")
	}
}
