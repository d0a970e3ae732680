package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var testJoin = Join{
	ClusterName:            "prod",
	BucketName:             "prod-bucket-1a2b3c4d5e6f",
	ControlPrivateIp:       "10.0.1.10",
	ControlSecurityGroupId: "sg-0c0c0c0c0c0c0c0c0",
	AgentSecurityGroupId:   "sg-0a0a0a0a0a0a0a0a0",
	AgentInstanceProfile:   "arn:aws:iam::123456789012:instance-profile/prod-AgentInstanceProfile-ABCDEF",
	VpcId:                  "vpc-0123456789abcdef0",
	SubnetIds:              []string{"subnet-0000000000000000a", "subnet-0000000000000000b"},
	ContractVersion:        ContractVersion,
}

type variant struct {
	name  string
	core  *CoreSpec
	group *GroupSpec
}

func (v variant) render() (*Rendered, error) {
	if v.core != nil {
		return Core(*v.core)
	}
	return Group(*v.group)
}

// variants are the rendered forms covered by golden files, lint and the
// structural checks.
func variants() []variant {
	return []variant{
		{name: "core-default", core: &CoreSpec{
			Cluster: "prod", InstanceType: "t3.medium", Version: "1.2.3",
			VpcID: testJoin.VpcId, SubnetIDs: testJoin.SubnetIds,
		}},
		{name: "core-ssh-key-ami", core: &CoreSpec{
			Cluster: "prod", InstanceType: "m5.large", Version: "1.2.3",
			ImageID: "ami-0abcdef1234567890", KeyName: "ops", SSHCIDR: "203.0.113.0/24",
			VpcID: testJoin.VpcId, SubnetIDs: testJoin.SubnetIds, VolumeSize: 50,
		}},
		{name: "core-ssm-graviton", core: &CoreSpec{
			Cluster: "arm", InstanceType: "c7gn.large", Version: "1.2.3",
			ImageID: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-6.1-arm64",
			VpcID:   testJoin.VpcId, SubnetIDs: testJoin.SubnetIds,
		}},
		{name: "group-default", group: &GroupSpec{
			Cluster: "prod", Group: "c5-agents", InstanceType: "c5.xlarge", Version: "1.2.3",
			Desired: 2, Min: 2, Max: 4, VolumeSize: 30, Join: testJoin,
		}},
		{name: "group-labels-own-subnets-arm", group: &GroupSpec{
			Cluster: "prod", Group: "r7g-agents", InstanceType: "r7g.large", Version: "1.2.3",
			Desired: 3, Min: 1, Max: 3, VolumeSize: 100,
			Labels:    []Label{{Key: "instancetype", Value: "r7g"}, {Key: "role", Value: "worker"}, {Key: "zone", Value: "a b"}},
			SubnetIDs: []string{"subnet-0000000000000000c"},
			SSHCIDR:   "198.51.100.7/32", MaxBatch: 2, MinInService: 1,
			ImageID: "ami-0123456789abcdef0", KeyName: "ops", Join: testJoin,
		}},
		{name: "group-offline", group: &GroupSpec{
			Cluster: "prod", Group: "c5-agents", InstanceType: "c5.xlarge", Version: "1.2.3",
			Desired: 1, Min: 1, Max: 1, VolumeSize: 30,
		}},
	}
}

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
			golden(t, v.name+".golden.json", r.Template)
			golden(t, v.name+".stack.golden.json", append(meta, '\n'))
			if len(r.Artifacts) > 0 {
				golden(t, v.name+".node.golden.sh", r.Artifacts[0].Body)
			}
			if v.core != nil {
				// The control node program, as the node receives it.
				golden(t, v.name+".control.golden.sh", []byte(embeddedProgram(t, resolvedUserData(t, r, "ControlLaunchTemplate"))))
			}
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
		var ind bytes.Buffer
		if err := json.Indent(&ind, bytes.TrimSpace(a.Template), "", "  "); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(append(ind.Bytes(), '\n'), a.Template) {
			t.Errorf("%s: template is not indented JSON", v.name)
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
		{"ami-xyz", "", "", true},
		{"ami-0123456789ABCDEF0", "", "", true},
		{"my-image", "", "", true},
		{"/bad path", "", "", true},
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
		{name: "all", drop: JoinOutputNames(), missing: strings.Join(JoinOutputNames(), ", ")},
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

	j, err = JoinFromOutputs(mergeMap(testJoin.Outputs(), map[string]string{"SubnetIds": "subnet-1, subnet-2,"}))
	if err != nil || !slices.Equal(j.SubnetIds, []string{"subnet-1", "subnet-2"}) {
		t.Errorf("SubnetIds with spaces: %q, %v", j.SubnetIds, err)
	}
}

