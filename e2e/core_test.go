package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// A core created with any create-core flag and then updated with no flag
// is unchanged: exit 0 "No changes", parameters and template identical.
func TestFlaglessUpdateCoreKeepsEverySetting(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()
	images, err := c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(images.Images) == 0 {
		t.Fatalf("moto's images: %v", err)
	}
	vpcs, err := c.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: aws.String("is-default"), Values: []string{"true"}}}})
	if err != nil || len(vpcs.Vpcs) != 1 {
		t.Fatalf("moto's default VPC: %v", err)
	}
	subnets, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil || len(subnets.Subnets) < 3 {
		t.Fatalf("moto's default subnets: %v", err)
	}
	if _, err := c.ec2.CreateKeyPair(ctx, &ec2.CreateKeyPairInput{KeyName: aws.String("ops")}); err != nil {
		t.Fatal(err)
	}
	must(t, "create-network", "kn", "--zones", "1", "-q") // for --network
	if _, err := sns.NewFromConfig(motoConfig(t)).CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("pager")}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		flag string // the create-core flag the case covers
		args []string
	}{
		{"--instance-type", []string{"--instance-type", "m6i.large"}},
		{"--image-id", []string{"--image-id", aws.ToString(images.Images[0].ImageId)}},
		{"--image-id", []string{"--image-id", "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64", "--instance-type", "m7g.large"}},
		{"--key-name", []string{"--key-name", "ops"}},
		{"--ssh-cidr", []string{"--ssh-cidr", "203.0.113.0/24"}},
		{"--allow-ssh-from-anywhere", []string{"--ssh-cidr", "0.0.0.0/0", "--allow-ssh-from-anywhere"}},
		{"--vpc-id", []string{"--vpc-id", aws.ToString(vpcs.Vpcs[0].VpcId)}},
		{"--subnet-ids", []string{"--subnet-ids", aws.ToString(subnets.Subnets[2].SubnetId) + "," + aws.ToString(subnets.Subnets[0].SubnetId)}},
		{"--volume-size", []string{"--volume-size", "40"}},
		{"--managers", []string{"--managers", "3"}},
		{"--managers", []string{"--managers", "5"}},
		{"--tags", []string{"--tags", "team=platform,cost-center=4711"}},
		{"--log-retention-days", []string{"--log-retention-days", "90"}},
		{"--log-kms-key", []string{"--log-kms-key", "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"}},
		{"--log-driver", []string{"--log-driver", "none"}},
		{"--alarms", []string{"--alarms", "off"}},
		{"--notify", []string{"--notify", "ops@example.com"}},
		{"--notify", []string{"--notify", "arn:aws:sns:us-east-1:123456789012:pager"}},
		{"--backup-keep", []string{"--backup-keep", "20"}},
		{"--operators", []string{"--operators", "arn:aws:iam::123456789012:role/ops/Admin,arn:aws:iam::123456789012:user/moto"}},
		{"--public-ips", []string{"--public-ips"}},
		{"--network", []string{"--network", "kn"}},
		{"--public-subnet-ids", []string{"--public-subnet-ids", aws.ToString(subnets.Subnets[1].SubnetId)}},
		{"--engine-version", []string{"--engine-version", "24.0.9"}},
		{"--no-rollback", []string{"--no-rollback"}},
		{"--dry-run", nil}, // creates nothing: nothing to update
		{"--cluster", nil}, // the cluster as a flag: TestClusterAsFlagOrArgument
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.flag] = true
	}
	for _, f := range flagsOf(t, "create-core") {
		if !covered[f] {
			t.Errorf("create-core %s has no case here", f)
		}
	}
	for i, tt := range tests {
		if tt.args == nil {
			continue
		}
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			name := fmt.Sprintf("k%d", i)
			must(t, append([]string{"create-core", name, "-q"}, tt.args...)...)
			before := deployedStack(t, c, name)
			r := clusterctl(t, "update-core", name, "-q")
			if r.code != 0 || !strings.Contains(r.stderr, "No changes") {
				t.Errorf("flagless update-core:\n%s", r)
			}
			after := deployedStack(t, c, name)
			if !maps.Equal(before.params, after.params) {
				t.Errorf("parameters changed:\nbefore %v\nafter  %v", before.params, after.params)
			}
			if before.template != after.template {
				t.Error("template changed")
			}
		})
	}
}

