package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// asgSetsCapacity tells whether the deployed template of stack gives its
// Auto Scaling group a DesiredCapacity.
func asgSetsCapacity(t *testing.T, c clients, stack string) bool {
	t.Helper()
	var tpl struct {
		Resources map[string]struct{ Properties map[string]any }
	}
	if err := json.Unmarshal([]byte(deployedStack(t, c, stack).template), &tpl); err != nil {
		t.Fatal(err)
	}
	_, ok := tpl.Resources[names.ResourceAutoScalingGroup].Properties["DesiredCapacity"]
	if _, there := tpl.Resources[names.ResourceAutoScalingGroup]; !there {
		t.Fatalf("%s has no %s", stack, names.ResourceAutoScalingGroup)
	}
	return ok
}

func asgTag(a asgtypes.AutoScalingGroup, key string) (string, bool) {
	for _, t := range a.Tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value), true
		}
	}
	return "", false
}

// An autoscaled group through the binary: created with the flags, tagged
// for the leader, its capacity (as the autoscaler sets it) kept by an
// update, -c refused, listed with its AUTOSCALE column and last change,
// planned, declared in a file, turned off; a group without autoscaling
// has no such tag.
func TestAutoscaleFlagsFilesPlan(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t)
	ctx := context.Background()
	must(t, "add-agents", "-n", "elastic", "-t", "t3.small", "-j", "core", "--autoscale", "--min", "1", "--max", "3", "--scale-down-after", "20s", "-q")
	must(t, "add-agents", "-n", "fixed", "-t", "t3.small", "-j", "core", "-c", "2", "-q")

	a := groupASG(t, c, "core", "elastic")
	if v, _ := asgTag(a, names.TagAutoscale); v != "20s" || aws.ToInt32(a.DesiredCapacity) != 1 || aws.ToInt32(a.MaxSize) != 3 {
		t.Errorf("autoscaled group: tag %q, desired %d, max %d", v, aws.ToInt32(a.DesiredCapacity), aws.ToInt32(a.MaxSize))
	}
	if v, _ := asgTag(a, names.TagInstanceTypes); v != "t3.small" {
		t.Errorf("instance types tag %q", v)
	}
	if asgSetsCapacity(t, c, "core-elastic") {
		t.Error("the autoscaled group's template sets DesiredCapacity")
	}
	if _, ok := asgTag(groupASG(t, c, "core", "fixed"), names.TagAutoscale); ok || !asgSetsCapacity(t, c, "core-fixed") {
		t.Error("a group without --autoscale is tagged as autoscaled, or leaves its capacity unset")
	}

	// An update leaves the capacity to the autoscaler: the deployed
	// template still sets none. (CloudFormation then leaves the live
	// capacity as it is; moto sets it back to the min, which is not
	// checked here: see docs/testing.md, What moto does not model.)
	must(t, "update-group", "-n", "elastic", "-j", "core", "--max", "4", "--yes", "-q")
	if a = groupASG(t, c, "core", "elastic"); aws.ToInt32(a.MaxSize) != 4 || asgSetsCapacity(t, c, "core-elastic") {
		t.Errorf("after an update: max %d, or the template sets DesiredCapacity", aws.ToInt32(a.MaxSize))
	}
	// The autoscaler raises the capacity.
	if _, err := c.asg.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: a.AutoScalingGroupName, DesiredCapacity: aws.Int32(3)}); err != nil {
		t.Fatal(err)
	}

	// A count is the autoscaler's: refused, pointing at --min/--max.
	if r := clusterctl(t, "update-group", "-n", "elastic", "-j", "core", "-c", "2", "--yes"); r.code != 2 || !strings.Contains(r.stderr, "-c/--count: an autoscaled group has no fixed count") || !strings.Contains(r.stderr, "--min, --max") {
		t.Errorf("update-group -c on an autoscaled group: %s", r)
	}
	if r := clusterctl(t, "update-group", "-n", "elastic", "-j", "core", "--no-autoscale", "--yes"); r.code != 2 || !strings.Contains(r.stderr, "--no-autoscale needs -c/--count") {
		t.Errorf("--no-autoscale without a count: %s", r)
	}
	if r := clusterctl(t, "add-agents", "-n", "bad", "-t", "t3.small", "-j", "core", "--autoscale", "--scale-down-after", "1s"); r.code != 2 || !strings.Contains(r.stderr, "--scale-down-after: invalid scale-down delay 1s: at least 10s") {
		t.Errorf("a short delay: %s", r)
	}
	if a2 := groupASG(t, c, "core", "elastic"); aws.ToInt32(a2.DesiredCapacity) != 3 {
		t.Errorf("refused update changed the capacity to %d", aws.ToInt32(a2.DesiredCapacity))
	}

	// The plan says the delay's change.
	if r := must(t, "update-group", "-n", "elastic", "-j", "core", "--scale-down-after", "5m", "--dry-run"); !regexp.MustCompile(`(?m)^autoscale\.scaleDownAfter\s+20s → 5m$`).MatchString(r.stdout) {
		t.Errorf("plan:\n%s", r.stdout)
	}

	// list-groups: the column, and the last change the leader published.
	now := time.Now().UTC().Truncate(time.Second)
	snap := wire.Snapshot{Version: 1, Cluster: "core", Time: now, Publisher: "i-1", CADigest: "d",
		Autoscale:   []wire.ScalingDecision{{Time: now, Group: "elastic", From: 1, To: 3, Reason: "4 tasks of api pending: insufficient memory"}},
		Unplaceable: []wire.Unplaceable{{Service: "huge", Tasks: 1, Reason: "reserves more than a node of any group offers (0 CPU, 64000 MiB)"}}}
	body, _ := snap.Marshal()
	if _, err := c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(names.StatusKey), Body: strings.NewReader(string(body))}); err != nil {
		t.Fatal(err)
	}
	r := must(t, "list-groups", "-j", "core", "-o", "wide")
	if !regexp.MustCompile(`(?m)^CLUSTER\s.*\sAUTOSCALE\s`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^core\s+elastic\s.*\s1–4, 1→3 at `+now.Format(time.TimeOnly)+`\s`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^core\s+fixed\s.*\soff\s`).MatchString(r.stdout) {
		t.Errorf("list-groups:\n%s", r.stdout)
	}
	type listed struct {
		Group     string
		Autoscale *struct {
			ScaleDownAfter string
			LastChange     *wire.ScalingDecision
		}
	}
	groups := decode[[]listed](t, must(t, "list-groups", "-j", "core", "-o", "json"))
	if len(groups) != 2 || groups[0].Autoscale == nil || groups[0].Autoscale.ScaleDownAfter != "20s" || groups[0].Autoscale.LastChange.To != 3 || groups[1].Autoscale != nil {
		t.Errorf("list-groups -o json: %+v", groups)
	}
	if r := must(t, "describe", "core"); !strings.Contains(r.stdout, "group elastic: desired 1 → 3: 4 tasks of api pending: insufficient memory") ||
		!strings.Contains(r.stdout, "huge: 1 task: reserves more than a node of any group offers") {
		t.Errorf("describe:\n%s", r.stdout)
	}

	// Declared in a file; export writes it back.
	dir := t.TempDir()
	path := filepath.Join(dir, "core.yaml")
	exported := must(t, "export", "core").stdout
	if !regexp.MustCompile(`(?m)^    autoscale:\n      enabled: true\n      scaleDownAfter: 20s$`).MatchString(exported) || strings.Contains(exported, "count: 3") {
		t.Errorf("export:\n%s", exported)
	}
	file := strings.Replace(exported, "scaleDownAfter: 20s", "scaleDownAfter: 2m", 1)
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, "apply", "-f", path, "--yes", "-q")
	if v, _ := asgTag(groupASG(t, c, "core", "elastic"), names.TagAutoscale); v != "2m" {
		t.Errorf("applied file: tag %q", v)
	}

	// Off again, with a count.
	must(t, "update-group", "-n", "elastic", "-j", "core", "--no-autoscale", "-c", "2", "--yes", "-q")
	a = groupASG(t, c, "core", "elastic")
	if _, ok := asgTag(a, names.TagAutoscale); ok || aws.ToInt32(a.DesiredCapacity) != 2 {
		t.Errorf("autoscaling off: tags %v, desired %d", a.Tags, aws.ToInt32(a.DesiredCapacity))
	}
}
