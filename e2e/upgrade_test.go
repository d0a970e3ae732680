package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/names"
)

// upgradePlan is upgrade's JSON form.
type upgradePlan struct {
	Plan struct {
		Cluster string
		Stacks  []struct {
			Stack, Group string
			Nodes        int
			Current      bool
			Changes      []struct{ What, Old, New string }
		}
	}
	Upgraded []string
	DryRun   bool
}

// newAgentsEnv is the environment of a clusterctl that carries other node
// agents than the one that deployed the cluster (a newer release).
func newAgentsEnv(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agents")
	if err := writeAgents(dir, "e2e newer"); err != nil {
		t.Fatal(err)
	}
	return append(envOf(t), "CLUSTERCTL_NODE_AGENTS="+dir)
}

// inServiceNodes is a status snapshot's node list for every instance in
// service of the cluster's Auto Scaling groups: a healthy swarm.
func inServiceNodes(t *testing.T, c clients) []map[string]any {
	t.Helper()
	out, err := c.asg.DescribeAutoScalingGroups(context.Background(), &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []map[string]any
	for _, g := range out.AutoScalingGroups {
		role := "worker"
		if strings.Contains(aws.ToString(g.AutoScalingGroupName), "Manager") {
			role = "manager"
		}
		for _, i := range g.Instances {
			n := map[string]any{"nodeId": "n" + aws.ToString(i.InstanceId), "instanceId": aws.ToString(i.InstanceId), "role": role,
				"state": "ready", "availability": "active", "engineLabels": map[string]string{}}
			if role == "manager" {
				n["managerStatus"] = "leader"
			}
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// The plan says, per stack, what changes (a newer clusterctl's node
// agent) and the order; a dry run changes nothing; a stack brought up to
// date another way shows as current and is skipped; off a terminal the
// upgrade is refused without --yes.
func TestUpgradePlanDryRunAndAsk(t *testing.T) {
	parallel(t)
	c, _ := newCluster(t, "web")
	before := describeStack(t, c, "core-web")
	agentBefore := describeStackParam(t, c, "core-web", "NodeAgentAmd64")

	// The clusterctl that deployed it: every stack current.
	p := decode[upgradePlan](t, must(t, "upgrade", "-j", "core", "--dry-run", "-o", "json"))
	if len(p.Plan.Stacks) != 2 || p.Plan.Stacks[0].Stack != "core" || p.Plan.Stacks[1].Stack != "core-web" {
		t.Fatalf("plan stacks: %+v", p.Plan.Stacks)
	}
	for _, s := range p.Plan.Stacks {
		if !s.Current {
			t.Errorf("%s is not current right after its deployment: %+v", s.Stack, s.Changes)
		}
	}
	r := must(t, "upgrade", "-j", "core", "--yes")
	if !strings.Contains(r.stderr, "Cluster core is current: nothing to upgrade.") {
		t.Errorf("upgrade of a current cluster:\n%s", r)
	}

	// A newer clusterctl: both stacks get its node agent, core first.
	newer := newAgentsEnv(t)
	r = clusterctlEnv(t, newer, "upgrade", "-j", "core", "--dry-run")
	if r.code != 0 {
		t.Fatalf("dry run: %s", r)
	}
	plan := strings.Join(strings.Fields(r.stdout), " ")
	for _, want := range []string{"1 - - backup of the swarm", "2 core 1 node agent ", "3 core-web 1 node agent ",
		"The upgrade replaces the 1 managers one at a time, then the 1 nodes of group web"} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "Dry run: nothing changed") {
		t.Errorf("dry run:\n%s", r)
	}
	// Off a terminal, without --yes: refused as bad input, nothing done.
	r = clusterctlEnv(t, newer, "upgrade", "-j", "core")
	if r.code != 2 || !strings.Contains(r.stderr, "pass --yes when not on a terminal") {
		t.Errorf("upgrade without --yes off a terminal:\n%s", r)
	}
	after := describeStack(t, c, "core-web")
	if !aws.ToTime(after.LastUpdatedTime).Equal(aws.ToTime(before.LastUpdatedTime)) || describeStackParam(t, c, "core-web", "NodeAgentAmd64") != agentBefore {
		t.Errorf("the dry run or the refusal changed core-web")
	}

	// The core brought to the newer agent by update-core: the plan skips it.
	if r := clusterctlEnv(t, newer, "update-core", "core", "--yes", "-q"); r.code != 0 {
		t.Fatalf("update-core with the newer agent: %s", r)
	}
	r = clusterctlEnv(t, newer, "upgrade", "-j", "core", "--dry-run", "-o", "json")
	p = decode[upgradePlan](t, r)
	if len(p.Plan.Stacks) != 2 || !p.Plan.Stacks[0].Current || p.Plan.Stacks[1].Current || !p.DryRun {
		t.Errorf("plan after the core's update: %+v", p.Plan.Stacks)
	}
}

// An upgrade stopped by a failed validation resumes: run again, it skips
// the stacks already current, validates the cluster before it touches
// the next one, and with the cluster healthy again finishes.
func TestUpgradeResumesAfterAFailedValidation(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t, "web")
	newer := newAgentsEnv(t)
	if r := clusterctlEnv(t, newer, "update-core", "core", "--yes", "-q"); r.code != 0 {
		t.Fatalf("update-core with the newer agent: %s", r)
	}
	agentBefore := describeStackParam(t, c, "core-web", "NodeAgentAmd64")

	// A node of the swarm down: the upgrade stops before core-web.
	nodes := inServiceNodes(t, c)
	nodes[len(nodes)-1]["state"] = "down"
	putStatus(t, c, bucket, nodes...)
	r := clusterctlEnv(t, newer, "upgrade", "-j", "core", "--yes", "--validate-timeout", "3s")
	if r.code != 1 || !strings.Contains(r.stderr, "did not validate within 3s") || !strings.Contains(r.stderr, "is down") ||
		!strings.Contains(r.stderr, "`clusterctl upgrade -j core` resumes the upgrade") {
		t.Errorf("upgrade of an invalid cluster:\n%s", r)
	}
	if got := describeStackParam(t, c, "core-web", "NodeAgentAmd64"); got != agentBefore {
		t.Errorf("core-web was updated although the cluster did not validate")
	}

	// The node back: the leader, played here, publishes a healthy swarm
	// and takes the backup asked for. The run skips the core, backs up,
	// updates core-web and validates it.
	healthy := inServiceNodes(t, c)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			now := time.Now().UTC().Format(time.RFC3339)
			body, _ := json.Marshal(map[string]any{"version": 1, "cluster": "core", "time": now, "publisher": "i-0000000000000000a",
				"caDigest": strings.Repeat("ab", 32), "lastBackup": now, "nodes": healthy})
			c.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(names.StatusKey), Body: bytes.NewReader(body)})
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	r = clusterctlEnv(t, newer, "upgrade", "-j", "core", "--yes", "--validate-timeout", "2m", "-o", "json")
	close(stop)
	<-done
	if r.code != 0 {
		t.Fatalf("the resumed upgrade:\n%s", r)
	}
	p := decode[upgradePlan](t, r)
	if len(p.Upgraded) != 1 || p.Upgraded[0] != "core-web" || !p.Plan.Stacks[0].Current {
		t.Errorf("resumed upgrade: upgraded %v, plan %+v", p.Upgraded, p.Plan.Stacks)
	}
	for _, want := range []string{"Validating cluster core before the upgrade", "Swarm of core backed up at", "Upgrading core-web", "Cluster core is upgraded"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the resumed upgrade does not say %q:\n%s", want, r.stderr)
		}
	}
	if got := describeStackParam(t, c, "core-web", "NodeAgentAmd64"); got == agentBefore {
		t.Errorf("core-web still pins the old node agent")
	}
	p = decode[upgradePlan](t, clusterctlEnv(t, newer, "upgrade", "-j", "core", "--dry-run", "-o", "json"))
	for _, st := range p.Plan.Stacks {
		if !st.Current {
			t.Errorf("%s not current after the upgrade: %+v", st.Stack, st.Changes)
		}
	}
}