// update-core of each setting: the plan with values and what happens to
// the managers, a dry run that changes nothing, the change applied; the
// groups are never touched.
func TestUpdateCore(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()
	if _, err := c.ec2.CreateKeyPair(ctx, &ec2.CreateKeyPairInput{KeyName: aws.String("ops")}); err != nil {
		t.Fatal(err)
	}
	must(t, "create-core", "core", "--managers", "3", "-q")
	if n := len(groupASG(t, c, "core", "control").Instances); n != 3 {
		t.Fatalf("%d managers, want 3", n)
	}
	must(t, "add-agents", "-n", "web", "-t", "t3.small", "-j", "core", "-q")
	web := deployedStack(t, c, "core-web")

	lines := func(t *testing.T, r result, want ...string) {
		t.Helper()
		for _, w := range want {
			if !regexp.MustCompile(`(?m)^` + w + `$`).MatchString(r.stdout) {
				t.Errorf("plan lacks %q:\n%s", w, r)
			}
		}
	}
	param := func(k string) string { return deployedStack(t, c, "core").params[k] }

	// A dry run shows the plan and changes nothing.
	r := must(t, "update-core", "core", "--instance-type", "m6i.large", "--dry-run", "-q")
	lines(t, r, `instanceType\s+t3\.medium → m6i\.large`, `3 managers will be replaced one at a time`)
	if !strings.Contains(r.stderr, "Dry run: nothing changed") || param("InstanceType") != "t3.medium" {
		t.Errorf("dry run:\n%s", r)
	}
	// Without a terminal, applying needs --yes; refused, nothing changes.
	if r := clusterctl(t, "update-core", "core", "--instance-type", "m6i.large", "-q"); r.code != 2 || !strings.Contains(r.stderr, "pass --yes") || param("InstanceType") != "t3.medium" {
		t.Errorf("without --yes:\n%s", r)
	}

	for _, tc := range []struct {
		args  []string
		plan  []string
		param string
		value string
	}{
		{[]string{"--instance-type", "m6i.large"}, []string{`instanceType\s+t3\.medium → m6i\.large`, `3 managers will be replaced one at a time`}, "InstanceType", "m6i.large"},
		{[]string{"--image-id", "ami-12c6146b"}, []string{`imageId\s+\(default\) → ami-12c6146b`, `3 managers will be replaced one at a time`}, "ImageId", "ami-12c6146b"},
		{[]string{"--key-name", "ops"}, []string{`keyName\s+\(none\) → ops`, `3 managers will be replaced one at a time`}, "KeyName", "ops"},
		{[]string{"--volume-size", "30"}, []string{`volumeSize\s+20 → 30`, `3 managers will be replaced one at a time`}, "VolumeSize", "30"},
		{[]string{"--backup-keep", "12"}, []string{`backupKeep\s+8 → 12`, `3 managers will be replaced one at a time`}, "BackupKeep", "12"},
		{[]string{"--ssh-cidr", "203.0.113.0/24"}, []string{`sshCidr\s+\(closed\) → 203\.0\.113\.0/24`, `0 managers will be replaced`}, "SshCidr", "203.0.113.0/24"},
		{[]string{"--operators", "arn:aws:iam::123456789012:user/moto,arn:aws:iam::123456789012:role/Deployer"},
			[]string{`operators\s+arn:aws:iam::123456789012:user/moto → arn:aws:iam::123456789012:user/moto,arn:aws:iam::123456789012:role/Deployer`, `0 managers will be replaced`},
			"Operators", "arn:aws:iam::123456789012:user/moto,arn:aws:iam::123456789012:role/Deployer"},
		{[]string{"--ssh-cidr", ""}, []string{`sshCidr\s+203\.0\.113\.0/24 → \(closed\)`}, "SshCidr", ""},
		{[]string{"--managers", "5"}, []string{`managers\s+3 → 5`, `0 managers will be replaced`, `2 managers will be added \(3 → 5\): they join the swarm as managers\.`}, "Managers", "5"},
		{[]string{"--managers", "3"}, []string{`managers\s+5 → 3`, `2 managers will be demoted and removed, one at a time \(5 → 3\)\.`}, "Managers", "3"},
		{[]string{"--managers", "1"}, []string{`managers\s+3 → 1`}, "Managers", "1"},
		{[]string{"--managers", "3"}, []string{`managers\s+1 → 3`}, "Managers", "3"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := must(t, append([]string{"update-core", "core", "--yes", "-q"}, tc.args...)...)
			lines(t, r, tc.plan...)
			got := param(tc.param)
			if tc.param == names.ParamOperators {
				got = strings.Join(spec.SplitList(got), ",") // moto answers a list as Python prints it
			}
			if !strings.Contains(r.stderr, "Updated core") || got != tc.value {
				t.Errorf("%s = %q after:\n%s", tc.param, got, r)
			}
		})
	}
	if n := len(groupASG(t, c, "core", "control").Instances); n != 3 {
		t.Errorf("%d managers after going 3 → 5 → 3 → 1 → 3, want 3", n)
	}

	// As JSON: the plan and its outcome.
	plan := decode[struct {
		Stack         string `json:"stack"`
		Settings      []struct{ Setting string }
		NodesReplaced int      `json:"nodesReplaced"`
		Notes         []string `json:"notes"`
		Applied       bool     `json:"applied"`
	}](t, must(t, "update-core", "core", "--managers", "5", "--dry-run", "-o", "json", "-q"))
	if plan.Stack != "core" || len(plan.Settings) != 1 || plan.Settings[0].Setting != "managers" || plan.NodesReplaced != 0 || len(plan.Notes) != 1 || plan.Applied {
		t.Errorf("JSON plan %+v", plan)
	}

	// What the core cannot become: exit 2 naming the flag, nothing changed.
	must(t, "update-core", "core", "--managers", "5", "--yes", "-q")
	before := deployedStack(t, c, "core")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--managers", "4"}, "--managers: invalid number of managers 4: even"},
		{[]string{"--managers", "1"}, "--managers: 5 → 1 removes 4 of 5 managers at once: go down one step at a time (5 → 3, then 3 → 1)"},
		{[]string{"--managers", "3", "--instance-type", "c5.large"}, "--managers: changing the number of managers (5 → 3) and what they run at once"},
		{[]string{"--vpc-id", "vpc-0123abcd"}, "--vpc-id: a cluster's VPC cannot change"},
		{[]string{"--ssh-cidr", "10.0.0.1/8"}, "--ssh-cidr: invalid CIDR"},
	} {
		r := clusterctl(t, append([]string{"update-core", "core", "--yes", "-q"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: want exit 2 saying %q:\n%s", tc.args, tc.want, r)
		}
	}
	if after := deployedStack(t, c, "core"); !maps.Equal(before.params, after.params) || before.template != after.template {
		t.Errorf("refused updates changed the core: %v", after.params)
	}

	// A healthy core has no rollback to continue.
	if r := clusterctl(t, "update-core", "core", "--continue-rollback"); r.code != 1 || !strings.Contains(r.stderr, "there is no rollback to continue") {
		t.Errorf("--continue-rollback of a healthy core:\n%s", r)
	}
	if r := clusterctl(t, "update-core", "core", "--continue-rollback", "--managers", "3"); r.code != 2 {
		t.Errorf("--continue-rollback with a change:\n%s", r)
	}

	// The group was never touched.
	after := deployedStack(t, c, "core-web")
	if !maps.Equal(web.params, after.params) || web.template != after.template || describeStack(t, c, "core-web").LastUpdatedTime != nil {
		t.Error("update-core changed the group's stack")
	}
	groups := decode[[]group](t, must(t, "list-groups", "-j", "core", "-o", "json"))
	if len(groups) != 1 || !groups[0].Joined {
		t.Errorf("after update-core: %+v", groups)
	}
}

// A core of join contract 1 (one control node, its address in every
// group's parameters), as an earlier clusterctl deployed it, is upgraded
// in place: same stack, same bucket, security groups and roles, managers
// in an Auto Scaling group instead of the control node. Its group keeps
// running, joined, untouched; update-group then brings it to contract 2.
func TestUpgradeContract1Core(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()
	vpcs, err := c.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: aws.String("is-default"), Values: []string{"true"}}}})
	if err != nil || len(vpcs.Vpcs) != 1 {
		t.Fatalf("moto's default VPC: %v", err)
	}
	subnets, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("moto's default subnets: %v", err)
	}
	var subnetIDs []string
	for _, s := range subnets.Subnets {
		subnetIDs = append(subnetIDs, aws.ToString(s.SubnetId))
	}
	const amd64 = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"

	// The stacks clusterctl 0.9.0 (join contract 1) deployed: its core and a group.
	createStack(t, c, "core", "testdata/core-contract1.json", map[string]string{
		"InstanceType": "t3.medium", "VolumeSize": "20", "ImageParameter": amd64, "ImageId": "", "KeyName": "", "SshCidr": "",
		"VpcId": aws.ToString(vpcs.Vpcs[0].VpcId), "SubnetIds": strings.Join(subnetIDs, ","),
	}, map[string]string{"clusterctl:cluster": "core", "clusterctl:role": "core", "clusterctl:group": "control", "clusterctl:version": "0.9.0"})
	core := describeStack(t, c, "core")
	v1 := outputs(core)
	// CloudFormation puts the stack's tags on the bucket; moto does not.
	if _, err := c.s3.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String(v1["BucketName"]), Tagging: &s3types.Tagging{TagSet: []s3types.Tag{
		{Key: aws.String("clusterctl:cluster"), Value: aws.String("core")}, {Key: aws.String("clusterctl:role"), Value: aws.String("core")}}}}); err != nil {
		t.Fatal(err)
	}
	if v1["ContractVersion"] != "1" || v1["ControlPrivateIp"] == "" {
		t.Fatalf("contract 1 core outputs %v", v1)
	}
	groupParams := map[string]string{
		"InstanceType": "c5.large", "DesiredCapacity": "2", "MinSize": "0", "MaxSize": "3", "VolumeSize": "30", "ImageParameter": amd64, "ImageId": "",
		"KeyName": "", "SshCidr": "", "MaxBatchSize": "1", "MinInstancesInService": "2", "SubnetIds": v1["SubnetIds"],
	}
	for _, k := range []string{"ClusterName", "BucketName", "ControlPrivateIp", "ControlSecurityGroupId", "AgentSecurityGroupId", "AgentInstanceProfile", "VpcId", "ContractVersion"} {
		groupParams[k] = v1[k]
	}
	createStack(t, c, "core-web", "testdata/group-contract1.json", groupParams, map[string]string{
		"clusterctl:cluster": "core", "clusterctl:role": "agents", "clusterctl:group": "web", "clusterctl:version": "0.9.0",
		"clusterctl:labels": "role=web", "clusterctl:image": "default", "clusterctl:subnets": "core",
	})
	web := deployedStack(t, c, "core-web")
	agents := groupASG(t, c, "core", "web").Instances
	oldControl := v1["ControlInstanceId"]

	// Nothing new is built on a core of contract 1: upgrade it first.
	if r := clusterctl(t, "add-agents", "-n", "api", "-t", "t3.small", "-j", "core", "-q"); r.code != 1 || !strings.Contains(r.stderr, "upgrade it in place with `clusterctl update-core core`") {
		t.Errorf("add-agents to a contract 1 core:\n%s", r)
	}

	// The plan says what the upgrade does, and what it costs.
	r := must(t, "update-core", "core", "--dry-run", "-q")
	for _, want := range []string{"contractVersion   1 → 2", "Remove   ControlInstance", "Add      ManagerGroup", "1 manager will be replaced",
		"the managers form a new swarm, the agents rejoin it on their own"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("upgrade plan lacks %q:\n%s", want, r)
		}
	}
	r = must(t, "update-core", "core", "--managers", "3", "--yes", "-q")
	if !strings.Contains(r.stderr, "Updated core") {
		t.Errorf("upgrade:\n%s", r)
	}
	upgraded := describeStack(t, c, "core")
	if aws.ToString(upgraded.StackId) != aws.ToString(core.StackId) {
		t.Error("the core stack was replaced, not updated in place")
	}
	if n := len(groupASG(t, c, "core", "control").Instances); n != 3 {
		t.Errorf("%d managers, want 3", n)
	}
	res, err := c.cfn.ListStackResources(ctx, &cloudformation.ListStackResourcesInput{StackName: aws.String("core")})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.StackResourceSummaries {
		if aws.ToString(r.LogicalResourceId) == "ControlInstance" {
			t.Error("the control node of contract 1 is still a resource of the core")
		}
	}
	if st := instanceState(t, c, oldControl); st != "terminated" && st != "" {
		t.Errorf("the old control node is %s", st)
	}
	// The bucket of a core made before clusterctl tagged it is tagged by
	// the upgrade, so delete-core knows it for the cluster's from then on.
	// moto does not tag a bucket on an update; the template CloudFormation
	// now holds says what it does.
	deployed, err := c.cfn.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String("core")})
	if err != nil {
		t.Fatal(err)
	}
	// Other resources' tag values may be intrinsic functions: only the
	// bucket's are read as strings.
	var tpl struct {
		Resources map[string]struct {
			Properties json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(aws.ToString(deployed.TemplateBody)), &tpl); err != nil {
		t.Fatal(err)
	}
	var bucket struct{ Tags []struct{ Key, Value string } }
	if err := json.Unmarshal(tpl.Resources["Bucket"].Properties, &bucket); err != nil {
		t.Fatal(err)
	}
	if tags := bucket.Tags; !slices.Contains(tags, struct{ Key, Value string }{"clusterctl:cluster", "core"}) ||
		!slices.Contains(tags, struct{ Key, Value string }{"clusterctl:role", "core"}) {
		t.Errorf("the upgraded core's bucket is not tagged as the cluster's: %v", tags)
	}

	// moto keeps a stack's outputs when it executes a change set (it
	// computes them on UpdateStack): the test plays CloudFormation and has
	// them computed for the template now deployed.
	refreshOutputs(t, c, "core", amd64)
	v2 := outputs(describeStack(t, c, "core"))
	if v2["ContractVersion"] != "2" || v2["ManagersKey"] != "join/swarm/managers" || v2["ControlPrivateIp"] != "" {
		t.Errorf("upgraded outputs %v", v2)
	}
	for _, k := range []string{"ClusterName", "BucketName", "ControlSecurityGroupId", "AgentSecurityGroupId", "AgentInstanceProfile", "VpcId", "SubnetIds"} {
		if v2[k] != v1[k] {
			t.Errorf("output %s changed: %s → %s", k, v1[k], v2[k])
		}
	}

	// The group: untouched, its nodes running, still joined.
	if after := deployedStack(t, c, "core-web"); !maps.Equal(web.params, after.params) || web.template != after.template {
		t.Error("the upgrade changed the group's stack")
	}
	for _, i := range agents {
		if st := instanceState(t, c, aws.ToString(i.InstanceId)); st != "running" {
			t.Errorf("agent %s is %s", aws.ToString(i.InstanceId), st)
		}
	}
	groups := decode[[]group](t, must(t, "list-groups", "-j", "core", "-o", "json"))
	if len(groups) != 1 || !groups[0].Joined {
		t.Errorf("after the upgrade: %+v", groups)
	}

	// update-group brings the group to contract 2.
	r = must(t, "update-group", "-n", "web", "-j", "core", "-q", "--yes")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^join\.ContractVersion\s+1 → 2$`),
		regexp.MustCompile(`(?m)^join\.ControlPrivateIp\s+[0-9.]+ → \(none\)$`),
		regexp.MustCompile(`(?m)^join\.ManagersKey\s+\(none\) → join/swarm/managers$`),
		// A group of an earlier clusterctl pinned no node agent.
		regexp.MustCompile(`(?m)^2 nodes will be replaced, 1 at a time: node agent \(none\) → [0-9a-f]{12}$`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("update-group plan lacks %s:\n%s", want, r)
		}
	}
	// (moto keeps listing the parameters a template no longer declares.)
	d := deployedStack(t, c, "core-web")
	if strings.Contains(d.template, `"ControlPrivateIp"`) || d.params["ContractVersion"] != "2" || d.params["ManagersKey"] != "join/swarm/managers" {
		t.Errorf("group after update-group: %v", d.params)
	}
	groups = decode[[]group](t, must(t, "list-groups", "-j", "core", "-o", "json"))
	if len(groups) != 1 || !groups[0].Joined {
		t.Errorf("after update-group: %+v", groups)
	}
	if r := clusterctl(t, "update-group", "-n", "web", "-j", "core", "-q"); r.code != 0 || !strings.Contains(r.stderr, "No changes") {
		t.Errorf("second update-group:\n%s", r)
	}
}

// createStack creates a stack from a template file, as an earlier
// clusterctl did.
func createStack(t *testing.T, c clients, name, file string, params, tags map[string]string) {
	t.Helper()
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	in := &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(string(body)), Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam}}
	for k, v := range params {
		in.Parameters = append(in.Parameters, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	for k, v := range tags {
		in.Tags = append(in.Tags, cfntypes.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	if _, err := c.cfn.CreateStack(context.Background(), in); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	if st := describeStack(t, c, name).StackStatus; st != cfntypes.StackStatusCreateComplete {
		t.Fatalf("%s: %s", name, st)
	}
}

// refreshOutputs updates a stack with its own template and parameters,
// which makes moto compute the outputs of that template. (moto refuses an
// update whose template text and parameters are the same: the template
// goes with one more newline, which clusterctl does not count as a
// change.) The stack's image is imagePath.
func refreshOutputs(t *testing.T, c clients, name, imagePath string) {
	t.Helper()
	st := describeStack(t, c, name)
	body := deployedStack(t, c, name).template + "\n"
	in := &cloudformation.UpdateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body), Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam}, Tags: st.Tags}
	// The values as given, not UsePreviousValue: moto forgets the
	// parameters a change set added. A list reads back as "['a', 'b']",
	// an image path as the AMI it resolved to.
	for _, p := range st.Parameters {
		v := strings.Trim(aws.ToString(p.ParameterValue), "[]")
		v = strings.NewReplacer("'", "", " ", "").Replace(v)
		if aws.ToString(p.ParameterKey) == "ImageParameter" {
			v = imagePath
		}
		in.Parameters = append(in.Parameters, cfntypes.Parameter{ParameterKey: p.ParameterKey, ParameterValue: aws.String(v)})
	}
	if _, err := c.cfn.UpdateStack(context.Background(), in); err != nil {
		t.Fatalf("refreshing the outputs of %s: %v", name, err)
	}
}

// instanceState is an instance's state, or "" when EC2 no longer knows it.
func instanceState(t *testing.T, c clients, id string) string {
	t.Helper()
	out, err := c.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if strings.Contains(err.Error(), "InvalidInstanceID.NotFound") {
			return ""
		}
		t.Fatal(err)
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			return string(i.State.Name)
		}
	}
	return ""
}
