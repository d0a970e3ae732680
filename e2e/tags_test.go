package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The operator's --tags reach the stack (CloudFormation propagates them)
// and the launch template's instance and volume tag specifications; a
// cluster file carries them, export writes them, update-group and
// update-core change them, and clusterctl's and AWS's prefixes are
// refused (exit 2, nothing created).
func TestCustomTags(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "--tags", "team=platform,cost-center=4711", "-q")
	must(t, "add-agents", "-n", "web", "-t", "t3.small", "-j", "core", "--tags", "team=web", "--tags", "owner=Jane Doe", "-q")

	// Moto keeps a stack's tags as created (the change set's new tags are
	// checked against the CloudFormation fake: TestUpdateChangesTags).
	checkTags := func(t *testing.T, stack, group string, want map[string]string, created bool) {
		t.Helper()
		st := describeStack(t, c, stack)
		got := map[string]string{}
		for _, tag := range st.Tags {
			got[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
		}
		for k, v := range want {
			if created && got[k] != v {
				t.Errorf("stack %s: tag %s = %q, want %q (tags %v)", stack, k, got[k], v, got)
			}
		}
		asg := groupASG(t, c, "core", group)
		if asg.LaunchTemplate == nil {
			t.Fatalf("stack %s: its Auto Scaling group has no launch template", stack)
		}
		id := aws.ToString(asg.LaunchTemplate.LaunchTemplateId)
		out, err := c.ec2.DescribeLaunchTemplateVersions(context.Background(), &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(id), Versions: []string{"$Latest"}})
		if err != nil || len(out.LaunchTemplateVersions) != 1 {
			t.Fatalf("launch template %s: %v", id, err)
		}
		specs := map[string]map[string]string{}
		for _, ts := range out.LaunchTemplateVersions[0].LaunchTemplateData.TagSpecifications {
			m := map[string]string{}
			for _, tag := range ts.Tags {
				m[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
			}
			specs[string(ts.ResourceType)] = m
		}
		for _, res := range []string{"instance", "volume"} {
			for k, v := range want {
				if specs[res][k] != v {
					t.Errorf("stack %s: %s tag %s = %q, want %q", stack, res, k, specs[res][k], v)
				}
			}
		}
	}
	checkTags(t, "core", "control", map[string]string{"team": "platform", "cost-center": "4711"}, true)
	checkTags(t, "core-web", "web", map[string]string{"team": "web", "owner": "Jane Doe"}, true)

	// The instances carry them from their launch. (Moto tags no volume
	// from a launch template: the volumes' tag specification is checked
	// in the launch template above.)
	out, err := c.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:team"), Values: []string{"web"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Reservations) == 0 {
		t.Error("no instance carries team=web")
	}

	// The file of the live cluster holds them.
	r := must(t, "export", "core")
	for _, want := range []string{"  tags:\n    cost-center: \"4711\"\n    team: platform\n", "    tags:\n      owner: Jane Doe\n      team: web\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("export lacks %q:\n%s", want, r.stdout)
		}
	}

	// update-group replaces them; the new tags reach new nodes only
	// through new launches, so the plan replaces the nodes.
	r = must(t, "update-group", "-n", "web", "-j", "core", "--tags", "team=api", "--yes", "-q")
	if !regexp.MustCompile(`(?m)^tags\s+owner=Jane Doe,team=web → team=api$`).MatchString(r.stdout) || !strings.Contains(r.stdout, "1 node will be replaced") {
		t.Errorf("update-group --tags:\n%s", r)
	}
	checkTags(t, "core-web", "web", map[string]string{"team": "api"}, false)

	// A file changes them too.
	file := filepath.Join(t.TempDir(), "core.yaml")
	exported := strings.Replace(must(t, "export", "core").stdout, "team: platform", "team: infra", 1)
	if err := os.WriteFile(file, []byte(exported), 0o644); err != nil {
		t.Fatal(err)
	}
	r = must(t, "apply", "-f", file, "--dry-run")
	if !regexp.MustCompile(`(?m)^tags\s+cost-center=4711,team=platform → cost-center=4711,team=infra$`).MatchString(r.stdout) {
		t.Errorf("apply --dry-run of a tag change:\n%s", r)
	}
	must(t, "update-core", "core", "--tags", "team=infra,cost-center=4711", "--yes", "-q")
	checkTags(t, "core", "control", map[string]string{"team": "infra"}, false)
	if r := must(t, "apply", "-f", file, "-q"); !strings.Contains(r.stderr, "No changes") {
		t.Errorf("apply after update-core:\n%s", r)
	}

	// Refused before anything is created.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"create-core", "other", "--tags", "clusterctl:cluster=core"}, `--tags: invalid tag key "clusterctl:cluster": the prefix clusterctl: is reserved`},
		{[]string{"add-agents", "-n", "api", "-t", "t3.small", "-j", "core", "--tags", "aws:createdBy=me"}, "--tags: invalid tag key \"aws:createdBy\": the prefix aws: is reserved for AWS"},
		{[]string{"add-agents", "-n", "api", "-t", "t3.small", "-j", "core", "--tags", "team=" + strings.Repeat("x", 257)}, "257 characters, at most 256 allowed"},
		{[]string{"update-group", "-n", "web", "-j", "core", "--tags", "Name=mine"}, "clusterctl names the instances itself"},
		{[]string{"update-core", "core", "--tags", "team"}, `invalid tag "team": expected key=value`},
	} {
		r := clusterctl(t, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s: want exit 2 and %q:\n%s", strings.Join(tt.args, " "), tt.want, r)
		}
	}
	if names := c.stackNames(t); !sameSet(names, []string{"core", "core-web"}) {
		t.Errorf("refused tags created stacks: %v", names)
	}
}
