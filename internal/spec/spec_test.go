package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v4"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
)

func intp(n int) *int { return &n }

func TestGroupDefaults(t *testing.T) {
	tests := []struct {
		name                         string
		in                           Group
		count, min, max, vol         int
		batch, inService             int
		labelsNil, subnetsNil, image bool
	}{
		{"nothing given", Group{}, 1, 0, 2, 30, 1, 1, true, true, true},
		{"count moves the default max", Group{Count: intp(3)}, 3, 0, 4, 30, 1, 3, true, true, true},
		{"explicit bounds stay", Group{Count: intp(3), Min: intp(1), Max: intp(3)}, 3, 1, 3, 30, 1, 2, true, true, true},
		{"empty group", Group{Count: intp(0), Max: intp(0)}, 0, 0, 0, 30, 1, 0, true, true, true},
		{"single node replaced in place", Group{Count: intp(1), Min: intp(1), Max: intp(1)}, 1, 1, 1, 30, 1, 0, true, true, true},
		{"explicit batch, default in service", Group{Count: intp(2), Max: intp(10), RollingUpdate: RollingUpdate{MaxBatch: intp(3)}}, 2, 0, 10, 30, 3, 2, true, true, true},
		{"empty lists are unset", Group{Labels: Labels{}, SubnetIDs: []string{}}, 1, 0, 2, 30, 1, 1, true, true, true},
		{"rolling update given", Group{Count: intp(4), Max: intp(8), RollingUpdate: RollingUpdate{MaxBatch: intp(2), MinInService: intp(0)}}, 4, 0, 8, 30, 2, 0, true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.in
			g.Default()
			if *g.Count != tt.count || *g.Min != tt.min || *g.Max != tt.max || *g.VolumeSize != tt.vol {
				t.Errorf("count/min/max/volume = %d/%d/%d/%d", *g.Count, *g.Min, *g.Max, *g.VolumeSize)
			}
			if g.MaxBatchSize() != tt.batch || g.MinInstancesInService() != tt.inService {
				t.Errorf("rolling update %d/%d, want %d/%d", g.MaxBatchSize(), g.MinInstancesInService(), tt.batch, tt.inService)
			}
			// What is resolved at render time stays unset, so that it
			// follows the count, the instance type and the core.
			if (g.Labels == nil) != tt.labelsNil || (g.SubnetIDs == nil) != tt.subnetsNil || (g.ImageID == "") != tt.image {
				t.Errorf("labels %v subnets %v image %q", g.Labels, g.SubnetIDs, g.ImageID)
			}
			if tt.in.RollingUpdate.MaxBatch == nil && g.RollingUpdate.MaxBatch != nil {
				t.Error("default batch size frozen into the spec")
			}
			// Defaults are idempotent: a defaulted spec is its own default.
			again := g
			again.Default()
			if !reflect.DeepEqual(again, g) {
				t.Errorf("Default twice: %+v, then %+v", g, again)
			}
		})
	}
}

// The purchase mix: all on-demand without spot; with it, all spot unless
// a base or a percentage says otherwise.
func TestMixDefaults(t *testing.T) {
	for _, tt := range []struct {
		name          string
		in            Group
		base, percent int
		allocation    string
		mixed         bool
	}{
		{"one type, on-demand", Group{InstanceType: InstanceTypes{"m5.large"}}, 0, 100, "", false},
		{"several types, on-demand", Group{InstanceType: InstanceTypes{"m5.large", "m5a.large"}}, 0, 100, "", true},
		{"spot", Group{InstanceType: InstanceTypes{"m5.large"}, Spot: true}, 0, 0, "price-capacity-optimized", true},
		{"spot with a mix", Group{InstanceType: InstanceTypes{"m5.large", "m6i.large"}, Spot: true, OnDemandBase: intp(2), OnDemandPercent: intp(50), SpotAllocation: "lowest-price"}, 2, 50, "lowest-price", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.in
			g.Name = "g"
			g.Default()
			if g.OnDemandBaseCapacity() != tt.base || g.OnDemandPercentage() != tt.percent || g.SpotAllocation != tt.allocation || g.Mixed() != tt.mixed {
				t.Errorf("base %d, percent %d, allocation %q, mixed %v", g.OnDemandBaseCapacity(), g.OnDemandPercentage(), g.SpotAllocation, g.Mixed())
			}
			// Without spot the mix is fixed, and stays unset.
			if (g.OnDemandBase == nil) != !g.Spot || (g.OnDemandPercent == nil) != !g.Spot {
				t.Errorf("mix set %v/%v for spot %v", g.OnDemandBase, g.OnDemandPercent, g.Spot)
			}
			if err := g.Check("core"); err != nil {
				t.Errorf("defaults refused: %v", err)
			}
		})
	}
}

func TestCoreDefaults(t *testing.T) {
	var c Core
	c.Default()
	if c.InstanceType != "t3.medium" || *c.VolumeSize != 20 || *c.Managers != 1 || c.ImageID != "" || c.SubnetIDs != nil {
		t.Errorf("core defaults %+v", c)
	}
}

// validGroup is a group every rule accepts; each test case breaks one rule.
func validGroup() Group {
	return Group{
		Name: "r3-agents", InstanceType: InstanceTypes{"r5.large", "r5a.large", "r6i.large"}, Count: intp(3), Min: intp(3), Max: intp(5),
		Spot: true, OnDemandBase: intp(1), OnDemandPercent: intp(25), SpotAllocation: SpotCapacityOptimized,
		Labels: Labels{"role": "worker", "tier": "memory/hot"}, ImageID: "ami-0123456789abcdef0", VolumeSize: intp(50),
		SubnetIDs: []string{"subnet-0aaa1111", "subnet-0bbb2222"}, SSHCIDR: "203.0.113.0/24", KeyName: "ops key", PublicIPs: true,
		AllowSSHFromAnywhere: true, RollingUpdate: RollingUpdate{MaxBatch: intp(2), MinInService: intp(1)},
		Publish: Ports{"80:30080", "443:30080/tls", "53/udp"}, LoadBalancer: SchemeInternal, AllowFrom: []string{"10.0.0.0/16", "192.168.0.0/24"},
		Certificate: "arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-0000-1111-2222-333344445555", DeregistrationDelay: intp(60), AccessLogs: "ops-lb-logs",
		Tags:      Tags{"cost-center": "4711", "owner": "Jane Doe"},
		Autoscale: Autoscale{Enabled: true, ScaleDownAfter: Duration(20 * time.Second)},
	}
}

func validCore() Core {
	return Core{InstanceType: "m5.large", ImageID: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
		KeyName: "ops", SSHCIDR: "198.51.100.7/32", VpcID: "vpc-0123abcd", SubnetIDs: []string{"subnet-0aaa1111"}, VolumeSize: intp(8),
		Managers: intp(3), Tags: Tags{"team": "platform"}}
}

func manyLabels(n int) Labels {
	l := Labels{}
	for i := range n {
		l[string(rune('a'+i/26))+string(rune('a'+i%26))] = "v"
	}
	return l
}

