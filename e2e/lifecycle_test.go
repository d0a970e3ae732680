package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

type node struct {
	Cluster      string            `json:"cluster"`
	Group        string            `json:"group"`
	InstanceID   string            `json:"instanceId"`
	InstanceType string            `json:"instanceType"`
	State        string            `json:"state"`
	PrivateIP    string            `json:"privateIp"`
	Zone         string            `json:"zone"`
	Labels       map[string]string `json:"labels"`
}

type group struct {
	Cluster      string            `json:"cluster"`
	Group        string            `json:"group"`
	Stack        string            `json:"stack"`
	Status       string            `json:"status"`
	InstanceType string            `json:"instanceType"`
	Desired      int               `json:"desired"`
	Min          int               `json:"min"`
	Max          int               `json:"max"`
	Running      int               `json:"running"`
	Labels       map[string]string `json:"labels"`
	Joined       bool              `json:"joined"`
}

func decode[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("decoding output: %v\n%s", err, r)
	}
	return v
}

func describeStack(t *testing.T, c clients, name string) cfntypes.Stack {
	t.Helper()
	out, err := c.cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil || len(out.Stacks) != 1 {
		t.Fatalf("describing stack %s: %v", name, err)
	}
	return out.Stacks[0]
}

func tags(s cfntypes.Stack) map[string]string {
	m := map[string]string{}
	for _, t := range s.Tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

func outputs(s cfntypes.Stack) map[string]string {
	m := map[string]string{}
	for _, o := range s.Outputs {
		m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return m
}

// groupASG finds a group's Auto Scaling group by its ownership tags.
func groupASG(t *testing.T, c clients, cluster, name string) asgtypes.AutoScalingGroup {
	t.Helper()
	out, err := c.asg.DescribeAutoScalingGroups(context.Background(), &autoscaling.DescribeAutoScalingGroupsInput{
		Filters: []asgtypes.Filter{{Name: aws.String("tag:clusterctl:cluster"), Values: []string{cluster}}, {Name: aws.String("tag:clusterctl:group"), Values: []string{name}}},
	})
	if err != nil || len(out.AutoScalingGroups) != 1 {
		t.Fatalf("auto scaling group of %s/%s: %v (%d found)", cluster, name, err, len(out.AutoScalingGroups))
	}
	return out.AutoScalingGroups[0]
}

func launchTemplateVersions(t *testing.T, c clients, id string) []ec2types.LaunchTemplateVersion {
	t.Helper()
	out, err := c.ec2.DescribeLaunchTemplateVersions(context.Background(), &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(id)})
	if err != nil {
		t.Fatal(err)
	}
	return out.LaunchTemplateVersions
}

// The whole lifecycle of a cluster: one core, two heterogeneous groups,
// listed, updated, shrunk and deleted; each step checked on the endpoint.
func TestLifecycle(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()

	// create-core prints the join contract.
	r := must(t, "create-core", "core", "-o", "json", "-q")
	printed := decode[map[string]string](t, r)
	core := describeStack(t, c, "core")
	if core.StackStatus != cfntypes.StackStatusCreateComplete {
		t.Fatalf("core status %s", core.StackStatus)
	}
	out := outputs(core)
	for _, k := range []string{"ClusterName", "BucketName", "ControlSecurityGroupId", "AgentSecurityGroupId", "AgentInstanceProfile", "VpcId", "SubnetIds", "ManagersKey", "ContractVersion", "ManagerGroupName"} {
		if out[k] == "" {
			t.Errorf("core output %s missing", k)
		}
		if printed[k] != out[k] {
			t.Errorf("printed %s = %q, stack has %q", k, printed[k], out[k])
		}
	}
	if tg := tags(core); tg["clusterctl:cluster"] != "core" || tg["clusterctl:role"] != "core" || tg["clusterctl:version"] == "" {
		t.Errorf("core tags = %v", tg)
	}
	coreTemplate, err := c.cfn.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String("core")})
	if err != nil {
		t.Fatal(err)
	}

	// Two heterogeneous groups.
	r = must(t, "add-agents", "-n", "r3-agents", "-t", "r3.large", "-j", "core", "-c", "3", "-m", "instancetype=r3,role=worker", "-o", "json", "-q")
	if nodes := decode[[]node](t, r); len(nodes) != 3 {
		t.Errorf("add-agents printed %d nodes, want 3:\n%s", len(nodes), r)
	}
	must(t, "add-agents", "-n", "c5-agents", "-t", "c5.xlarge", "-j", "core", "-q")
	for _, name := range []string{"core-r3-agents", "core-c5-agents"} {
		s := describeStack(t, c, name)
		tg := tags(s)
		if s.StackStatus != cfntypes.StackStatusCreateComplete || tg["clusterctl:cluster"] != "core" || tg["clusterctl:role"] != "agents" {
			t.Errorf("%s: status %s tags %v", name, s.StackStatus, tg)
		}
	}
	if got := describeStack(t, c, "core"); got.LastUpdatedTime != nil {
		t.Error("adding groups modified the core stack")
	}

	// list-groups: both joined, with their capacity and labels.
	groups := decode[[]group](t, must(t, "list-groups", "-j", "core", "-o", "json"))
	if len(groups) != 2 {
		t.Fatalf("list-groups = %+v", groups)
	}
	byName := map[string]group{}
	for _, g := range groups {
		byName[g.Group] = g
	}
	if g := byName["r3-agents"]; !g.Joined || g.Desired != 3 || g.Running != 3 || g.InstanceType != "r3.large" || g.Labels["role"] != "worker" || g.Stack != "core-r3-agents" {
		t.Errorf("r3-agents = %+v", g)
	}
	if g := byName["c5-agents"]; !g.Joined || g.Desired != 1 || g.InstanceType != "c5.xlarge" {
		t.Errorf("c5-agents = %+v", g)
	}

	// list-nodes: the control node and every agent, with tags as labels.
	nodes := decode[[]node](t, must(t, "list-nodes", "-j", "core", "-o", "json"))
	count := map[string]int{}
	for _, n := range nodes {
		count[n.Group+"/"+n.InstanceType]++
		if n.Cluster != "core" || n.State != "running" || n.PrivateIP == "" || n.Zone == "" {
			t.Errorf("node %+v", n)
		}
		if n.Group == "r3-agents" && (n.Labels["role"] != "worker" || n.Labels["instancetype"] != "r3") {
			t.Errorf("r3 node labels = %v", n.Labels)
		}
	}
	if count["control/t3.medium"] != 1 || count["r3-agents/r3.large"] != 3 || count["c5-agents/c5.xlarge"] != 1 || len(nodes) != 5 {
		t.Errorf("nodes by group/type = %v", count)
	}
	if r := must(t, "list-nodes", "-j", "core", "-n", "c5-agents", "--query", ".[].instanceType"); strings.TrimSpace(r.stdout) != "c5.xlarge" {
		t.Errorf("list-nodes -n c5-agents --query = %q", r.stdout)
	}
	// One tag-filtered DescribeInstances, and the swarm's status snapshot
	// read from the core's own bucket (one S3 read); list-groups makes a
	// constant number of calls whatever the number of groups.
	if r := must(t, "list-nodes", "-j", "core", "-v"); !strings.Contains(r.stderr, "aws EC2.DescribeInstances") ||
		!strings.Contains(r.stderr, "aws calls: 5 (CloudFormation.DescribeStacks=1 CloudFormation.ListStackResources=1 EC2.DescribeInstances=1 S3.GetBucketTagging=1 S3.GetObject=1)") {
		t.Errorf("list-nodes -v:\n%s", r.stderr)
	}
	if r := must(t, "list-groups", "-j", "core", "-v"); !strings.Contains(r.stderr, "aws calls: 5 (Auto Scaling.DescribeAutoScalingGroups=1 CloudFormation.DescribeStacks=1 CloudFormation.ListStackResources=1 S3.GetBucketTagging=1 S3.GetObject=1)") {
		t.Errorf("list-groups -v:\n%s", r.stderr)
	}
	if r := must(t, "describe", "core", "-o", "json", "--query", ".groups | map(.health) | unique"); strings.Join(strings.Fields(r.stdout), "") != `["healthy"]` {
		t.Errorf("describe health:\n%s", r)
	}
	table := must(t, "list-nodes", "-o", "wide").stdout
	if !strings.HasPrefix(table, "CLUSTER") || !strings.Contains(table, "role=worker") || strings.Count(table, "\n") != 6 {
		t.Errorf("wide table:\n%s", table)
	}

	// update-group: new type, count and labels; a new launch template version
	// that the Auto Scaling group uses; nothing else touched.
	asgBefore := groupASG(t, c, "core", "r3-agents")
	ltID := aws.ToString(asgBefore.LaunchTemplate.LaunchTemplateId)
	versionsBefore := len(launchTemplateVersions(t, c, ltID))
	c5Before := describeStack(t, c, "core-c5-agents")
	r = must(t, "update-group", "-n", "r3-agents", "-j", "core", "-t", "r5.large", "-c", "4", "-m", "role=worker,tier=memory", "-q", "--yes")
	if !strings.Contains(r.stdout, "LaunchTemplate") || !strings.Contains(r.stdout, "Modify") {
		t.Errorf("update-group plan does not show the launch template change:\n%s", r)
	}
	asgAfter := groupASG(t, c, "core", "r3-agents")
	if aws.ToInt32(asgAfter.DesiredCapacity) != 4 {
		t.Errorf("desired after update = %d", aws.ToInt32(asgAfter.DesiredCapacity))
	}
	versions := launchTemplateVersions(t, c, ltID)
	if len(versions) != versionsBefore+1 {
		t.Errorf("launch template versions %d → %d, want one more", versionsBefore, len(versions))
	}
	sort.Slice(versions, func(i, j int) bool {
		return aws.ToInt64(versions[i].VersionNumber) < aws.ToInt64(versions[j].VersionNumber)
	})
	latest := versions[len(versions)-1]
	if latest.LaunchTemplateData.InstanceType != "r5.large" {
		t.Errorf("latest launch template type = %s", latest.LaunchTemplateData.InstanceType)
	}
	if got := aws.ToString(asgAfter.LaunchTemplate.Version); got != "$Latest" && got != "" && got != strconv.FormatInt(aws.ToInt64(latest.VersionNumber), 10) {
		t.Errorf("auto scaling group uses launch template version %s, latest is %d", got, aws.ToInt64(latest.VersionNumber))
	}
	g := decode[[]group](t, must(t, "list-groups", "-j", "core", "-o", "json", "--query", `map(select(.group == "r3-agents"))`))
	if len(g) != 1 || g[0].InstanceType != "r5.large" || g[0].Desired != 4 || g[0].Labels["tier"] != "memory" || !g[0].Joined {
		t.Errorf("r3-agents after update = %+v", g)
	}
	if got := describeStack(t, c, "core"); got.LastUpdatedTime != nil {
		t.Error("update-group modified the core stack")
	}
	coreTemplateAfter, _ := c.cfn.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String("core")})
	if aws.ToString(coreTemplateAfter.TemplateBody) != aws.ToString(coreTemplate.TemplateBody) {
		t.Error("core template changed")
	}
	if c5 := describeStack(t, c, "core-c5-agents"); !aws.ToTime(c5.LastUpdatedTime).Equal(aws.ToTime(c5Before.LastUpdatedTime)) {
		t.Error("update-group touched another group")
	}

	// The same update again changes nothing and says so.
	r = must(t, "update-group", "-n", "r3-agents", "-j", "core", "-t", "r5.large", "-c", "4", "-q")
	if !strings.Contains(r.stderr, "No changes") {
		t.Errorf("identical update:\n%s", r)
	}
	if n := len(launchTemplateVersions(t, c, ltID)); n != versionsBefore+1 {
		t.Errorf("identical update made a launch template version (%d)", n)
	}
	// A dry run shows the plan and changes nothing.
	r = must(t, "update-group", "-n", "r3-agents", "-j", "core", "-c", "2", "--dry-run", "-q")
	if !strings.Contains(r.stderr, "Dry run") {
		t.Errorf("dry run:\n%s", r)
	}
	if d := aws.ToInt32(groupASG(t, c, "core", "r3-agents").DesiredCapacity); d != 4 {
		t.Errorf("dry run changed desired capacity to %d", d)
	}

	// remove-group deletes exactly that group, and its node configuration.
	must(t, "remove-group", "-n", "c5-agents", "-j", "core", "--yes", "-q")
	if names := c.stackNames(t); !sameSet(names, []string{"core", "core-r3-agents"}) {
		t.Errorf("stacks after remove-group = %v", names)
	}
	for prefix, want := range map[string]bool{"join/groups/c5-agents/": false, "join/groups/r3-agents/": true} {
		objs, err := c.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(out["BucketName"]), Prefix: aws.String(prefix)})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(objs.Versions) > 0; got != want {
			t.Errorf("objects under %s after remove-group: %d, want any=%v", prefix, len(objs.Versions), want)
		}
	}

	// delete-core refuses while a group exists and names it.
	r = clusterctl(t, "delete-core", "core", "--yes")
	if r.code != 1 || !strings.Contains(r.stderr, "r3-agents") || !strings.Contains(r.stderr, "--cascade") {
		t.Errorf("delete-core with a group:\n%s", r)
	}
	// Something in the bucket, with versions, as the control node would leave.
	bucket := out["BucketName"]
	for i := 0; i < 2; i++ {
		if _, err := c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("join/token"), Body: strings.NewReader("x")}); err != nil {
			t.Fatalf("writing to the bucket: %v", err)
		}
	}
	must(t, "delete-core", "core", "--cascade", "--yes", "-q")
	if names := c.stackNames(t); len(names) != 0 {
		t.Errorf("stacks after delete-core --cascade = %v", names)
	}
	if _, err := c.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		t.Error("bucket still exists after delete-core")
	}
	if nodes := decode[[]node](t, must(t, "list-nodes", "-o", "json")); len(nodes) != 0 {
		t.Errorf("nodes left after delete-core: %+v", nodes)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}
