package e2e

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// deployed is what CloudFormation holds of a stack: what an update must
// leave alone when it changes nothing.
type deployed struct {
	params   map[string]string
	template string
}

func deployedStack(t *testing.T, c clients, name string) deployed {
	t.Helper()
	st := describeStack(t, c, name)
	params := map[string]string{}
	for _, p := range st.Parameters {
		params[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
	}
	tpl, err := c.cfn.GetTemplate(context.Background(), &cloudformation.GetTemplateInput{StackName: aws.String(name), TemplateStage: cfntypes.TemplateStageOriginal})
	if err != nil {
		t.Fatal(err)
	}
	return deployed{params, aws.ToString(tpl.TemplateBody)}
}

// helpFlag matches a flag in kong's help: "-c, --count=N", "--min=N",
// "--[no-]spot" (a negatable flag, named --spot here).
var helpFlag = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--(?:\[no-\])?([a-z][-a-z]*)`)

// flagsOf lists a command's own flags, from its help (global flags left
// out); command is its words: "add-agents", or "render", "group".
func flagsOf(t *testing.T, command ...string) []string {
	t.Helper()
	global := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(must(t, "--help").stdout, -1) {
		global["--"+m[1]] = true
	}
	var out []string
	for _, m := range helpFlag.FindAllStringSubmatch(must(t, append(command, "--help")...).stdout, -1) {
		if !global["--"+m[1]] {
			out = append(out, "--"+m[1])
		}
	}
	return out
}

// A group created with any add-agents flag and then updated with no flag
// is unchanged: exit 0 "No changes", parameters and template identical.
// (An update used to drop the SSH CIDR: the merge did not carry every
// create-time setting.)
func TestFlaglessUpdateKeepsEverySetting(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()
	must(t, "create-core", "core", "-q")
	images, err := c.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(images.Images) == 0 {
		t.Fatalf("moto's images: %v", err)
	}
	subnets, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil || len(subnets.Subnets) < 2 {
		t.Fatalf("moto's default subnets: %v", err)
	}
	if _, err := c.ec2.CreateKeyPair(ctx, &ec2.CreateKeyPairInput{KeyName: aws.String("ops")}); err != nil {
		t.Fatal(err)
	}
	// An internet-facing load balancer needs public subnets; a tls port an
	// issued certificate.
	routeToInternet(t, c, aws.ToString(subnets.Subnets[0].VpcId))
	acmc, _ := lbClients(t)
	cert := issuedCertificate(t, acmc)
	tests := []struct {
		flag string // the add-agents flag the case covers
		args []string
	}{
		{"--name", nil}, // every case names the group, its type and its cluster
		{"--instance-type", []string{"-t", "t3.small,t3a.small,t2.small"}}, // several types: a mixed group
		{"--spot", []string{"--spot"}},
		{"--on-demand-base", []string{"--spot", "--on-demand-base", "1"}},
		{"--on-demand-percent", []string{"--spot", "--on-demand-percent", "30"}},
		{"--spot-allocation", []string{"--spot", "--spot-allocation", "lowest-price", "-t", "t3a.small"}},
		{"--cluster", nil},
		{"--count", []string{"-c", "2"}},
		{"--min", []string{"--min", "1"}},
		{"--max", []string{"--max", "4"}},
		{"--labels", []string{"-m", "role=web,tier=front", "-m", "zone=b"}},
		{"--image-id", []string{"--image-id", aws.ToString(images.Images[0].ImageId)}},
		{"--image-id", []string{"--image-id", "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"}}, // a path, given
		{"--volume-size", []string{"--volume-size", "40"}},
		{"--subnet-ids", []string{"--subnet-ids", aws.ToString(subnets.Subnets[1].SubnetId)}},
		{"--ssh-cidr", []string{"--ssh-cidr", "203.0.113.0/24"}},
		{"--allow-ssh-from-anywhere", []string{"--ssh-cidr", "0.0.0.0/0", "--allow-ssh-from-anywhere"}},
		{"--key-name", []string{"--key-name", "ops"}},
		{"--public-ips", []string{"--public-ips"}},
		{"--max-batch", []string{"--max-batch", "2"}},
		{"--min-in-service", []string{"--min-in-service", "0"}},
		{"--publish", []string{"--publish", "80,8443:30443/tls,53/udp", "--certificate", cert}},
		{"--load-balancer", []string{"--publish", "80", "--load-balancer", "internal"}},
		{"--allow-from", []string{"--publish", "80", "--allow-from", "203.0.113.0/24,198.51.100.0/24"}},
		{"--certificate", []string{"--publish", "443/tls", "--certificate", cert}},
		{"--deregistration-delay", []string{"--publish", "80", "--deregistration-delay", "5"}},
		{"--access-logs", []string{"--publish", "80", "--access-logs", "ops-lb-logs"}},
		{"--tags", []string{"--tags", "team=web,owner=Jane Doe", "--tags", "cost-center=4711"}},
		{"--autoscale", []string{"--autoscale", "--min", "1", "--max", "3"}},
		{"--scale-down-after", []string{"--autoscale", "--max", "2", "--scale-down-after", "90s"}},
		{"--no-rollback", []string{"--no-rollback"}},
		{"--replace-failed", []string{"--replace-failed"}},
		{"--dry-run", nil}, // creates nothing: TestDryRunsChangeNothing
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.flag] = true
	}
	for _, f := range flagsOf(t, "add-agents") {
		if !covered[f] {
			t.Errorf("add-agents %s has no case here", f)
		}
	}
	for i, tt := range tests {
		if tt.args == nil {
			continue
		}
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			group := fmt.Sprintf("g%d", i)
			stack := "core-" + group
			// The subnets are public (for the load balancers): nodes there need public IPs.
			must(t, overriding([]string{"add-agents", "-n", group, "-t", "t3.small", "-j", "core", "--public-ips", "-q"}, tt.args)...)
			before := deployedStack(t, c, stack)
			r := clusterctl(t, "update-group", "-n", group, "-j", "core", "-q")
			if r.code != 0 || !strings.Contains(r.stderr, "No changes") {
				t.Errorf("flagless update-group:\n%s", r)
			}
			after := deployedStack(t, c, stack)
			if !maps.Equal(before.params, after.params) {
				t.Errorf("parameters changed:\nbefore %v\nafter  %v", before.params, after.params)
			}
			if before.template != after.template {
				t.Error("template changed")
			}
		})
	}
}

// The plan says what changes, with values, and how many nodes are
// replaced: computed by clusterctl, since moto's change sets leave
// parameter-only changes out.
func TestUpdatePlan(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	must(t, "add-agents", "-n", "web", "-t", "c5.large", "-j", "core", "-c", "2", "--ssh-cidr", "203.0.113.0/24", "-m", "role=web", "-q")

	// A count: values, no node replaced.
	r := must(t, "update-group", "-n", "web", "-j", "core", "-c", "3", "-q")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^SETTING\s+CHANGE$`),
		regexp.MustCompile(`(?m)^count\s+2 → 3$`),
		regexp.MustCompile(`(?m)^max\s+3 → 4$`), // moved along to keep a node of headroom
		regexp.MustCompile(`(?m)^0 nodes will be replaced$`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("count plan lacks %s:\n%s", want, r)
		}
	}
	if !strings.Contains(r.stderr, "Updated core-web") {
		t.Errorf("count update:\n%s", r)
	}
	if d := groupASG(t, c, "core", "web").DesiredCapacity; aws.ToInt32(d) != 3 {
		t.Errorf("desired capacity %d", aws.ToInt32(d))
	}

	// A type: every node replaced, as JSON; a dry run changes nothing.
	r = must(t, "update-group", "-n", "web", "-j", "core", "-t", "c5.xlarge", "--max-batch", "2", "--dry-run", "-o", "json", "-q")
	type setting struct {
		Setting string `json:"setting"`
		Old     any    `json:"old"`
		New     any    `json:"new"`
	}
	plan := decode[struct {
		Stack         string    `json:"stack"`
		Settings      []setting `json:"settings"`
		Changes       []struct{ Action, LogicalID, ResourceType, Replacement string }
		NodesReplaced int  `json:"nodesReplaced"`
		BatchSize     int  `json:"batchSize"`
		NoChanges     bool `json:"noChanges"`
		Applied       bool `json:"applied"`
	}](t, r)
	wantSettings := []setting{{"instanceType", "c5.large", "c5.xlarge"}, {"rollingUpdate.maxBatch", nil, 2.0}}
	if plan.Stack != "core-web" || !slices.Equal(plan.Settings, wantSettings) || plan.NodesReplaced != 3 || plan.BatchSize != 2 || plan.Applied || plan.NoChanges {
		t.Errorf("type plan %+v", plan)
	}
	// moto's change set leaves out a resource whose only change is a
	// parameter's value (the launch template's instance type: the user
	// data does not name it); CloudFormation lists it. The group's update
	// is there either way.
	if !slices.ContainsFunc(plan.Changes, func(c struct{ Action, LogicalID, ResourceType, Replacement string }) bool {
		return (c.LogicalID == "LaunchTemplate" || c.LogicalID == "AutoScalingGroup") && c.Action == "Modify"
	}) {
		t.Errorf("changes %+v lack the launch template", plan.Changes)
	}
	if got := deployedStack(t, c, "core-web").params["InstanceType"]; got != "c5.large" {
		t.Errorf("the dry run changed the type to %s", got)
	}

	// Closing SSH and clearing the labels are changes too.
	r = must(t, "update-group", "-n", "web", "-j", "core", "--ssh-cidr", "", "-m", "", "-q", "--yes")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^labels\s+role=web → \(none\)$`),
		regexp.MustCompile(`(?m)^sshCidr\s+203\.0\.113\.0/24 → \(closed\)$`),
		regexp.MustCompile(`(?m)^3 nodes will be replaced, 1 at a time$`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("plan lacks %s:\n%s", want, r)
		}
	}
	if p := deployedStack(t, c, "core-web").params; p["SshCidr"] != "" {
		t.Errorf("SshCidr = %q after closing SSH", p["SshCidr"])
	}
	if g := groupASG(t, c, "core", "web"); len(asgLabelTags(g.Tags)) != 0 {
		t.Errorf("labels left on the group: %v", asgLabelTags(g.Tags))
	}
}

func asgLabelTags(tags []asgtypes.TagDescription) map[string]string {
	out := map[string]string{}
	for _, t := range tags {
		if k := aws.ToString(t.Key); strings.HasPrefix(k, "clusterctl:label:") {
			out[k] = aws.ToString(t.Value)
		}
	}
	return out
}