// Every rule, each at the field path it reports: one line, exit code 2.
func TestValidateGroup(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Group)
		cluster string
		path    string
		want    string
	}{
		{"bad name", func(g *Group) { g.Name = "r3_agents" }, "", "name", `invalid group name "r3_agents"`},
		{"name starts with a digit", func(g *Group) { g.Name = "3r" }, "", "name", "must start with a letter"},
		{"reserved name", func(g *Group) { g.Name = "control" }, "", "name", "reserved"},
		{"stack name too long", func(g *Group) { g.Name = strings.Repeat("g", 124) }, "core", "name", "would be 129 characters, over the 128 allowed"},
		{"no instance type", func(g *Group) { g.InstanceType = nil }, "", "instanceType", "missing"},
		{"bad instance type", func(g *Group) { g.InstanceType = InstanceTypes{"r3large"} }, "", "instanceType", "invalid instance type"},
		{"bad second instance type", func(g *Group) { g.InstanceType = InstanceTypes{"r5.large", "r5a"} }, "", "instanceType", `invalid instance type "r5a"`},
		{"empty entry", func(g *Group) { g.InstanceType = InstanceTypes{"r5.large", ""} }, "", "instanceType", `invalid instance types "r5.large,": empty entry`},
		{"instance type twice", func(g *Group) { g.InstanceType = InstanceTypes{"r5.large", "r5a.large", "r5.large"} }, "", "instanceType", "instance type r5.large given twice"},
		{"too many instance types", func(g *Group) {
			g.InstanceType = nil
			for i := range MaxInstanceTypes + 1 {
				g.InstanceType = append(g.InstanceType, fmt.Sprintf("m%d.large", i+1))
			}
		}, "", "instanceType", "41 given, at most 40"},
		{"architecture mix", func(g *Group) { g.InstanceType = InstanceTypes{"m5.large", "m6g.large", "m5a.large"} }, "", "instanceType",
			"instance types of more than one architecture: m6g.large is arm64, the others x86_64"},
		{"architecture mix, Graviton first", func(g *Group) {
			g.InstanceType = InstanceTypes{"m7g.large", "c5.large", "m6g.large", "m6i.large", "r5.large"}
		}, "", "instanceType",
			"m7g.large is arm64, m6g.large is arm64, the others x86_64"},
		{"architecture tie keeps the first type's", func(g *Group) { g.InstanceType = InstanceTypes{"m7g.large", "m5.large"} }, "", "instanceType",
			"m5.large is x86_64, the others arm64"},
		{"negative on-demand base", func(g *Group) { g.OnDemandBase = intp(-1) }, "", "onDemandBase", "invalid on-demand base -1: negative"},
		{"on-demand percentage over 100", func(g *Group) { g.OnDemandPercent = intp(101) }, "", "onDemandPercent", "invalid on-demand percentage 101: expected 0 to 100"},
		{"negative on-demand percentage", func(g *Group) { g.OnDemandPercent = intp(-5) }, "", "onDemandPercent", "expected 0 to 100"},
		{"spot allocation", func(g *Group) { g.SpotAllocation = "cheapest" }, "", "spotAllocation", `invalid spot allocation strategy "cheapest": expected price-capacity-optimized, capacity-optimized, lowest-price`},
		{"on-demand base without spot", func(g *Group) { g.Spot = false; g.OnDemandPercent = nil; g.SpotAllocation = "" }, "", "onDemandBase", "applies to spot groups only (without spot"},
		{"on-demand percentage without spot", func(g *Group) { g.Spot = false; g.OnDemandBase = nil; g.SpotAllocation = "" }, "", "onDemandPercent", "applies to spot groups only"},
		{"spot allocation without spot", func(g *Group) { g.Spot = false; g.OnDemandBase = nil; g.OnDemandPercent = nil }, "", "spotAllocation", "applies to spot groups only"},
		{"negative count", func(g *Group) { g.Count = intp(-1) }, "", "count", "count -1 is negative"},
		{"count above the bound", func(g *Group) { g.Autoscale, g.Count, g.Max = Autoscale{}, intp(99999999999), nil }, "", "count",
			"invalid capacity: count 99999999999 is above 10000, the most nodes a group may have"},
		{"count at the bound", func(g *Group) { g.Autoscale, g.Count, g.Max = Autoscale{}, intp(MaxCapacity), intp(MaxCapacity+1) }, "", "max",
			"invalid capacity: max 10001 is above 10000"},
		{"min above the bound", func(g *Group) { g.Autoscale, g.Min, g.Max = Autoscale{}, intp(MaxCapacity+1), intp(MaxCapacity+2) }, "", "min", "min 10001 is above 10000"},
		{"negative min", func(g *Group) { g.Min = intp(-1) }, "", "min", "min -1 is negative"},
		{"negative max", func(g *Group) { g.Count, g.Min, g.Max = intp(0), intp(0), intp(-1) }, "", "max", "max -1 is negative"},
		{"min above count", func(g *Group) { g.Min = intp(4) }, "", "min", "min 4 is above count 3"},
		{"count above max", func(g *Group) { g.Max = intp(2) }, "", "max", "count 3 is above max 2"},
		{"too many labels", func(g *Group) { g.Labels = manyLabels(MaxLabels + 1) }, "", "labels", "38 given, at most 37"},
		{"label key", func(g *Group) { g.Labels = Labels{"a b": "c"} }, "", "labels", `invalid label key "a b"`},
		{"label value injection", func(g *Group) { g.Labels = Labels{"role": "$(reboot)"} }, "", "labels", `invalid label value "$(reboot)"`},
		{"label value quotes", func(g *Group) { g.Labels = Labels{"role": "'x'"} }, "", "labels", "invalid label value"},
		{"empty label value", func(g *Group) { g.Labels = Labels{"role": ""} }, "", "labels", "invalid label value"},
		{"long label", func(g *Group) { g.Labels = Labels{"k": strings.Repeat("v", 64)} }, "", "labels", "limited to 63 characters"},
		{"reserved label", func(g *Group) { g.Labels = Labels{"clusterctl.group": "x"} }, "", "labels", "prefix clusterctl. is reserved"},
		{"labels over the tag limit", func(g *Group) {
			g.Labels = Labels{}
			for _, k := range []string{"a", "b", "c", "d", "e"} {
				g.Labels[k] = strings.Repeat("v", 60)
			}
		}, "", "labels", "at most 256 allowed"},
		{"clusterctl tag", func(g *Group) { g.Tags = Tags{"clusterctl:cluster": "other"} }, "", "tags", `invalid tag key "clusterctl:cluster": the prefix clusterctl: is reserved`},
		{"clusterctl tag, any case", func(g *Group) { g.Tags = Tags{"ClusterCtl:owner": "me"} }, "", "tags", "the prefix clusterctl: is reserved"},
		{"aws tag", func(g *Group) { g.Tags = Tags{"aws:cloudformation:stack-name": "x"} }, "", "tags", `invalid tag key "aws:cloudformation:stack-name": the prefix aws: is reserved for AWS`},
		{"Name tag", func(g *Group) { g.Tags = Tags{"Name": "mine"} }, "", "tags", "clusterctl names the instances itself"},
		{"empty tag key", func(g *Group) { g.Tags = Tags{"": "x"} }, "", "tags", "empty"},
		{"empty tag value", func(g *Group) { g.Tags = Tags{"team": ""} }, "", "tags", `invalid tag value for key "team": empty`},
		{"long tag key", func(g *Group) { g.Tags = Tags{strings.Repeat("k", 129): "x"} }, "", "tags", "129 characters, at most 128 allowed"},
		{"long tag value", func(g *Group) { g.Tags = Tags{"cost-center": strings.Repeat("v", 257)} }, "", "tags", "257 characters, at most 256 allowed"},
		{"tag value characters", func(g *Group) { g.Tags = Tags{"team": "a;b"} }, "", "tags", `invalid tag value "a;b" for key "team"`},
		{"tag key characters", func(g *Group) { g.Tags = Tags{"team!": "a"} }, "", "tags", `invalid tag key "team!"`},
		{"too many tags", func(g *Group) { g.Labels = nil; g.Tags = manyTags(40) }, "", "tags", "invalid tags: 40 given, at most 39 (AWS allows 50 tags per resource; clusterctl's own take 11)"},
		{"too many tags beside labels", func(g *Group) { g.Labels = manyLabels(10); g.Tags = manyTags(30) }, "", "tags", "30 given, at most 29 beside the 10 labels"},
		{"image", func(g *Group) { g.ImageID = "ubuntu" }, "", "imageId", `invalid image id "ubuntu"`},
		{"image with 9 digits", func(g *Group) { g.ImageID = "ami-123456789" }, "", "imageId", "invalid image id"},
		{"image path", func(g *Group) { g.ImageID = "/bad path" }, "", "imageId", "invalid image id"},
		{"small volume", func(g *Group) { g.VolumeSize = intp(2) }, "", "volumeSize", "invalid volume size 2"},
		{"large volume", func(g *Group) { g.VolumeSize = intp(16385) }, "", "volumeSize", "invalid volume size 16385"},
		{"subnet", func(g *Group) { g.SubnetIDs = []string{"subnet-xyz"} }, "", "subnetIds", `invalid subnet id "subnet-xyz"`},
		{"subnet twice", func(g *Group) { g.SubnetIDs = []string{"subnet-0aaa1111", "subnet-0aaa1111"} }, "", "subnetIds", "given twice"},
		{"ssh host bits", func(g *Group) { g.SSHCIDR = "10.0.0.1/8" }, "", "sshCidr", "host bits set, did you mean 10.0.0.0/8?"},
		{"ssh garbage", func(g *Group) { g.SSHCIDR = "everywhere" }, "", "sshCidr", "invalid CIDR"},
		{"ssh ipv6", func(g *Group) { g.SSHCIDR = "2001:db8::/32" }, "", "sshCidr", "expected an IPv4"},
		{"ssh address only", func(g *Group) { g.SSHCIDR = "203.0.113.7" }, "", "sshCidr", "invalid CIDR"},
		{"ssh from anywhere", func(g *Group) { g.SSHCIDR, g.AllowSSHFromAnywhere = "0.0.0.0/0", false }, "", "sshCidr", "SSH from anywhere (0.0.0.0/0) is refused"},
		{"ssh from anywhere, IPv6", func(g *Group) { g.SSHCIDR, g.AllowSSHFromAnywhere = "::/0", false }, "", "sshCidr", "SSH from anywhere (::/0) is refused"},
		{"ssh from anywhere, allowed but IPv6", func(g *Group) { g.SSHCIDR, g.AllowSSHFromAnywhere = "::/0", true }, "", "sshCidr", "expected an IPv4"},
		{"key name quote", func(g *Group) { g.KeyName = "ops'" }, "", "keyName", "invalid key name"},
		{"key name newline", func(g *Group) { g.KeyName = "ops\nx" }, "", "keyName", "invalid key name"},
		{"key name too long", func(g *Group) { g.KeyName = strings.Repeat("k", 256) }, "", "keyName", "invalid key name"},
		{"zero batch", func(g *Group) { g.RollingUpdate.MaxBatch = intp(0) }, "", "rollingUpdate.maxBatch", "at least 1"},
		{"negative in service", func(g *Group) { g.RollingUpdate.MinInService = intp(-1) }, "", "rollingUpdate.minInService", "negative"},
		{"in service at max", func(g *Group) { g.RollingUpdate.MinInService = intp(5) }, "", "rollingUpdate.minInService", "must be below max 5"},
		{"autoscaled with a count", func(g *Group) { g.Min = intp(1) }, "", "count", "an autoscaled group has no fixed count: the autoscaler sets its capacity between min and max"},
		{"scale-down delay too short", func(g *Group) { g.Autoscale.ScaleDownAfter = Duration(5 * time.Second) }, "", "autoscale.scaleDownAfter", "invalid scale-down delay 5s: at least 10s"},
		{"scale-down delay without autoscaling", func(g *Group) { g.Autoscale.Enabled = false }, "", "autoscale.scaleDownAfter", "applies to autoscaled groups only"},
		{"autoscaled with max 0", func(g *Group) { g.Count, g.Min, g.Max, g.RollingUpdate.MinInService = nil, intp(0), intp(0), nil }, "", "max", "an autoscaled group needs a max of at least 1"},
	}
	paths := map[string]bool{}
	for _, f := range Fields(Group{}) {
		paths[f.Path] = true
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := validGroup()
			tt.change(&g)
			cluster := tt.cluster
			if cluster == "" {
				cluster = "core"
			}
			err := g.Complete(cluster)
			checkFieldError(t, err, tt.path, tt.want)
			if !paths[tt.path] {
				t.Errorf("path %q is no setting of a group: no flag or file key names it", tt.path)
			}
		})
	}
	g := validGroup()
	if err := g.Complete("core"); err != nil {
		t.Fatalf("valid group refused: %v", err)
	}
}

