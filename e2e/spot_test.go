package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// mixedGroup is what list-groups says of a group's types and purchase mix.
type mixedGroup struct {
	Group           string   `json:"group"`
	InstanceType    string   `json:"instanceType"`
	InstanceTypes   []string `json:"instanceTypes"`
	Spot            bool     `json:"spot"`
	OnDemandBase    int      `json:"onDemandBase"`
	OnDemandPercent int      `json:"onDemandPercent"`
	SpotAllocation  string   `json:"spotAllocation"`
	Desired         int      `json:"desired"`
}

func overrideTypes(p *asgtypes.MixedInstancesPolicy) []string {
	var out []string
	for _, o := range p.LaunchTemplate.Overrides {
		out = append(out, aws.ToString(o.InstanceType))
	}
	return out
}

// A spot group of several types is created with a mixed instances policy
// over its launch template, listed with its types and mix, changed by
// update-group (plan old → new) and turned back to on-demand.
func TestSpotMixedGroup(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()
	must(t, "create-core", "core", "-q")
	r := must(t, "add-agents", "-n", "spot", "-t", "m5.large,m5a.large,m6i.large", "--spot", "--on-demand-base", "1", "--on-demand-percent", "25",
		"-j", "core", "-c", "3", "-q")
	// Creating it says what is bought.
	if !strings.Contains(r.stderr, "Creating group stack core-spot (3 x m5.large,m5a.large,m6i.large, spot with on-demand 1 + 25%) in cluster core") {
		t.Errorf("add-agents of a spot group:\n%s", r)
	}

	a := groupASG(t, c, "core", "spot")
	p := a.MixedInstancesPolicy
	if p == nil || a.LaunchTemplate != nil {
		t.Fatalf("auto scaling group without a mixed instances policy: %+v", a)
	}
	d := p.InstancesDistribution
	if got := overrideTypes(p); !slices.Equal(got, []string{"m5.large", "m5a.large", "m6i.large"}) ||
		aws.ToInt32(d.OnDemandBaseCapacity) != 1 || aws.ToInt32(d.OnDemandPercentageAboveBaseCapacity) != 25 ||
		aws.ToString(d.SpotAllocationStrategy) != "price-capacity-optimized" || aws.ToString(d.OnDemandAllocationStrategy) != "prioritized" {
		t.Errorf("mixed instances policy: types %v, distribution %+v", got, d)
	}
	// moto takes no CapacityRebalance from a template: the template says it.
	if tpl := deployedStack(t, c, "core-spot").template; !regexp.MustCompile(`"CapacityRebalance":\s*true`).MatchString(tpl) {
		t.Error("spot group template without capacity rebalancing")
	}

	groups := decode[[]mixedGroup](t, must(t, "list-groups", "-j", "core", "-o", "json"))
	want := mixedGroup{Group: "spot", InstanceType: "m5.large,m5a.large,m6i.large", InstanceTypes: []string{"m5.large", "m5a.large", "m6i.large"},
		Spot: true, OnDemandBase: 1, OnDemandPercent: 25, SpotAllocation: "price-capacity-optimized", Desired: 3}
	if len(groups) != 1 || !sameGroup(groups[0], want) {
		t.Errorf("list-groups: %+v, want %+v", groups, want)
	}
	if r := must(t, "list-groups", "-j", "core", "-o", "wide"); !regexp.MustCompile(`(?m)^CLUSTER\s+GROUP\s+STATUS\s+TYPE\s+LIFECYCLE\s+DESIRED`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^core\s+spot\s+CREATE_COMPLETE\s+m5\.large,m5a\.large,m6i\.large\s+spot, on-demand 1 \+ 25%\s+3\s`).MatchString(r.stdout) {
		t.Errorf("list-groups -o wide table:\n%s", r.stdout)
	}
	// The default table of a named cluster: shortened, no CLUSTER column.
	if r := must(t, "list-groups", "-j", "core"); !regexp.MustCompile(`(?m)^GROUP\s+STATUS\s+TYPE\s+LIFECYCLE\s+DESIRED`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^spot\s+CREATE_COMPLETE\s+m5\.large\+2\s+mixed\s+3\s`).MatchString(r.stdout) {
		t.Errorf("list-groups table:\n%s", r.stdout)
	}

	// moto launches a group's instances on demand; a spot instance of the
	// group, launched here as EC2 would, is listed as spot.
	images, err := c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(images.Images) == 0 {
		t.Fatalf("moto's images: %v", err)
	}
	run, err := c.ec2.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: images.Images[0].ImageId, InstanceType: ec2types.InstanceTypeM5aLarge, MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		InstanceMarketOptions: &ec2types.InstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeSpot},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: aws.String("clusterctl:cluster"), Value: aws.String("core")}, {Key: aws.String("clusterctl:group"), Value: aws.String("spot")},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	spotID := aws.ToString(run.Instances[0].InstanceId)
	var nodes []struct {
		InstanceID   string `json:"instanceId"`
		InstanceType string `json:"instanceType"`
		Lifecycle    string `json:"lifecycle"`
	}
	if err := json.Unmarshal([]byte(must(t, "list-nodes", "-j", "core", "-n", "spot", "-o", "json").stdout), &nodes); err != nil {
		t.Fatal(err)
	}
	lifecycles := map[string]int{}
	for _, n := range nodes {
		lifecycles[n.Lifecycle]++
		if n.InstanceID == spotID && (n.Lifecycle != "spot" || n.InstanceType != "m5a.large") {
			t.Errorf("spot node listed as %+v", n)
		}
	}
	// (moto launches fewer than the desired count for this mix: its own
	// arithmetic, not AWS's.)
	if n := len(a.Instances); lifecycles["spot"] != 1 || lifecycles["on-demand"] != n || n == 0 {
		t.Errorf("lifecycles %v, want 1 spot and the group's %d on demand", lifecycles, n)
	}
	if r := must(t, "list-nodes", "-j", "core", "-n", "spot"); !regexp.MustCompile(`(?m)^spot\s+` + spotID + `\s+m5a\.large\s+spot\s+running`).MatchString(r.stdout) {
		t.Errorf("list-nodes table:\n%s", r.stdout)
	}
	if _, err := c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{spotID}}); err != nil {
		t.Fatal(err)
	}

	// Types and the mix change like any setting: the plan shows old → new.
	r = must(t, "update-group", "-n", "spot", "-j", "core", "-t", "m5.large,m6i.large", "--on-demand-percent", "50", "--spot-allocation", "capacity-optimized", "--yes")
	for _, want := range []string{
		`(?m)^instanceType\s+m5\.large,m5a\.large,m6i\.large → m5\.large,m6i\.large$`,
		`(?m)^onDemandPercent\s+25 → 50$`,
		`(?m)^spotAllocation\s+price-capacity-optimized → capacity-optimized$`,
		`(?m)^` + fmt.Sprint(len(a.Instances)) + ` nodes will be replaced, 1 at a time$`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("plan lacks %s:\n%s", want, r.stdout)
		}
	}
	a = groupASG(t, c, "core", "spot")
	if got := overrideTypes(a.MixedInstancesPolicy); !slices.Equal(got, []string{"m5.large", "m6i.large"}) ||
		aws.ToInt32(a.MixedInstancesPolicy.InstancesDistribution.OnDemandPercentageAboveBaseCapacity) != 50 ||
		aws.ToString(a.MixedInstancesPolicy.InstancesDistribution.SpotAllocationStrategy) != "capacity-optimized" {
		t.Errorf("after the update: types %v, distribution %+v", got, a.MixedInstancesPolicy.InstancesDistribution)
	}

	// Without spot, every node is on-demand again: the mix is gone.
	r = must(t, "update-group", "-n", "spot", "-j", "core", "--no-spot", "--yes")
	if !regexp.MustCompile(`(?m)^spot\s+true → \(off\)$`).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^onDemandPercent\s+50 → \(all on-demand\)$`).MatchString(r.stdout) {
		t.Errorf("plan of --no-spot:\n%s", r.stdout)
	}
	g := decode[[]mixedGroup](t, must(t, "list-groups", "-j", "core", "-o", "json"))[0]
	if g.Spot || g.OnDemandPercent != 100 || g.SpotAllocation != "" || g.InstanceType != "m5.large,m6i.large" {
		t.Errorf("after --no-spot: %+v", g)
	}
	// (moto keeps reporting parameters a template no longer declares.)
	var tpl struct {
		Parameters map[string]any
		Resources  map[string]struct{ Properties map[string]any }
	}
	if err := json.Unmarshal([]byte(deployedStack(t, c, "core-spot").template), &tpl); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"OnDemandBaseCapacity", "OnDemandPercentageAboveBaseCapacity", "SpotAllocationStrategy"} {
		if _, ok := tpl.Parameters[k]; ok {
			t.Errorf("template still takes %s after --no-spot", k)
		}
	}
	if _, ok := tpl.Resources["AutoScalingGroup"].Properties["CapacityRebalance"]; ok {
		t.Error("capacity rebalancing after --no-spot")
	}
	if d := groupASG(t, c, "core", "spot").MixedInstancesPolicy.InstancesDistribution; aws.ToInt32(d.OnDemandPercentageAboveBaseCapacity) != 100 {
		t.Errorf("distribution after --no-spot: %+v", d)
	}
	// One type without spot: a plain launch template, as before groups
	// could be mixed.
	must(t, "update-group", "-n", "spot", "-j", "core", "-t", "m5.large", "-q", "--yes")
	if a := groupASG(t, c, "core", "spot"); a.LaunchTemplate == nil || a.MixedInstancesPolicy != nil && a.MixedInstancesPolicy.LaunchTemplate != nil {
		t.Errorf("one type on demand: launch template %+v, mixed instances policy %+v", a.LaunchTemplate, a.MixedInstancesPolicy)
	}
	if tpl := deployedStack(t, c, "core-spot").template; strings.Contains(tpl, "MixedInstancesPolicy") {
		t.Error("one type on demand rendered with a mixed instances policy")
	}
}

func sameGroup(a, b mixedGroup) bool {
	return a.Group == b.Group && a.InstanceType == b.InstanceType && slices.Equal(a.InstanceTypes, b.InstanceTypes) && a.Spot == b.Spot &&
		a.OnDemandBase == b.OnDemandBase && a.OnDemandPercent == b.OnDemandPercent && a.SpotAllocation == b.SpotAllocation && a.Desired == b.Desired
}

// Types of more than one architecture are refused before anything is
// created or uploaded, naming the odd one out, offline and as EC2 says; so
// are types not offered where the group runs, and a mix without spot.
func TestMixedGroupRefusals(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()
	must(t, "create-core", "core", "-q")
	bucket := outputs(describeStack(t, c, "core"))["BucketName"]
	before, err := c.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "m5.large,m6g.large,m5a.large"}, "-t/--instance-type: instance types of more than one architecture: m6g.large is arm64, the others x86_64"},
		{[]string{"-t", "m5.large,m5.large"}, "instance type m5.large given twice"},
		{[]string{"-t", "m5.large", "--on-demand-percent", "50"}, "--on-demand-percent: applies to spot groups only (without spot"},
		{[]string{"-t", "m5.large", "--spot", "--on-demand-percent", "101"}, "--on-demand-percent: invalid on-demand percentage 101"},
		{[]string{"-t", "m5.large", "--spot", "--spot-allocation", "cheapest"}, `--spot-allocation: invalid spot allocation strategy "cheapest"`},
	} {
		r := clusterctl(t, append([]string{"add-agents", "-n", "mix", "-j", "core", "-q"}, tt.args...)...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "clusterctl: ") || !strings.Contains(r.stderr, tt.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: want exit 2 with %q\n%s", tt.args, tt.want, r)
		}
	}
	// Asked of EC2 before anything is uploaded: the architectures (mac2.metal
	// is arm64_mac, which its name does not tell), and every type offered in
	// the zones of the subnets given (m5.large is not in us-east-1e).
	zoneE, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
		{Name: aws.String("availability-zone"), Values: []string{"us-east-1e"}}, {Name: aws.String("default-for-az"), Values: []string{"true"}},
	}})
	if err != nil || len(zoneE.Subnets) == 0 {
		t.Fatalf("moto's subnet in us-east-1e: %v", err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "m5.large,mac2.metal"}, "pre-flight: instance types must share one architecture: mac2.metal is arm64_mac"},
		{[]string{"-t", "t2.small,m5.large", "--subnet-ids", aws.ToString(zoneE.Subnets[0].SubnetId)}, "pre-flight: instance type m5.large is not offered in any of the subnets' zones (us-east-1e)"},
	} {
		r := clusterctl(t, append([]string{"add-agents", "-n", "mix", "-j", "core", "-q"}, tt.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: want exit 2 with %q\n%s", tt.args, tt.want, r)
		}
	}
	must(t, "add-agents", "-n", "g", "-t", "m5.large", "-j", "core", "-q")
	r := clusterctl(t, "update-group", "-n", "g", "-j", "core", "-t", "m5.large,m7g.large", "-q")
	if r.code != 2 || !strings.Contains(r.stderr, "m7g.large is arm64") {
		t.Errorf("update-group with an architecture mix:\n%s", r)
	}
	if names := c.stackNames(t); !sameSet(names, []string{"core", "core-g"}) {
		t.Errorf("stacks %v", names)
	}
	after, err := c.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(after.Contents) - len(before.Contents); n != 1 {
		t.Errorf("%d objects uploaded, want the one node configuration of g", n)
	}
}