// upgrade refuses, changing nothing: while the core's update is in
// progress, and when a group's stack cannot be read.
func TestUpgradeRefusals(t *testing.T) {
	parallel(t)
	resetMoto(t)
	fake := cfnfake.New(t)
	fake.Seed(cfnfake.Seed{Name: "core", Status: "UPDATE_IN_PROGRESS", Tags: map[string]string{"clusterctl:cluster": "core", "clusterctl:role": "core", "clusterctl:group": "control"}})
	environ := append(envOf(t), "AWS_ENDPOINT_URL_CLOUDFORMATION="+fake.URL)
	r := clusterctlEnv(t, environ, "upgrade", "-j", "core", "--dry-run")
	if r.code != 1 || !strings.Contains(r.stderr, "UPDATE_IN_PROGRESS") {
		t.Errorf("upgrade during the core's update:\n%s", r)
	}

	newCluster(t, "web")
	proxy := deniedProxy(t, map[string]func(url.Values) bool{
		"cloudformation": func(f url.Values) bool {
			return f.Get("Action") == "DescribeStacks" && f.Get("StackName") == "core-web"
		},
	})
	r = clusterctlEnv(t, append(newAgentsEnv(t), "AWS_ENDPOINT_URL="+proxy), "upgrade", "-j", "core", "--yes")
	if r.code != 1 || !strings.Contains(r.stderr, "group web of cluster core cannot be read") {
		t.Errorf("upgrade with a group unreadable:\n%s", r)
	}
	if strings.Contains(r.stderr, "Upgrading") {
		t.Errorf("something was upgraded:\n%s", r)
	}
}