// An autoscaled group's count follows its min: defaulted to it, left out
// of a file, moved with it by update-group; a duration reads as flags and
// files write it.
func TestAutoscaleCount(t *testing.T) {
	g := Group{Name: "g", InstanceType: InstanceTypes{"t3.small"}, Min: intp(2), Max: intp(6), Autoscale: Autoscale{Enabled: true}}
	if err := g.Complete("core"); err != nil || *g.Count != 2 || g.MaxSize() != 6 || g.Autoscale.IdleFor() != DefaultScaleDownAfter {
		t.Fatalf("completed %+v, %v", g, err)
	}
	up := g.Update(Group{Min: intp(3)}, []string{"min"})
	if err := up.Complete("core"); err != nil || *up.Count != 3 {
		t.Errorf("min moved: count %v, %v", up.Count, err)
	}
	up = g.Update(Group{Count: intp(4)}, []string{"count"})
	if err := up.Complete("core"); err == nil || !strings.Contains(err.Error(), "no fixed count") {
		t.Errorf("count given to an autoscaled group: %v", err)
	}
	off := g.Update(Group{Count: intp(4)}, []string{"autoscale.enabled", "count"})
	if err := off.Complete("core"); err != nil || *off.Count != 4 || off.Autoscale != (Autoscale{}) {
		t.Errorf("autoscaling off: %+v, %v", off, err)
	}
	spot := off
	base := 1
	spot.Spot, spot.OnDemandBase = true, &base
	if g.Size() != "2–6 x t3.small, autoscaled" || off.Size() != "4 x t3.small" || spot.Size() != "4 x t3.small, spot with on-demand 1 + 0%" {
		t.Errorf("sizes %q, %q", g.Size(), off.Size())
	}
	tr := g
	tr.Trim()
	if tr.Count != nil {
		t.Errorf("trimmed count %v", *tr.Count)
	}
	var d Duration
	for in, want := range map[string]string{"10m": "10m", "90s": "1m30s", "1h30m": "1h30m", "2h": "2h", "20s": "20s"} {
		if err := d.UnmarshalText([]byte(in)); err != nil || d.String() != want {
			t.Errorf("%s: %s, %v", in, d, err)
		}
	}
	if err := d.UnmarshalText([]byte("ten minutes")); err == nil || !strings.Contains(err.Error(), `invalid duration "ten minutes"`) {
		t.Errorf("bad duration: %v", err)
	}
}

