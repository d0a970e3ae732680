package query

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/clusterctl/clusterctl/internal/names"
)

type fakeEC2 struct {
	pages [][]ec2types.Instance
	calls []*ec2.DescribeInstancesInput
}

func (f *fakeEC2) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	f.calls = append(f.calls, in)
	i := 0
	if in.NextToken != nil {
		fmt.Sscan(*in.NextToken, &i)
	}
	out := &ec2.DescribeInstancesOutput{Reservations: []ec2types.Reservation{{Instances: f.pages[i]}}}
	if i+1 < len(f.pages) {
		out.NextToken = aws.String(fmt.Sprint(i + 1))
	}
	return out, nil
}

func instance(id, cluster, group string, labels ...string) ec2types.Instance {
	tags := []ec2types.Tag{{Key: aws.String(names.TagCluster), Value: aws.String(cluster)}, {Key: aws.String(names.TagGroup), Value: aws.String(group)}, {Key: aws.String("Name"), Value: aws.String("x")}}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		tags = append(tags, ec2types.Tag{Key: aws.String(names.TagLabelPrefix + k), Value: aws.String(v)})
	}
	return ec2types.Instance{
		InstanceId: aws.String(id), InstanceType: "r3.large", ImageId: aws.String("ami-1"),
		State:            &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning},
		PrivateIpAddress: aws.String("10.0.0.1"), Placement: &ec2types.Placement{AvailabilityZone: aws.String("us-east-1a")},
		LaunchTime: aws.Time(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), Tags: tags,
	}
}

func TestListNodes(t *testing.T) {
	f := &fakeEC2{pages: [][]ec2types.Instance{
		{instance("i-3", "core", "r3-agents", "role=worker"), instance("i-2", "core", "control")},
		{instance("i-1", "core", "c5-agents")},
	}}
	nodes, err := ListNodes(context.Background(), f, "core", "")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, n := range nodes {
		order = append(order, n.Group+"/"+n.InstanceID)
	}
	if got := strings.Join(order, " "); got != "control/i-2 c5-agents/i-1 r3-agents/i-3" {
		t.Errorf("order = %s", got)
	}
	if len(f.calls) != 2 {
		t.Errorf("calls = %d, want one per page (2)", len(f.calls))
	}
	filters := map[string][]string{}
	for _, fl := range f.calls[0].Filters {
		filters[aws.ToString(fl.Name)] = fl.Values
	}
	if got := filters["tag:clusterctl:cluster"]; len(got) != 1 || got[0] != "core" {
		t.Errorf("cluster filter = %v", got)
	}
	if _, ok := filters["tag:clusterctl:group"]; ok {
		t.Error("group filter set without -n")
	}
	if aws.ToInt32(f.calls[0].MaxResults) != 1000 {
		t.Errorf("MaxResults = %v, want 1000", f.calls[0].MaxResults)
	}
	if nodes[2].Labels["role"] != "worker" || nodes[2].Cluster != "core" || nodes[2].Zone != "us-east-1a" || nodes[2].Lifecycle != "on-demand" {
		t.Errorf("node = %+v", nodes[2])
	}

	f = &fakeEC2{pages: [][]ec2types.Instance{{}}}
	if _, err := ListNodes(context.Background(), f, "", "g1"); err != nil {
		t.Fatal(err)
	}
	filters = map[string][]string{}
	for _, fl := range f.calls[0].Filters {
		filters[aws.ToString(fl.Name)] = fl.Values
	}
	if got := filters["tag-key"]; len(got) != 1 || got[0] != names.TagCluster {
		t.Errorf("all-clusters filter = %v", filters)
	}
	if got := filters["tag:clusterctl:group"]; len(got) != 1 || got[0] != "g1" {
		t.Errorf("group filter = %v", got)
	}
}