func TestParametersMatchTemplate(t *testing.T) {
	// Parameters that may legitimately be empty when deployed.
	optional := map[string]bool{"ImageId": true, "KeyName": true, "SshCidr": true}
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
	r, err := Group(*variants()[5].group)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range JoinOutputNames() {
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
			for _, name := range JoinOutputNames() {
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
			if b["DeletionPolicy"] != "Delete" {
				t.Errorf("bucket DeletionPolicy = %v", b["DeletionPolicy"])
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
			// instead of SSH).
			for _, role := range []string{"ControlRole", "AgentRole"} {
				arns := list(dig(res, role, "Properties", "ManagedPolicyArns"))
				if len(arns) != 1 || dig(arns[0], "Fn::Sub") != "arn:${AWS::Partition}:iam::aws:policy/AmazonSSMManagedInstanceCore" {
					t.Errorf("%s managed policies %v, want AmazonSSMManagedInstanceCore", role, arns)
				}
			}

			// Agents may only read the join material and the swarm's
			// status.
			for _, s := range list(dig(res, "AgentRole", "Properties", "Policies")) {
				for _, st := range list(dig(s, "PolicyDocument", "Statement")) {
					st := obj(st)
					switch act := st["Action"]; act {
					case "s3:GetObject":
						if r := dig(st, "Resource", "Fn::Sub"); r != "${Bucket.Arn}/join/*" && r != "${Bucket.Arn}/status/swarm.json" {
							t.Errorf("agents read %v", st["Resource"])
						}
					case "s3:ListBucket":
						if !jsonEqual(dig(st, "Condition", "StringLike", "s3:prefix"), []any{"join/*", "status/swarm.json"}) {
							t.Errorf("agents list beyond join/: %v", st["Condition"])
						}
					default:
						t.Errorf("agents may %v", act)
					}
				}
			}

			inst := obj(res["ControlInstance"])
			if dig(inst, "CreationPolicy", "ResourceSignal", "Timeout") != "PT10M" {
				t.Error("control instance without a 10 minute creation signal")
			}
			if got := dig(inst, "Properties", "LaunchTemplate", "Version", "Fn::GetAtt"); !jsonEqual(got, []any{"ControlLaunchTemplate", "LatestVersionNumber"}) {
				t.Errorf("control instance launch template version = %v", got)
			}
			wantTags(t, list(dig(inst, "Properties", "Tags")), map[string]string{
				"Name": v.core.Cluster + "-control", TagCluster: v.core.Cluster, TagRole: RoleCore,
				TagGroup: GroupControl, TagVersion: v.core.Version,
			})
			ud := userDataOf(t, res, "ControlLaunchTemplate")
			if !strings.Contains(ud, "--resource ControlInstance ") {
				t.Error("control user data does not signal ControlInstance")
			}

			checkNodeSecurity(t, res)
			if !slices.Equal(r.Capabilities, []string{"CAPABILITY_IAM"}) {
				t.Errorf("capabilities %v", r.Capabilities)
			}
			if want := (map[string]string{TagCluster: v.core.Cluster, TagRole: RoleCore, TagGroup: GroupControl, TagVersion: v.core.Version}); !maps.Equal(r.Tags, want) {
				t.Errorf("stack tags %v, want %v", r.Tags, want)
			}
			if r.StackName != v.core.Cluster {
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
			spec := v.group
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
			if dig(asg, "Properties", "LaunchTemplate", "LaunchTemplateId", "Ref") != "LaunchTemplate" ||
				!jsonEqual(dig(asg, "Properties", "LaunchTemplate", "Version", "Fn::GetAtt"), []any{"LaunchTemplate", "LatestVersionNumber"}) {
				t.Errorf("ASG launch template %v", dig(asg, "Properties", "LaunchTemplate"))
			}
			if dig(asg, "CreationPolicy", "ResourceSignal", "Timeout") != "PT10M" ||
				dig(asg, "CreationPolicy", "ResourceSignal", "Count", "Ref") != "DesiredCapacity" {
				t.Errorf("ASG creation policy %v", asg["CreationPolicy"])
			}
			roll := obj(dig(asg, "UpdatePolicy", "AutoScalingRollingUpdate"))
			if roll["WaitOnResourceSignals"] != true || roll["PauseTime"] != "PT10M" ||
				dig(roll, "MaxBatchSize", "Ref") != "MaxBatchSize" || dig(roll, "MinInstancesInService", "Ref") != "MinInstancesInService" {
				t.Errorf("rolling update policy %v", roll)
			}
			name := GroupStackName(spec.Cluster, spec.Group)
			var asgTags []any
			asgLabels := map[string]string{}
			for _, tg := range list(dig(asg, "Properties", "Tags")) {
				key, _ := obj(tg)["Key"].(string)
				if strings.HasPrefix(key, TagLabelPrefix) {
					// Labels are listed on the group for inventory; nodes
					// get them from the launch template, so a label change
					// rolls them.
					if obj(tg)["PropagateAtLaunch"] != false {
						t.Errorf("ASG label tag %v propagated", tg)
					}
					asgLabels[strings.TrimPrefix(key, TagLabelPrefix)], _ = obj(tg)["Value"].(string)
					continue
				}
				if obj(tg)["PropagateAtLaunch"] != true {
					t.Errorf("ASG tag %v not propagated", tg)
				}
				asgTags = append(asgTags, tg)
			}
			if len(asgLabels) != len(spec.Labels) {
				t.Errorf("ASG label tags %v, want %v", asgLabels, spec.Labels)
			}
			for _, l := range spec.Labels {
				if asgLabels[l.Key] != l.Value {
					t.Errorf("ASG label %s = %q, want %q", l.Key, asgLabels[l.Key], l.Value)
				}
			}
			wantTags(t, asgTags, map[string]string{
				"Name": name, TagCluster: spec.Cluster, TagRole: RoleAgents, TagGroup: spec.Group, TagVersion: spec.Version,
			})

			labelTags := map[string]string{}
			for _, l := range spec.Labels {
				labelTags[TagLabelPrefix+l.Key] = l.Value
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
			wantLabels, wantImage, wantSubnets := NoLabels, ImageDefault, SubnetsCore
			if len(spec.Labels) > 0 {
				var kv []string
				for _, l := range spec.Labels {
					kv = append(kv, l.Key+"="+l.Value)
				}
				wantLabels = strings.Join(kv, ",")
			}
			if spec.ImageID != "" {
				wantImage = spec.ImageID
			}
			if len(spec.SubnetIDs) > 0 {
				wantSubnets = SubnetsOwn
			}
			want := map[string]string{
				TagCluster: spec.Cluster, TagRole: RoleAgents, TagGroup: spec.Group, TagVersion: spec.Version,
				TagLabels: wantLabels, TagImage: wantImage, TagSubnets: wantSubnets,
			}
			if !maps.Equal(r.Tags, want) {
				t.Errorf("stack tags %v, want %v", r.Tags, want)
			}
			for k, val := range r.Tags {
				if val == "" {
					t.Errorf("stack tag %s is empty", k)
				}
			}
			wantSubnetParam := strings.Join(spec.Join.SubnetIds, ",")
			if len(spec.SubnetIDs) > 0 {
				wantSubnetParam = strings.Join(spec.SubnetIDs, ",")
			}
			if r.Parameters["SubnetIds"] != wantSubnetParam {
				t.Errorf("SubnetIds = %q, want %q", r.Parameters["SubnetIds"], wantSubnetParam)
			}
		})
	}
}

// checkNodeSecurity asserts what holds for every node of every template:
// IMDSv2, encrypted volumes, no ingress from anywhere, SSH only from the
// SshCidr parameter and only under its condition.
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
			rules = append(rules, obj(r["Properties"]))
			conds[id] = r["Condition"]
		case "AWS::EC2::SecurityGroup":
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
			if st := obj(s); dig(st, "Resource", "Fn::Sub") == "${Bucket.Arn}/"+SwarmPrefix+"/*" {
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
	if strings.Contains(strings.ToLower(s), "placeholder") || !strings.Contains(s, "dnf install -y aws-cfn-bootstrap") || !strings.Contains(s, "trap finish EXIT") {
		t.Errorf("%s user data is not the node bootstrap", lt)
	}
	return s
}

func TestErrors(t *testing.T) {
	core := func(f func(*CoreSpec)) func() error {
		return func() error {
			s := *variants()[0].core
			f(&s)
			_, err := Core(s)
			return err
		}
	}
	group := func(f func(*GroupSpec)) func() error {
		return func() error {
			s := *variants()[3].group
			f(&s)
			_, err := Group(s)
			return err
		}
	}
	many := make([]Label, MaxLabels+1)
	for i := range many {
		many[i] = Label{Key: string(rune('a'+i/26)) + string(rune('a'+i%26)), Value: "v"}
	}
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"core bad name", core(func(s *CoreSpec) { s.Cluster = "1prod" }), `rendering core template: cluster name "1prod"`},
		{"core empty version", core(func(s *CoreSpec) { s.Version = "" }), "clusterctl version is empty"},
		{"core empty type", core(func(s *CoreSpec) { s.InstanceType = "" }), "instance type is empty"},
		{"core ipv6 ssh", core(func(s *CoreSpec) { s.SSHCIDR = "2001:db8::/32" }), "SSH CIDR"},
		{"core bad ssh", core(func(s *CoreSpec) { s.SSHCIDR = "10.0.0.1" }), "SSH CIDR"},
		{"core bad image", core(func(s *CoreSpec) { s.ImageID = "ubuntu" }), `image "ubuntu"`},
		{"core long name", core(func(s *CoreSpec) { s.Cluster = "a" + strings.Repeat("b", 128) }), "is 129 characters, limit 128"},
		{"core small volume", core(func(s *CoreSpec) { s.VolumeSize = 4 }), "volume size 4 GiB"},
		{"group bad name", group(func(s *GroupSpec) { s.Group = "r3_agents" }), `rendering group template: group name "r3_agents"`},
		{"group long stack name", group(func(s *GroupSpec) { s.Cluster = "a" + strings.Repeat("b", 99); s.Group = strings.Repeat("c", 28) }), "is 129 characters, limit 128"},
		{"group sizes", group(func(s *GroupSpec) { s.Min, s.Desired, s.Max = 2, 1, 3 }), "min 2, desired 1, max 3"},
		{"group min in service", group(func(s *GroupSpec) { s.MinInService = 4 }), "must be below max size 4"},
		{"group zero volume", group(func(s *GroupSpec) { s.VolumeSize = 0 }), "volume size 0 GiB"},
		{"group too many labels", group(func(s *GroupSpec) { s.Labels = many }), "41 labels, limit 40"},
		{"group unsorted labels", group(func(s *GroupSpec) { s.Labels = []Label{{Key: "b", Value: "1"}, {Key: "a", Value: "2"}} }), "not sorted"},
		{"group long label value", group(func(s *GroupSpec) { s.Labels = []Label{{Key: "k", Value: strings.Repeat("v", 257)}} }), "257-character value"},
		{"group reserved label", group(func(s *GroupSpec) { s.Labels = []Label{{Key: "clusterctl.group", Value: "x"}} }), "prefix clusterctl. is reserved"},
		{"group labels tag too long", group(func(s *GroupSpec) {
			s.Labels = []Label{{Key: "a", Value: strings.Repeat("v", 200)}, {Key: "b", Value: strings.Repeat("v", 200)}}
		}), "limit 256"},
		{"group other cluster", group(func(s *GroupSpec) { s.Join.ClusterName = "other" }), `belong to cluster "other"`},
		{"group newer contract", group(func(s *GroupSpec) { s.Join.ContractVersion = "2" }), "join contract version 2"},
		{"group empty version", group(func(s *GroupSpec) { s.Version = "" }), "clusterctl version is empty"},
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
		{"user data", checkUserData, MaxUserDataBytes, "user data is 16385 bytes, limit 16384"},
		{"parameters", checkParameterCount, MaxParameters, "template declares 201 parameters, limit 200"},
		{"stack name", func(n int) error { return checkStackName(strings.Repeat("a", n)) }, MaxStackNameChars, "is 129 characters, limit 128"},
	} {
		if err := tc.check(tc.limit); err != nil {
			t.Errorf("%s at the limit: %v", tc.name, err)
		}
		if err := tc.check(tc.limit + 1); err == nil || !strings.Contains(err.Error(), tc.wantText) {
			t.Errorf("%s over the limit: %v, want %q", tc.name, err, tc.wantText)
		}
	}
	// check applies the template limit to a rendered stack.
	r, err := Core(*variants()[0].core)
	if err != nil {
		t.Fatal(err)
	}
	r.Template = append(r.Template, bytes.Repeat([]byte(" "), MaxTemplateBytes)...)
	if err := check(r); err == nil || !strings.Contains(err.Error(), "template body") {
		t.Errorf("oversized template passed: %v", err)
	}
	r, _ = Core(*variants()[0].core)
	r.Parameters["Stray"] = "x"
	delete(r.Parameters, "VpcId")
	if err := check(r); err == nil || !strings.Contains(err.Error(), "undeclared [Stray], unset [VpcId]") {
		t.Errorf("parameter mismatch passed: %v", err)
	}
}