// What update-group can check of its flags alone, before it reads the
// deployed group: rules that involve only the settings given.
func TestCheckGiven(t *testing.T) {
	tests := []struct {
		changes Group
		given   []string
		want    string // "" = accepted
	}{
		{Group{InstanceType: InstanceTypes{"big"}}, []string{"instanceType"}, "invalid instance type"},
		{Group{InstanceType: InstanceTypes{"c5.large", "c6g.large"}}, []string{"instanceType"}, "c6g.large is arm64"},
		{Group{OnDemandPercent: intp(200)}, []string{"onDemandPercent"}, "expected 0 to 100"},
		{Group{Spot: true, SpotAllocation: "x"}, []string{"spot", "spotAllocation"}, "invalid spot allocation strategy"},
		{Group{OnDemandBase: intp(2)}, []string{"spot", "onDemandBase"}, "applies to spot groups only"},
		// Whether the group is spot is unknown until the deployed group is read.
		{Group{OnDemandBase: intp(2)}, []string{"onDemandBase"}, ""},
		{Group{Labels: Labels{"a b": "c"}}, []string{"labels"}, "invalid label key"},
		{Group{Count: intp(-1)}, []string{"count"}, "count -1 is negative"},
		{Group{Count: intp(5), Max: intp(3)}, []string{"count", "max"}, "count 5 is above max 3"},
		{Group{SSHCIDR: "2001:db8::/32"}, []string{"sshCidr"}, "IPv4"},
		{Group{SSHCIDR: "0.0.0.0/0"}, []string{"sshCidr", "allowSshFromAnywhere"}, "SSH from anywhere"},
		{Group{SSHCIDR: "0.0.0.0/0", AllowSSHFromAnywhere: true}, []string{"sshCidr", "allowSshFromAnywhere"}, ""},
		// The deployed group may allow it: checked once it is read.
		{Group{SSHCIDR: "0.0.0.0/0"}, []string{"sshCidr"}, ""},
		{Group{RollingUpdate: RollingUpdate{MaxBatch: intp(0)}}, []string{"rollingUpdate.maxBatch"}, "at least 1"},
		// Unknown until the deployed count and max are read.
		{Group{Min: intp(5)}, []string{"min"}, ""},
		{Group{Count: intp(9)}, []string{"count"}, ""},
		{Group{RollingUpdate: RollingUpdate{MinInService: intp(9)}}, []string{"rollingUpdate.minInService"}, ""},
		// Settings not given are not checked: the instance type is not missing.
		{Group{VolumeSize: intp(40)}, []string{"volumeSize"}, ""},
		{Group{}, nil, ""},
	}
	for _, tt := range tests {
		tt.changes.Name = "g"
		err := tt.changes.CheckGiven("core", tt.given)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v given: %v, want %q", tt.given, err, tt.want)
		}
	}
}

func TestValidateCore(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Core)
		path   string
		want   string
	}{
		{"instance type", func(c *Core) { c.InstanceType = "large" }, "instanceType", "invalid instance type"},
		{"image", func(c *Core) { c.ImageID = "my-image" }, "imageId", "invalid image id"},
		{"key name", func(c *Core) { c.KeyName = "a`b" }, "keyName", "invalid key name"},
		{"ssh", func(c *Core) { c.SSHCIDR = "10.0.0.1/8" }, "sshCidr", "host bits set"},
		{"ssh ipv6", func(c *Core) { c.SSHCIDR = "2001:db8::/32" }, "sshCidr", "IPv4"},
		{"ssh from anywhere", func(c *Core) { c.SSHCIDR = "0.0.0.0/0" }, "sshCidr", "SSH from anywhere (0.0.0.0/0) is refused"},
		{"ssh from anywhere, IPv6", func(c *Core) { c.SSHCIDR = "::/0" }, "sshCidr", "SSH from anywhere (::/0) is refused"},
		{"vpc", func(c *Core) { c.VpcID = "vpc-x" }, "vpcId", "invalid VPC id"},
		{"subnet", func(c *Core) { c.SubnetIDs = []string{"sn-1"} }, "subnetIds", "invalid subnet id"},
		{"volume", func(c *Core) { c.VolumeSize = intp(7) }, "volumeSize", "invalid volume size 7"},
		{"no managers", func(c *Core) { c.Managers = intp(0) }, "managers", "invalid number of managers 0: at least 1"},
		{"negative managers", func(c *Core) { c.Managers = intp(-3) }, "managers", "at least 1"},
		{"two managers", func(c *Core) { c.Managers = intp(2) }, "managers", "invalid number of managers 2: even, and 2 managers tolerate no more failures than 1 (a majority of 2 is 2): use 1 or 3"},
		{"four managers", func(c *Core) { c.Managers = intp(4) }, "managers", "a majority of 4 is 3): use 3 or 5"},
		{"seven managers", func(c *Core) { c.Managers = intp(7) }, "managers", "invalid number of managers 7: at most 5"},
		{"clusterctl tag", func(c *Core) { c.Tags = Tags{"clusterctl:role": "core"} }, "tags", "the prefix clusterctl: is reserved"},
		{"aws tag", func(c *Core) { c.Tags = Tags{"AWS:x": "y"} }, "tags", "the prefix aws: is reserved"},
		{"too many tags", func(c *Core) { c.Tags = manyTags(40) }, "tags", "40 given, at most 39"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCore()
			tt.change(&c)
			checkFieldError(t, c.Complete(), tt.path, tt.want)
			if FlagFor(Core{}, tt.path) == "" {
				t.Errorf("path %q has no flag", tt.path)
			}
		})
	}
	c := validCore()
	if err := c.Complete(); err != nil {
		t.Fatalf("valid core refused: %v", err)
	}
}

func TestValidateCluster(t *testing.T) {
	valid := func() Cluster {
		c := New("prod")
		c.Core = validCore()
		c.Groups = []Group{validGroup(), {Name: "c5", InstanceType: InstanceTypes{"c5.large"}}}
		return c
	}
	tests := []struct {
		name   string
		change func(*Cluster)
		path   string
		want   string
	}{
		{"api version", func(c *Cluster) { c.APIVersion = "v1" }, "apiVersion", "want clusterctl/v1"},
		{"kind", func(c *Cluster) { c.Kind = "Group" }, "kind", "want Cluster"},
		{"name", func(c *Cluster) { c.Name = "9prod" }, "name", "invalid cluster name"},
		{"long name", func(c *Cluster) { c.Name = "a" + strings.Repeat("b", 128) }, "name", "over the 128 allowed"},
		{"core setting", func(c *Cluster) { c.Core.VolumeSize = intp(1) }, "core.volumeSize", "invalid volume size"},
		{"group setting", func(c *Cluster) { c.Groups[1].Max = intp(0) }, "groups[1].max", "count 1 is above max 0"},
		{"group nested setting", func(c *Cluster) { c.Groups[0].RollingUpdate.MaxBatch = intp(0) }, "groups[0].rollingUpdate.maxBatch", "at least 1"},
		{"group missing type", func(c *Cluster) { c.Groups[1].InstanceType = nil }, "groups[1].instanceType", "missing"},
		{"group twice", func(c *Cluster) { c.Groups[1].Name = c.Groups[0].Name }, "groups[1].name", "given twice"},
		{"group stack name", func(c *Cluster) { c.Name = strings.Repeat("p", 100); c.Groups[1].Name = strings.Repeat("g", 28) }, "groups[1].name", "over the 128 allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(&c)
			checkFieldError(t, c.Complete(), tt.path, tt.want)
		})
	}
	c := valid()
	if err := c.Complete(); err != nil {
		t.Fatalf("valid cluster refused: %v", err)
	}
	if c.Group("c5") == nil || *c.Group("c5").Max != 2 || c.Group("nosuch") != nil {
		t.Error("Group lookup or defaults")
	}
}

func checkFieldError(t *testing.T, err error, path, want string) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v, want a field error at %s", err, path)
	}
	if fe.Path != path || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q at %q, want %q at %q", err, fe.Path, want, path)
	}
	if errs.ExitCode(err) != errs.ExitUsage {
		t.Errorf("exit code %d, want 2", errs.ExitCode(err))
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
}

// Every setting has a flag, help and a file key, so that the flag
// commands and files can say everything, and errors can name a flag;
// but the core's secrets, which `clusterctl secrets` edits.
func TestEverySettingHasAFlag(t *testing.T) {
	for _, v := range []any{Core{}, Group{}} {
		flags := map[string]bool{}
		for _, f := range Fields(v) {
			if f.Path == "secrets" && f.Tag.Get("kong") == "-" && f.Tag.Get("help") != "" {
				continue
			}
			if f.Tag.Get("name") == "" || f.Tag.Get("help") == "" || f.Path == "" || strings.Contains(f.Path, "-") {
				t.Errorf("%T.%s: flag %q, help %q", v, f.Path, f.Tag.Get("name"), f.Tag.Get("help"))
			}
			if flags[f.Flag()] {
				t.Errorf("%T: flag %s twice", v, f.Flag())
			}
			flags[f.Flag()] = true
		}
	}
	if got := FlagFor(Group{}, "count"); got != "-c/--count" {
		t.Errorf("FlagFor(count) = %q", got)
	}
	if got := FlagFor(Group{}, "rollingUpdate.minInService"); got != "--min-in-service" {
		t.Errorf("FlagFor(rollingUpdate.minInService) = %q", got)
	}
	if got := FlagFor(Group{}, "nosuch"); got != "" {
		t.Errorf("FlagFor(nosuch) = %q", got)
	}
}