// EC2 names spot instances and leaves on-demand ones unnamed.
func TestNodeLifecycle(t *testing.T) {
	spot := instance("i-9", "core", "batch")
	spot.InstanceLifecycle = ec2types.InstanceLifecycleTypeSpot
	nodes := []Node{nodeFrom(instance("i-1", "core", "web")), nodeFrom(spot)}
	if nodes[0].Lifecycle != "on-demand" || nodes[1].Lifecycle != "spot" {
		t.Errorf("lifecycles %q, %q", nodes[0].Lifecycle, nodes[1].Lifecycle)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, NodesTable(nodes, Columns{}, false)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if f := strings.Fields(lines[0]); f[4] != "LIFECYCLE" {
		t.Errorf("header %q", lines[0])
	}
	if f := strings.Fields(lines[2]); f[2] != "i-9" || f[4] != "spot" {
		t.Errorf("spot row %q", lines[2])
	}
}

func TestNodeJSONKeys(t *testing.T) {
	var buf bytes.Buffer
	out, err := NewOutput("json", "")
	if err != nil {
		t.Fatal(err)
	}
	n := nodeFrom(instance("i-1", "core", "control"))
	if err := out.Write(&buf, []Node{n}, nil); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range got[0] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := "cluster group imageId instanceId instanceType labels launchTime lifecycle privateIp publicIp state swarm swarmOnly zone"
	if strings.Join(keys, " ") != want {
		t.Errorf("keys = %v, want %s", keys, want)
	}
	if got[0]["labels"] == nil {
		t.Error("labels is null, want an object")
	}
}

type fakeCFN struct{ stacks []cfntypes.Stack }

func (f *fakeCFN) DescribeStacks(context.Context, *cloudformation.DescribeStacksInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	return &cloudformation.DescribeStacksOutput{Stacks: f.stacks}, nil
}

type fakeASG struct {
	groups []asgtypes.AutoScalingGroup
	calls  int
}

func (f *fakeASG) DescribeAutoScalingGroups(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	f.calls++
	return &autoscaling.DescribeAutoScalingGroupsOutput{AutoScalingGroups: f.groups}, nil
}

func stack(name, status string, tags, params, outputs map[string]string) cfntypes.Stack {
	s := cfntypes.Stack{StackName: aws.String(name), StackStatus: cfntypes.StackStatus(status), CreationTime: aws.Time(time.Unix(0, 0))}
	for k, v := range tags {
		s.Tags = append(s.Tags, cfntypes.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	for k, v := range params {
		s.Parameters = append(s.Parameters, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	for k, v := range outputs {
		s.Outputs = append(s.Outputs, cfntypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)})
	}
	return s
}

func TestListGroups(t *testing.T) {
	coreOut := map[string]string{"ClusterName": "core", "BucketName": "b1", "ControlPrivateIp": "10.0.0.5", "AgentSecurityGroupId": "sg-1", "AgentInstanceProfile": "p", "VpcId": "vpc-1", "ContractVersion": "1"}
	joinedParams := map[string]string{"ClusterName": "core", "BucketName": "b1", "ControlPrivateIp": "10.0.0.5", "AgentSecurityGroupId": "sg-1", "AgentInstanceProfile": "p", "VpcId": "vpc-1", "ContractVersion": "1", "InstanceType": "r3.large", "DesiredCapacity": "3", "MinSize": "0", "MaxSize": "5"}
	stale := map[string]string{}
	for k, v := range joinedParams {
		stale[k] = v
	}
	stale["ControlPrivateIp"] = "10.0.0.9"
	spotParams, mixedParams := maps.Clone(joinedParams), maps.Clone(joinedParams)
	// Lists as some implementations report them; the spot parameters only
	// a spot group's template declares.
	spotParams["InstanceType"] = "['m5.large', 'm5a.large', 'm6i.large']"
	spotParams["OnDemandBaseCapacity"], spotParams["OnDemandPercentageAboveBaseCapacity"], spotParams["SpotAllocationStrategy"] = "1", "25", "capacity-optimized"
	mixedParams["InstanceType"] = "c5.large,c5a.large"
	cfn := &fakeCFN{stacks: []cfntypes.Stack{
		stack("core", "CREATE_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "core", names.TagGroup: "control"}, nil, coreOut),
		stack("core-r3", "CREATE_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "agents", names.TagGroup: "r3", names.TagLabels: "role=worker"}, joinedParams, nil),
		stack("core-old", "UPDATE_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "agents", names.TagGroup: "old"}, stale, nil),
		stack("core-dead", "ROLLBACK_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "agents", names.TagGroup: "dead"}, joinedParams, nil),
		stack("core-spot", "CREATE_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "agents", names.TagGroup: "spot"}, spotParams, nil),
		stack("core-was-spot", "UPDATE_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "agents", names.TagGroup: "was-spot"}, spotParams, nil),
		stack("core-mixed", "CREATE_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "agents", names.TagGroup: "mixed"}, mixedParams, nil),
		stack("other-g", "CREATE_COMPLETE", map[string]string{names.TagCluster: "other", names.TagRole: "agents", names.TagGroup: "g"}, joinedParams, nil),
		stack("unrelated", "CREATE_COMPLETE", nil, nil, nil),
		// Our tags under names they do not give: conflicts, not groups or cores.
		stack("payments-prod-db", "CREATE_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "agents", names.TagGroup: "r3"}, joinedParams, nil),
		stack("core-copy", "CREATE_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "core", names.TagGroup: "control"}, nil, map[string]string{"ControlPrivateIp": "10.9.9.9"}),
		stack("core-x", "CREATE_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "agents"}, joinedParams, nil),
		stack("core-y", "CREATE_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "admin", names.TagGroup: "y"}, nil, nil),
	}}
	asg := &fakeASG{groups: []asgtypes.AutoScalingGroup{{
		DesiredCapacity: aws.Int32(2), MinSize: aws.Int32(1), MaxSize: aws.Int32(4),
		Tags:      []asgtypes.TagDescription{{Key: aws.String(names.TagCluster), Value: aws.String("core")}, {Key: aws.String(names.TagGroup), Value: aws.String("r3")}, {Key: aws.String(names.TagLabelPrefix + "tier"), Value: aws.String("memory")}},
		Instances: []asgtypes.Instance{{LifecycleState: asgtypes.LifecycleStateInService}, {LifecycleState: asgtypes.LifecycleStatePending}},
	}, {
		// Spot turned off: the stack may still report the spot parameters
		// (some implementations keep them); the group buys on demand.
		DesiredCapacity: aws.Int32(2), MinSize: aws.Int32(0), MaxSize: aws.Int32(3),
		Tags: []asgtypes.TagDescription{{Key: aws.String(names.TagCluster), Value: aws.String("core")}, {Key: aws.String(names.TagGroup), Value: aws.String("was-spot")}},
		MixedInstancesPolicy: &asgtypes.MixedInstancesPolicy{
			LaunchTemplate: &asgtypes.LaunchTemplate{Overrides: []asgtypes.LaunchTemplateOverrides{{InstanceType: aws.String("m5.large")}, {InstanceType: aws.String("m6i.large")}}},
			InstancesDistribution: &asgtypes.InstancesDistribution{OnDemandBaseCapacity: aws.Int32(0), OnDemandPercentageAboveBaseCapacity: aws.Int32(100),
				SpotAllocationStrategy: aws.String("lowest-price")},
		},
	}}}
	groups, conflicts, err := ListGroups(context.Background(), cfn, asg, "core")
	if err != nil {
		t.Fatal(err)
	}
	wantConflicts := map[string]string{
		"payments-prod-db": "tagged as group r3 of cluster core, whose stack is named core-r3",
		"core-copy":        "tagged as the core of cluster core, whose core stack is named core",
		"core-x":           "without a group name",
		"core-y":           `unknown role "admin"`,
	}
	if len(conflicts) != len(wantConflicts) {
		t.Errorf("conflicts = %+v", conflicts)
	}
	for _, c := range conflicts {
		if want := wantConflicts[c.Stack]; want == "" || !strings.Contains(c.String(), want) || !strings.Contains(c.String(), "never touched") {
			t.Errorf("conflict %s: %q, want %q", c.Stack, c, want)
		}
	}
	if asg.calls != 1 {
		t.Errorf("ASG calls = %d, want 1", asg.calls)
	}
	got := map[string]Group{}
	for _, g := range groups {
		got[g.Group] = g
	}
	if len(groups) != 6 {
		t.Fatalf("groups = %+v, want dead, mixed, old, r3, spot, was-spot", groups)
	}
	for name, want := range map[string]struct {
		types, mix, allocation string
		percent                int
	}{
		"r3":       {"r3.large", "on-demand", "", 100},
		"mixed":    {"c5.large,c5a.large", "on-demand", "", 100},
		"spot":     {"m5.large,m5a.large,m6i.large", "spot, on-demand 1 + 25%", "capacity-optimized", 25},
		"was-spot": {"m5.large,m6i.large", "on-demand", "", 100},
	} {
		g := got[name]
		if g.InstanceType != want.types || strings.Join(g.InstanceTypes, ",") != want.types || g.Mix() != want.mix || g.SpotAllocation != want.allocation || g.OnDemandPercent != want.percent || g.Spot != (want.allocation != "") {
			t.Errorf("%s: %+v, mix %q", name, g, g.Mix())
		}
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, GroupsTable(groups, Columns{Wide: true})); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"TYPE                           LIFECYCLE                 DESIRED",
		"m5.large,m5a.large,m6i.large   spot, on-demand 1 + 25%   3",
		"capacity-optimized   core-spot",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	if r3 := got["r3"]; !r3.Joined || r3.Desired != 2 || r3.Min != 1 || r3.Max != 4 || r3.Running != 1 || r3.Labels["tier"] != "memory" || len(r3.Labels) != 1 || r3.InstanceType != "r3.large" {
		t.Errorf("r3 = %+v", r3)
	}
	if got["old"].Joined {
		t.Error("group with a stale control IP reported as joined to a core of contract 1")
	}
	if d := got["dead"]; d.Status != "ROLLBACK_COMPLETE" || d.Desired != 3 || d.Running != 0 || d.Labels == nil {
		t.Errorf("dead = %+v", d)
	}
}

func TestJoinedWithoutCore(t *testing.T) {
	if Joined(map[string]string{"ClusterName": "x"}, nil) {
		t.Error("joined without a core")
	}
}

// A group follows its core's current outputs; one of an earlier contract
// stays joined to an upgraded core as long as what they share agrees.
func TestJoined(t *testing.T) {
	core := map[string]string{"ClusterName": "c", "BucketName": "b", "ControlSecurityGroupId": "sg-1", "AgentSecurityGroupId": "sg-2",
		"AgentInstanceProfile": "arn:p", "VpcId": "vpc-1", "SubnetIds": "subnet-1", "ManagersKey": "join/swarm/managers", "ContractVersion": "2"}
	v1 := map[string]string{"ClusterName": "c", "BucketName": "b", "ControlPrivateIp": "10.0.1.10", "ControlSecurityGroupId": "sg-1",
		"AgentSecurityGroupId": "sg-2", "AgentInstanceProfile": "arn:p", "VpcId": "vpc-1", "SubnetIds": "subnet-9", "ContractVersion": "1"}
	for _, tc := range []struct {
		name   string
		group  map[string]string
		joined bool
	}{
		{"current contract", maps.Clone(core), true},
		{"own subnets", mergeParams(core, map[string]string{"SubnetIds": "subnet-7"}), true},
		{"contract 1 group of an upgraded core", v1, true},
		{"contract 1 group, other bucket", mergeParams(v1, map[string]string{"BucketName": "x"}), false},
		{"other agent security group", mergeParams(core, map[string]string{"AgentSecurityGroupId": "sg-9"}), false},
		{"newer contract than the core", mergeParams(core, map[string]string{"ContractVersion": "3"}), false},
	} {
		if got := Joined(tc.group, core); got != tc.joined {
			t.Errorf("%s: joined = %v", tc.name, got)
		}
	}
}

func mergeParams(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

func TestOutputFormats(t *testing.T) {
	nodes := []Node{nodeFrom(instance("i-1", "core", "control")), nodeFrom(instance("i-2", "core", "r3", "a=b"))}
	tests := []struct {
		format, query string
		want          []string
		wantErr       string
	}{
		{"table", "", []string{"CLUSTER   GROUP", "core      control   i-1"}, ""},
		{"wide", "", []string{"IMAGE   ENGINE   AGENT   LABELS", "ami-1   -        -       a=b"}, ""},
		{"json", `.[].instanceId`, []string{"\"i-1\"\n\"i-2\"\n"}, ""},
		{"table", `.[].instanceId`, []string{"i-1\ni-2\n"}, ""},
		{"yaml", `.[1].labels`, []string{"a: b\n"}, ""},
		{"yaml", `.[].instanceId`, []string{"i-1\n---\ni-2\n"}, ""},
		{"JSON", `.[0].instanceId`, []string{"\"i-1\"\n"}, ""},
		{"Wide", "", []string{"IMAGE   ENGINE   AGENT   LABELS"}, ""},
		{"yaml", "", []string{"- cluster: core", "instanceId: i-2"}, ""},
		{"json", `map(select(.group == "r3")) | length`, []string{"1\n"}, ""},
		{"xml", "", nil, "invalid output format"},
		{"json", ".[", nil, "invalid --query"},
		{"json", "$undefined", nil, "invalid --query"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		out, err := NewOutput(tt.format, tt.query)
		if err == nil {
			err = out.Write(&buf, nodes, func(wide bool) Table { return NodesTable(nodes, Columns{Wide: wide}, true) })
		}
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s %q: err = %v, want one line containing %q", tt.format, tt.query, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q: %v", tt.format, tt.query, err)
			continue
		}
		// A leading document separator or blank line is noise to scripts.
		if strings.HasPrefix(buf.String(), "---") || strings.HasPrefix(buf.String(), "\n") {
			t.Errorf("%s %q: output starts with a separator: %q", tt.format, tt.query, buf.String())
		}
		for _, w := range tt.want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s %q: output %q does not contain %q", tt.format, tt.query, buf.String(), w)
			}
		}
	}
}

func TestTableAlignedWithoutTrailingBlanks(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, Table{Header: []string{"A", "BB"}, Rows: [][]string{{"long-value", "x"}, {"s", "y"}}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("lines = %q", lines)
	}
	col := strings.Index(lines[0], "BB")
	for _, l := range lines[1:] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("column not aligned at %d in %q", col, l)
		}
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing blank in %q", l)
		}
	}
}

func TestListNames(t *testing.T) {
	cfn := &fakeCFN{stacks: []cfntypes.Stack{
		stack("prod", "CREATE_COMPLETE", map[string]string{names.TagCluster: "prod", names.TagRole: "core", names.TagGroup: "control"}, nil, nil),
		stack("core", "CREATE_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "core", names.TagGroup: "control"}, nil, nil),
		stack("core-r3", "CREATE_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "agents", names.TagGroup: "r3"}, nil, nil),
		stack("core-c5", "ROLLBACK_COMPLETE", map[string]string{names.TagCluster: "core", names.TagRole: "agents", names.TagGroup: "c5"}, nil, nil),
		stack("gone", "DELETE_COMPLETE", map[string]string{names.TagCluster: "gone", names.TagRole: "core", names.TagGroup: "control"}, nil, nil),
		stack("unrelated", "CREATE_COMPLETE", nil, nil, nil),
	}}
	n, err := ListNames(context.Background(), cfn)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(n.Clusters, []string{"core", "prod"}) || !slices.Equal(n.Groups["core"], []string{"c5", "r3"}) || len(n.Groups) != 1 {
		t.Errorf("names = %+v", n)
	}
}