func TestRollingUpdateDefaults(t *testing.T) {
	for _, tc := range []struct {
		desired, min, max, batch, inService int
		wantBatch, wantInService            int
	}{
		{3, 1, 5, 0, 0, 1, 3},  // keep every node in service
		{3, 3, 3, 0, 0, 1, 2},  // capped below MaxSize as CloudFormation requires
		{0, 0, 0, 0, 0, 1, 0},  // empty group
		{4, 2, 8, 2, 1, 2, 1},  // explicit values win
		{1, 1, 1, 0, 0, 1, 0},  // single node: replaced in place
		{2, 0, 10, 3, 0, 3, 2}, // explicit batch, default in service
	} {
		b, m, err := groupSizes(GroupSpec{Desired: tc.desired, Min: tc.min, Max: tc.max, MaxBatch: tc.batch, MinInService: tc.inService})
		if err != nil || b != tc.wantBatch || m != tc.wantInService {
			t.Errorf("groupSizes(%+v) = %d, %d, %v; want %d, %d", tc, b, m, err, tc.wantBatch, tc.wantInService)
		}
	}
}

func TestSubLiteral(t *testing.T) {
	if got := subLiteral("a=${x},b=$y"); got != "a=${!x},b=$y" {
		t.Errorf("subLiteral = %q", got)
	}
	// Labels go to the node configuration, which is no Fn::Sub string: they
	// stay literal there, quoted for the shell.
	r, err := Group(GroupSpec{
		Cluster: "prod", Group: "g", InstanceType: "t3.small", Version: "1",
		Desired: 1, Min: 1, Max: 2, VolumeSize: 8, Labels: []Label{{Key: "k", Value: "${AWS::AccountId}'x"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	node := string(r.Artifacts[0].Body)
	if !strings.Contains(node, `labels='k=${AWS::AccountId}'\''x'`) || !strings.Contains(node, `"k=${AWS::AccountId}'x",`) {
		t.Errorf("label not literal in the node configuration:\n%s", node)
	}
	res := obj(decode(t, r.Template)["Resources"])
	if ud := userDataOf(t, res, "LaunchTemplate"); strings.Contains(ud, "AccountId") {
		t.Error("label value in the user data")
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