// Every cfn tag names a parameter internal/names declares.
func TestParametersAreNamed(t *testing.T) {
	known := []string{names.ParamInstanceType, names.ParamVolumeSize, names.ParamKeyName, names.ParamSSHCIDR, names.ParamVpcID,
		names.ParamSubnetIDs, names.ParamDesiredCapacity, names.ParamMinSize, names.ParamMaxSize, names.ParamManagers,
		names.ParamOnDemandBaseCapacity, names.ParamOnDemandPercentage, names.ParamSpotAllocationStrategy,
		names.ParamLoadBalancerScheme, names.ParamCertificateArn, names.ParamDeregistrationDelay, names.ParamAccessLogsBucket,
		names.ParamLogRetentionDays, names.ParamLogKMSKey, names.ParamLogDriver, names.ParamEngineVersion, names.ParamAlarms, names.ParamBackupKeep,
		names.ParamPublicIPs, names.ParamNetwork, names.ParamPublicSubnetIDs, names.ParamOperators}
	for _, v := range []any{Core{}, Group{}} {
		for _, f := range Fields(v) {
			if p := f.Param(); p != "" && p != "-" && !slices.Contains(known, p) {
				t.Errorf("%T.%s: parameter %q is not one of internal/names", v, f.Path, p)
			}
		}
	}
}

func TestUpdate(t *testing.T) {
	deployed := Group{Name: "g", InstanceType: InstanceTypes{"r3.large"}, Count: intp(3), Min: intp(1), Max: intp(5), VolumeSize: intp(30),
		Labels: Labels{"role": "worker"}, SSHCIDR: "203.0.113.0/24", KeyName: "ops", RollingUpdate: RollingUpdate{MaxBatch: intp(2)}}
	tests := []struct {
		name    string
		changes Group
		given   []string
		check   func(t *testing.T, g Group)
	}{
		{"nothing given keeps everything", Group{}, nil, func(t *testing.T, g Group) {
			if !reflect.DeepEqual(g, deployed) {
				t.Errorf("got %+v", g)
			}
		}},
		{"type and labels replace", Group{InstanceType: InstanceTypes{"r5.large", "r5a.large"}, Labels: Labels{"tier": "memory"}}, []string{"instanceType", "labels"}, func(t *testing.T, g Group) {
			if g.InstanceType.String() != "r5.large,r5a.large" || !maps.Equal(g.Labels, Labels{"tier": "memory"}) || g.SSHCIDR != "203.0.113.0/24" {
				t.Errorf("got %+v", g)
			}
		}},
		{"labels cleared", Group{Labels: Labels{}}, []string{"labels"}, func(t *testing.T, g Group) {
			if len(g.Labels) != 0 {
				t.Errorf("labels %v", g.Labels)
			}
		}},
		{"ssh closed", Group{}, []string{"sshCidr"}, func(t *testing.T, g Group) {
			if g.SSHCIDR != "" || g.KeyName != "ops" {
				t.Errorf("got %+v", g)
			}
		}},
		{"count above max moves max", Group{Count: intp(8)}, []string{"count"}, func(t *testing.T, g Group) {
			if *g.Count != 8 || *g.Max != 9 || *g.Min != 1 {
				t.Errorf("sizes %d/%d/%d", *g.Min, *g.Count, *g.Max)
			}
		}},
		{"count below min moves min", Group{Count: intp(0)}, []string{"count"}, func(t *testing.T, g Group) {
			if *g.Count != 0 || *g.Min != 0 || *g.Max != 5 {
				t.Errorf("sizes %d/%d/%d", *g.Min, *g.Count, *g.Max)
			}
		}},
		{"count with a given max keeps it", Group{Count: intp(8), Max: intp(8)}, []string{"count", "max"}, func(t *testing.T, g Group) {
			if *g.Count != 8 || *g.Max != 8 {
				t.Errorf("sizes %d/%d", *g.Count, *g.Max)
			}
		}},
		{"spot on starts from the spot defaults", Group{Spot: true}, []string{"spot"}, func(t *testing.T, g Group) {
			g.Default()
			if !g.Spot || *g.OnDemandBase != 0 || *g.OnDemandPercent != 0 || g.SpotAllocation != SpotPriceCapacityOptimized {
				t.Errorf("mix %v/%d/%d/%q", g.Spot, *g.OnDemandBase, *g.OnDemandPercent, g.SpotAllocation)
			}
		}},
		{"spot on with a percentage", Group{Spot: true, OnDemandPercent: intp(30)}, []string{"spot", "onDemandPercent"}, func(t *testing.T, g Group) {
			g.Default()
			if *g.OnDemandPercent != 30 {
				t.Errorf("percent %d", *g.OnDemandPercent)
			}
		}},
		{"nested setting", Group{RollingUpdate: RollingUpdate{MinInService: intp(0)}}, []string{"rollingUpdate.minInService"}, func(t *testing.T, g Group) {
			if *g.RollingUpdate.MaxBatch != 2 || *g.RollingUpdate.MinInService != 0 {
				t.Errorf("rolling update %+v", g.RollingUpdate)
			}
		}},
	}
	spotGroup := deployed
	spotGroup.Spot, spotGroup.OnDemandBase, spotGroup.OnDemandPercent, spotGroup.SpotAllocation = true, intp(1), intp(20), SpotLowestPrice
	off := spotGroup.Update(Group{}, []string{"spot"})
	off.Default()
	if off.Spot || off.OnDemandBase != nil || off.OnDemandPercent != nil || off.OnDemandPercentage() != 100 || off.SpotAllocation != "" || off.Check("core") != nil {
		t.Errorf("spot off: %+v, %v", off, off.Check("core"))
	}
	// Given again, spot keeps the mix: only a change of kind starts afresh.
	again := spotGroup.Update(Group{Spot: true}, []string{"spot"})
	if *again.OnDemandPercent != 20 || *again.OnDemandBase != 1 || again.SpotAllocation != SpotLowestPrice {
		t.Errorf("spot given again: %d/%d/%q", *again.OnDemandBase, *again.OnDemandPercent, again.SpotAllocation)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := deployed.Labels.String()
			got := deployed.Update(tt.changes, tt.given)
			tt.check(t, got)
			if deployed.Labels.String() != before {
				t.Error("Update changed the group it started from")
			}
		})
	}
}

// Trim leaves out exactly what Default fills in again: defaulted values
// go, chosen ones (and the count) stay, and Default restores the spec.
func TestTrim(t *testing.T) {
	tests := []struct {
		name          string
		in            Group
		min, max, vol bool // still set after Trim
		count         int
	}{
		{"all defaults", Group{}, false, false, false, 1},
		{"max one above the count is the default", Group{Count: intp(3), Max: intp(4)}, false, false, false, 3},
		{"max chosen", Group{Count: intp(3), Max: intp(3)}, false, true, false, 3},
		{"min and volume chosen", Group{Count: intp(2), Min: intp(1), VolumeSize: intp(50)}, true, false, true, 2},
		{"min 0 and volume 30 given are the defaults", Group{Min: intp(0), VolumeSize: intp(30)}, false, false, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.in
			g.Name, g.InstanceType = "g", InstanceTypes{"m5.large"}
			g.Default()
			want := g
			g.Trim()
			if (g.Min != nil) != tt.min || (g.Max != nil) != tt.max || (g.VolumeSize != nil) != tt.vol || g.Count == nil || *g.Count != tt.count {
				t.Errorf("trimmed %+v", g)
			}
			g.Default()
			if !reflect.DeepEqual(g, want) {
				t.Errorf("Default after Trim: %+v, want %+v", g, want)
			}
		})
	}
	c := Cluster{Core: Core{VolumeSize: intp(DefaultCoreVolumeSize)}, Groups: []Group{{Count: intp(2), Max: intp(3)}}}
	c.Trim()
	if c.Core.VolumeSize != nil || c.Core.InstanceType != "" || c.Groups[0].Max != nil {
		t.Errorf("trimmed cluster %+v", c)
	}
	for _, tt := range []struct {
		name             string
		in               Core
		managers, volume bool // still set after Trim
	}{
		{"all defaults", Core{}, false, false},
		{"one manager is the default", Core{Managers: intp(1)}, false, false},
		{"three managers chosen", Core{Managers: intp(3)}, true, false},
		{"volume chosen", Core{VolumeSize: intp(40), Managers: intp(5)}, true, true},
	} {
		t.Run("core "+tt.name, func(t *testing.T) {
			core := tt.in
			core.Default()
			want := core
			core.Trim()
			if (core.Managers != nil) != tt.managers || (core.VolumeSize != nil) != tt.volume || core.InstanceType != want.InstanceType {
				t.Errorf("trimmed %+v", core)
			}
			core.Default()
			if !reflect.DeepEqual(core, want) {
				t.Errorf("Default after Trim: %+v, want %+v", core, want)
			}
		})
	}
	c = Cluster{Core: Core{InstanceType: "m5.large", VolumeSize: intp(40)}}
	c.Trim()
	if *c.Core.VolumeSize != 40 || c.Core.InstanceType != "m5.large" {
		t.Errorf("a chosen core trimmed: %+v", c.Core)
	}
}

func TestDiff(t *testing.T) {
	old := Group{Name: "g", InstanceType: InstanceTypes{"r3.large"}, Count: intp(2), Labels: Labels{"role": "web"}}
	new := old
	new.Count = intp(3)
	new.Labels = Labels{"role": "api"}
	new.SSHCIDR = "203.0.113.0/24"
	got := Diff(old, new)
	want := []Change{
		{Path: "count", Old: 2, New: 3, OldText: "2", NewText: "3"},
		{Path: "labels", Old: map[string]string{"role": "web"}, New: map[string]string{"role": "api"}, OldText: "role=web", NewText: "role=api"},
		{Path: "sshCidr", Old: nil, New: "203.0.113.0/24", OldText: "(closed)", NewText: "203.0.113.0/24"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %+v\nwant %+v", got, want)
	}
	if d := Diff(old, old); len(d) != 0 {
		t.Errorf("Diff of equal groups = %+v", d)
	}
	// Empty and unset lists are the same setting.
	a, b := Group{Labels: Labels{}, SubnetIDs: []string{}}, Group{}
	if d := Diff(a, b); len(d) != 0 {
		t.Errorf("Diff(empty, unset) = %+v", d)
	}
	j, _ := json.Marshal(got[0])
	if string(j) != `{"setting":"count","old":2,"new":3}` {
		t.Errorf("JSON %s", j)
	}
}

// Parameters and intent together carry every setting of a group: one
// written to a template and read back is the same group.
func TestParametersAndIntentRoundTrip(t *testing.T) {
	for _, g := range []Group{validGroup(), {Name: "g", InstanceType: InstanceTypes{"t3.small"}}} {
		g.Default()
		params := Parameters(g)
		intent, err := Intent(g)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(intent)
		back := Group{Name: g.Name}
		if err := SetIntent(&back, raw); err != nil {
			t.Fatal(err)
		}
		if err := SetParameters(&back, params); err != nil {
			t.Fatal(err)
		}
		back.Default()
		if !reflect.DeepEqual(back, g) {
			t.Errorf("round trip:\n got %+v\nwant %+v", back, g)
		}
		for _, f := range Fields(g) {
			_, inParams := params[f.Param()]
			_, inIntent := intent[strings.Split(f.Path, ".")[0]]
			if inParams && inIntent {
				t.Errorf("%s is both a parameter and intent", f.Path)
			}
		}
	}
	// The test group above sets every setting, so that none escapes the round trip.
	for _, f := range Fields(validGroup()) {
		if f.Value.IsZero() {
			t.Errorf("validGroup leaves %s unset: the round trip does not cover it", f.Path)
		}
	}
	g := validGroup()
	params := Parameters(g)
	if params[names.ParamDesiredCapacity] != "3" || params[names.ParamSSHCIDR] != "203.0.113.0/24" || params[names.ParamKeyName] != "ops key" {
		t.Errorf("parameters %v", params)
	}
	if _, ok := params[names.ParamSubnetIDs]; ok {
		t.Error("a group's own subnets are intent (unset means the core's), not a parameter of the spec")
	}
	intent, _ := Intent(Group{Name: "g", InstanceType: InstanceTypes{"t3.small"}, Count: intp(1)})
	if len(intent) != 0 {
		t.Errorf("intent of a default group = %v, want nothing", intent)
	}
	var c Core
	if err := SetParameters(&c, map[string]string{names.ParamSubnetIDs: "['subnet-1', 'subnet-2']", names.ParamVolumeSize: "20"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.SubnetIDs, []string{"subnet-1", "subnet-2"}) || *c.VolumeSize != 20 {
		t.Errorf("core from parameters %+v", c)
	}
	if err := SetParameters(&c, map[string]string{names.ParamVolumeSize: "big"}); err == nil {
		t.Error("a non-numeric parameter was accepted")
	}
}

func TestSplitList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"subnet-1,subnet-2", []string{"subnet-1", "subnet-2"}},
		{"['subnet-1', 'subnet-2']", []string{"subnet-1", "subnet-2"}},
		{"subnet-1", []string{"subnet-1"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := SplitList(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("SplitList(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLabelsForms(t *testing.T) {
	var l Labels
	for _, flag := range []string{"role=worker,tier=memory", "zone=a"} {
		if err := l.UnmarshalText([]byte(flag)); err != nil {
			t.Fatal(err)
		}
	}
	if l.String() != "role=worker,tier=memory,zone=a" {
		t.Errorf("flags read as %q", l)
	}
	for flag, want := range map[string]string{
		"role":        "expected key=value",
		"a=1,,b=2":    "empty entry",
		"zone=b":      `key "zone" given twice`,
		"a=1,a=2,b=3": "given twice",
	} {
		m := maps.Clone(l)
		if err := m.UnmarshalText([]byte(flag)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("-m %s: %v, want %q", flag, err, want)
		}
	}
	var none Labels
	if err := none.UnmarshalText(nil); err != nil || none == nil || len(none) != 0 {
		t.Errorf(`-m "" = %v, %v; want no labels`, none, err)
	}

	var fromJSON, fromYAML struct {
		Labels Labels `json:"labels" yaml:"labels"`
	}
	if err := json.Unmarshal([]byte(`{"labels":{"role":"worker","tier":"memory"}}`), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte("labels:\n  role: worker\n  tier: memory\n"), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if fromJSON.Labels.String() != "role=worker,tier=memory" || fromYAML.Labels.String() != "role=worker,tier=memory" {
		t.Errorf("JSON %v, YAML %v", fromJSON.Labels, fromYAML.Labels)
	}
	out, _ := json.Marshal(fromJSON)
	if string(out) != `{"labels":{"role":"worker","tier":"memory"}}` {
		t.Errorf("marshalled %s", out)
	}
	if p, err := ParseLabels("b=2,a=1"); err != nil || p.String() != "a=1,b=2" {
		t.Errorf("ParseLabels = %v, %v", p, err)
	}
	if p, err := ParseLabels(""); err != nil || p != nil {
		t.Errorf("ParseLabels(\"\") = %v, %v", p, err)
	}
}

// Instance types come from flags (comma-separated, repeatable) and files
// (a string or a list); one type is written as a string.
// manyTags returns n valid tags.
func manyTags(n int) Tags {
	t := Tags{}
	for i := range n {
		t[fmt.Sprintf("tag%d", i)] = "v"
	}
	return t
}

// --tags reads k=v,k=v (a value may hold '='), repeatable; files hold a
// mapping; the limits and reserved prefixes hold for both.
func TestTagsForms(t *testing.T) {
	for _, tt := range []struct {
		flags []string
		want  Tags
		err   string
	}{
		{[]string{"team=payments,cost-center=42"}, Tags{"team": "payments", "cost-center": "42"}, ""},
		{[]string{"team=payments", "env=prod"}, Tags{"team": "payments", "env": "prod"}, ""},
		{[]string{"expr=a=b"}, Tags{"expr": "a=b"}, ""},
		{[]string{"owner=Jane Doe"}, Tags{"owner": "Jane Doe"}, ""},
		{[]string{""}, Tags{}, ""},
		{[]string{"team"}, nil, `invalid tag "team": expected key=value`},
		{[]string{"a=1,,b=2"}, nil, "empty entry"},
		{[]string{"a=1", "a=2"}, nil, `key "a" given twice`},
	} {
		var got Tags
		var err error
		for _, f := range tt.flags {
			if err = got.UnmarshalText([]byte(f)); err != nil {
				break
			}
		}
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.flags, err, tt.err)
			}
		case err != nil || !maps.Equal(got, tt.want):
			t.Errorf("%q: %v, %v; want %v", tt.flags, got, err, tt.want)
		}
	}
	var c Cluster
	if err := yaml.Unmarshal([]byte("core:\n  tags:\n    team: payments\ngroups:\n  - name: g\n    tags: {env: prod}\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.Core.Tags["team"] != "payments" || c.Groups[0].Tags["env"] != "prod" {
		t.Errorf("from a file: %+v", c)
	}
}

func TestInstanceTypesForms(t *testing.T) {
	var flags InstanceTypes
	if err := flags.UnmarshalText([]byte("m5.large, m5a.large,m6i.large")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(flags, InstanceTypes{"m5.large", "m5a.large", "m6i.large"}) || flags.String() != "m5.large,m5a.large,m6i.large" || flags.First() != "m5.large" {
		t.Errorf("flag read as %q", flags)
	}
	// A later -t replaces an earlier one, as for any flag of one value.
	if err := flags.UnmarshalText([]byte("c5.large")); err != nil || !slices.Equal(flags, InstanceTypes{"c5.large"}) {
		t.Errorf("second -t read as %q, %v", flags, err)
	}
	var typo InstanceTypes
	_ = typo.UnmarshalText([]byte("m5.large,,m6i.large"))
	if err := checkInstanceTypes("instanceType", typo); err == nil || !strings.Contains(err.Error(), "empty entry") {
		t.Errorf("-t m5.large,,m6i.large: %v", err)
	}
	for _, tt := range []struct {
		json, yaml string
		want       InstanceTypes
		out        string
	}{
		{`"m5.large"`, `m5.large`, InstanceTypes{"m5.large"}, `"m5.large"`},
		{`"m5.large,m5a.large"`, `m5.large,m5a.large`, InstanceTypes{"m5.large", "m5a.large"}, `["m5.large","m5a.large"]`},
		{`["m5.large","m5a.large"]`, `[m5.large, m5a.large]`, InstanceTypes{"m5.large", "m5a.large"}, `["m5.large","m5a.large"]`},
		{`["m5.large"]`, "\n  - m5.large", InstanceTypes{"m5.large"}, `"m5.large"`},
	} {
		var j, y struct {
			T InstanceTypes `json:"instanceType" yaml:"instanceType"`
		}
		if err := json.Unmarshal([]byte(`{"instanceType":`+tt.json+`}`), &j); err != nil || !slices.Equal(j.T, tt.want) {
			t.Errorf("JSON %s: %q, %v", tt.json, j.T, err)
		}
		if err := yaml.Unmarshal([]byte("instanceType: "+strings.ReplaceAll(tt.yaml, `\n`, "\n")), &y); err != nil || !slices.Equal(y.T, tt.want) {
			t.Errorf("YAML %s: %q, %v", tt.yaml, y.T, err)
		}
		if out, _ := json.Marshal(tt.want); string(out) != tt.out {
			t.Errorf("%q written as %s, want %s", tt.want, out, tt.out)
		}
	}
	var bad struct {
		T InstanceTypes `json:"instanceType" yaml:"instanceType"`
	}
	if err := json.Unmarshal([]byte(`{"instanceType":{"a":1}}`), &bad); err == nil {
		t.Error("an object read as instance types")
	}
	if err := yaml.Unmarshal([]byte("instanceType: {a: 1}"), &bad); err == nil {
		t.Error("a mapping read as instance types")
	}
	y, _ := yaml.Marshal(map[string]InstanceTypes{"one": {"m5.large"}, "two": {"m5.large", "m6i.large"}})
	if string(y) != "one: m5.large\ntwo:\n    - m5.large\n    - m6i.large\n" {
		t.Errorf("YAML written as:\n%s", y)
	}
}

// A cluster file fills the same types: YAML and JSON, camelCase keys.
func TestFileForms(t *testing.T) {
	const doc = `apiVersion: clusterctl/v1
kind: Cluster
name: prod
core:
  instanceType: m5.large
  sshCidr: 203.0.113.0/24
groups:
  - name: r3-agents
    instanceType: r3.large
    count: 3
    labels: {role: worker}
    rollingUpdate: {maxBatch: 2, minInService: 0}
  - name: spot
    instanceType: [m5.large, m5a.large, m6i.large]
    spot: true
    onDemandBase: 1
    onDemandPercent: 20
    spotAllocation: capacity-optimized
`
	var c Cluster
	if err := yaml.Unmarshal([]byte(doc), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Complete(); err != nil {
		t.Fatal(err)
	}
	g := c.Group("r3-agents")
	if g == nil || *g.Count != 3 || *g.Max != 4 || g.Labels["role"] != "worker" || *g.RollingUpdate.MinInService != 0 || c.Core.SSHCIDR != "203.0.113.0/24" {
		t.Fatalf("read %+v", c)
	}
	if sp := c.Group("spot"); sp == nil || sp.InstanceType.String() != "m5.large,m5a.large,m6i.large" || !sp.Spot || *sp.OnDemandBase != 1 || *sp.OnDemandPercent != 20 || sp.SpotAllocation != SpotCapacityOptimized {
		t.Fatalf("spot group read as %+v", sp)
	}
	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Cluster
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("JSON round trip:\n%s\ngot %+v", j, back)
	}
	var plain Cluster
	_ = json.Unmarshal([]byte(`{"apiVersion":"clusterctl/v1","kind":"Cluster","name":"x","core":{},"groups":[{"name":"g","instanceType":"t3.small"}]}`), &plain)
	out, _ := json.Marshal(plain.Groups[0])
	if string(out) != `{"name":"g","instanceType":"t3.small"}` {
		t.Errorf("unset settings are written: %s", out)
	}
}

// The shapes each rule accepts and refuses, beyond one case per rule.
func TestValueShapes(t *testing.T) {
	type shape struct {
		check     func(string) error
		ok, wrong []string
	}
	for name, s := range map[string]shape{
		"instance type": {func(v string) error { return checkInstanceType("t", v) },
			[]string{"r3.large", "c5.xlarge", "m7gd.2xlarge", "t4g.nano", "u-6tb1.metal", "x2iedn.32xlarge", "mac2-m2pro.metal"},
			[]string{"", "large", "r3", "r3.", ".large", "R3.large", "r.large", "r3.large;id", "r3 .large"}},
		"image": {func(v string) error { return checkImage("i", v) },
			[]string{"", "ami-12345678", "ami-0123456789abcdef0", "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64"},
			[]string{"ami-xyz", "al2023", "/path with space", "ami-123", "ami-0123456789ABCDEF0"}},
		"ssh cidr": {func(v string) error { return errors.Join(checkSSHCIDR("s", v), checkSSHAnywhere("s", v, false)) },
			[]string{"", "203.0.113.0/24", "198.51.100.7/32", "0.0.0.0/1"},
			[]string{"10.0.0.0", "10.0.0.0/33", "300.0.0.0/8", " 10.0.0.0/8", "2001:db8::/32", "0.0.0.0/0", "::/0"}},
		"ssh cidr from anywhere allowed": {func(v string) error { return errors.Join(checkSSHCIDR("s", v), checkSSHAnywhere("s", v, true)) },
			[]string{"0.0.0.0/0", "203.0.113.0/24"},
			[]string{"::/0", "10.0.0.0/0"}},
		"cluster name": {CheckClusterName,
			[]string{"core", "Core9", "a-b", "a" + strings.Repeat("b", 127)},
			[]string{"", "9core", "-core", "core_1", "co re", "a" + strings.Repeat("b", 128)}},
		"group name": {func(v string) error { return CheckGroupName("core", v) },
			[]string{"r3-agents", "g", strings.Repeat("g", 123), "Control"},
			[]string{"r3.agents", "g$(rm)", strings.Repeat("g", 124), "control"}},
		"labels": {func(v string) error {
			l, err := ParseLabels(v)
			if err != nil {
				return err
			}
			return checkLabels("labels", l)
		},
			[]string{"", "role=worker,instancetype=r3", "example.com/tier=gold_1"},
			[]string{"a", "a=1,", "a=1,a=2", "a=$(reboot)", "a b=1", "=1", "a=", "a=1=2", "clusterctl.x=1"}},
		"subnets": {func(v string) error { return checkSubnets("s", SplitList(v)) },
			[]string{"", "subnet-0123abcd", "subnet-0123abcd,subnet-0123456789abcdef0"},
			[]string{"subnet-xyz", "sub-0123abcd", "subnet-0123abcd,subnet-0123abcd"}},
	} {
		for _, v := range s.ok {
			if err := s.check(v); err != nil {
				t.Errorf("%s %q refused: %v", name, v, err)
			}
		}
		for _, v := range s.wrong {
			if err := s.check(v); err == nil {
				t.Errorf("%s %q accepted", name, v)
			}
		}
	}
}

// Args gives back every setting that is set, as flags a shell reads as
// they are, and parsing them back gives the same group.
func TestArgs(t *testing.T) {
	g := validGroup()
	got := strings.Join(Args(g), " ")
	want := "--instance-type r5.large,r5a.large,r6i.large --spot --on-demand-base 1 --on-demand-percent 25 --spot-allocation capacity-optimized --count 3 --min 3 --max 5 --labels role=worker,tier=memory/hot --image-id ami-0123456789abcdef0 " +
		"--volume-size 50 --subnet-ids subnet-0aaa1111,subnet-0bbb2222 --ssh-cidr 203.0.113.0/24 --key-name 'ops key' --public-ips --allow-ssh-from-anywhere " +
		"--publish 80:30080,443:30080/tls,53/udp --load-balancer internal --allow-from 10.0.0.0/16,192.168.0.0/24 " +
		"--certificate arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-0000-1111-2222-333344445555 --deregistration-delay 60 --access-logs ops-lb-logs " +
		"--max-batch 2 --min-in-service 1 --autoscale --scale-down-after 20s --tags 'cost-center=4711,owner=Jane Doe'"
	if got != want {
		t.Errorf("Args =\n%s\nwant\n%s", got, want)
	}
	if got := Args(Group{Name: "g", KeyName: "it's"}); !slices.Equal(got, []string{"--key-name", `'it'\''s'`}) {
		t.Errorf("Args quoting = %q", got)
	}
	if got := Args(Core{}); len(got) != 0 {
		t.Errorf("Args of nothing set = %q", got)
	}
}

// update-core changes exactly the settings given; its flags are checked
// alone before the deployed core is read.
func TestCoreUpdate(t *testing.T) {
	deployed := validCore()
	got := deployed.Update(Core{Managers: intp(5), SSHCIDR: ""}, []string{"managers", "sshCidr"})
	want := validCore()
	want.Managers, want.SSHCIDR = intp(5), ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Update = %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(deployed, validCore()) {
		t.Error("Update changed the deployed core")
	}
	if got := deployed.Update(Core{InstanceType: "x"}, nil); !reflect.DeepEqual(got, deployed) {
		t.Errorf("nothing given changed %+v", got)
	}
	checkFieldError(t, Core{Managers: intp(2)}.CheckGiven([]string{"managers"}), "managers", "even")
	if err := (Core{Managers: intp(3)}).CheckGiven([]string{"managers"}); err != nil {
		t.Errorf("an instance type not given was checked: %v", err)
	}
}

// The core's log settings: retention as CloudWatch allows it, a key by
// its ARN, a driver of the two.
func TestCoreLogSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		core Core
		want string // "" for valid
	}{
		{"defaults", Core{}, ""},
		{"retention allowed", Core{LogRetentionDays: ptr(365)}, ""},
		{"retention longest", Core{LogRetentionDays: ptr(3653)}, ""},
		{"retention not allowed", Core{LogRetentionDays: ptr(31)}, "logRetentionDays: invalid log retention 31 days: CloudWatch Logs allows 1, 3, 5,"},
		{"retention zero", Core{LogRetentionDays: ptr(0)}, "invalid log retention 0 days"},
		{"key arn", Core{LogKMSKey: "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"}, ""},
		{"key alias", Core{LogKMSKey: "alias/logs"}, `logKmsKey: invalid KMS key "alias/logs"`},
		{"key alias arn", Core{LogKMSKey: "arn:aws:kms:eu-west-1:123456789012:alias/logs"}, "invalid KMS key"},
		{"key with shell", Core{LogKMSKey: "arn:aws:kms:eu-west-1:123456789012:key/$(x)"}, "invalid KMS key"},
		{"driver none", Core{LogDriver: "none"}, ""},
		{"driver awslogs", Core{LogDriver: "awslogs"}, ""},
		{"driver other", Core{LogDriver: "json-file"}, `logDriver: invalid log driver "json-file": expected awslogs or none`},
		{"engine version", Core{EngineVersion: "24.0.5"}, ""},
		{"engine version with release", Core{EngineVersion: "25.0.8-1.amzn2023.0.4"}, ""},
		{"engine version two numbers", Core{EngineVersion: "26.1"}, ""},
		{"engine version word", Core{EngineVersion: "latest"}, `engineVersion: invalid Docker Engine version "latest"`},
		{"engine version shell", Core{EngineVersion: "25.0.8;reboot"}, "invalid Docker Engine version"},
		{"engine version spaced", Core{EngineVersion: "25.0.8 docker-ce"}, "invalid Docker Engine version"},
		{"backups kept", Core{BackupKeep: ptr(1)}, ""},
		{"backups kept, most", Core{BackupKeep: ptr(100)}, ""},
		{"no backup kept", Core{BackupKeep: ptr(0)}, "backupKeep: invalid number of backups to keep 0: 1 to 100"},
		{"too many backups kept", Core{BackupKeep: ptr(101)}, "backupKeep: invalid number of backups to keep 101: 1 to 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.core
			err := c.Complete()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			case tc.want != "" && errs.ExitCode(err) != 2:
				t.Fatalf("exit code %d, want 2", errs.ExitCode(err))
			}
		})
	}
	c := Core{}
	c.Default()
	if *c.LogRetentionDays != 30 || c.LogDriver != "awslogs" || *c.BackupKeep != 8 || c.EngineVersion != DefaultEngineVersion {
		t.Errorf("defaults: retention %d, driver %q, backups %d, engine %q", *c.LogRetentionDays, c.LogDriver, *c.BackupKeep, c.EngineVersion)
	}
	c.Trim()
	if c.LogRetentionDays != nil || c.LogDriver != "" || c.BackupKeep != nil || c.EngineVersion != "" {
		t.Errorf("Trim kept defaults: %+v", c)
	}
}
