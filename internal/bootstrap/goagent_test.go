package bootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/spec"
)

var (
	agentOnce sync.Once
	agentPath string
	agentErr  error
)

// nodeAgent builds the node agent (cmd/clusterctl-node) once per run.
func nodeAgent(t *testing.T) string {
	t.Helper()
	agentOnce.Do(func() {
		dir := filepath.Join(lab.Dir, "agent")
		agentPath = filepath.Join(dir, "clusterctl-node")
		module, err := filepath.Abs("../..")
		if err != nil {
			agentErr = err
			return
		}
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-trimpath", "-o", agentPath, "./cmd/clusterctl-node")
		cmd.Dir = module
		cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentErr = fmt.Errorf("building the node agent: %v: %s", err, out)
		}
	})
	if agentErr != nil {
		t.Fatal(agentErr)
	}
	return agentPath
}

// goUserData boots a node with the Go node agent as the loader does once
// it has the agent: the node's settings, the engine's labels, the engine,
// then a manager's boot and housekeeping service, or an agent's service.
func goUserData(agent, role, stack string, settings map[string]string) string {
	var env strings.Builder
	for _, k := range []string{"CLUSTER_NAME", "NODE_GROUP", "NODE_LABELS", "STACK_NAME", "AWS_REGION", "BUCKET_NAME", "LIFECYCLE_QUEUE_URL", "MANAGERS_KEY"} {
		if v, ok := settings[k]; ok {
			fmt.Fprintf(&env, "%s=%s\n", k, v)
		}
	}
	unit := "clusterctl-agent"
	command := "agent"
	if role == "manager" {
		unit, command = "clusterctl-housekeeping", "housekeeping"
	}
	s := `#!/bin/bash
set -euo pipefail
root=${CLUSTERCTL_ROOT:-}
agent=` + agent + `
install -d -m 0755 "$root/etc/clusterctl" "$root/etc/systemd/system"
cat >"$root/etc/clusterctl/node.env" <<'CLUSTERCTL_SETTINGS'
` + env.String() + `CLUSTERCTL_SETTINGS
"$agent" setup
systemctl enable --now docker
`
	if role == "manager" {
		s += `if ! "$agent" boot; then
  cfn-signal --exit-code 1 --reason "clusterctl: control node failed" --stack ` + stack + ` --resource ` + names.ResourceManagerGroup + ` --region ` + region + `
  exit 1
fi
`
	}
	s += `printf '%s\n' '[Unit]' '[Service]' "ExecStart=$agent ` + command + `" 'Restart=always' 'RestartSec=1' >"$root/etc/systemd/system/` + unit + `.service"
systemctl daemon-reload
systemctl enable --now ` + unit + `
`
	if role == "manager" {
		s += `cfn-signal --exit-code 0 --reason "control node ready" --stack ` + stack + ` --resource ` + names.ResourceManagerGroup + ` --region ` + region + "\n"
	}
	return s
}

// bootGoManager boots the manager of instance i with the Go node agent.
func (tc *testCluster) bootGoManager(t *testing.T, i instance, env ...string) *enginetest.Node {
	t.Helper()
	n := labNode(t, "manager-"+strings.TrimPrefix(i.id, "i-")[:6], i, true, env...)
	boot(t, n, goUserData(nodeAgent(t), "manager", tc.name, map[string]string{
		"CLUSTER_NAME": tc.name, "NODE_GROUP": names.GroupControl, "STACK_NAME": tc.name, "AWS_REGION": region,
		"BUCKET_NAME": tc.bucket, "LIFECYCLE_QUEUE_URL": tc.queue,
	}))
	return n
}

// bootGoAgent boots the agent of the group's instance i with the Go node
// agent.
func (g *testGroup) bootGoAgent(t *testing.T, tc *testCluster, i int, env ...string) *enginetest.Node {
	t.Helper()
	n := labNode(t, fmt.Sprintf("%s-%d", g.name, i), g.instances[i], true, env...)
	boot(t, n, goUserData(nodeAgent(t), "agent", g.stack, map[string]string{
		"CLUSTER_NAME": tc.name, "NODE_GROUP": g.name, "NODE_LABELS": "role=worker", "STACK_NAME": g.stack, "AWS_REGION": region,
		"BUCKET_NAME": tc.bucket, "MANAGERS_KEY": tc.join.ManagersKey,
	}))
	return n
}

// The Go node agent on real engines: a manager initialises the swarm and
// publishes its join material and status, an agent joins and signals, and
// a termination notice drains and removes the agent and completes its
// lifecycle action.
func TestGoAgentLifecycle(t *testing.T) {
	nodeAgent(t)
	tc := deployCore(t, "goagent")
	g := tc.deployGroup(t, "g", 1, spec.Labels{"role": "worker"})
	m := tc.bootGoManager(t, tc.control)
	tc.readyManager(t, m)
	a := g.bootGoAgent(t, tc, 0)
	g.readyAgent(t, a)

	// The snapshot shows both, with their instances and labels.
	eventually(t, time.Minute, "the status snapshot shows both nodes Ready", func() (bool, string) {
		snap, err := query.ReadSnapshot(context.Background(), tc.c.s3, tc.bucket, tc.name)
		if err != nil || snap == nil {
			return false, fmt.Sprint(snap, err)
		}
		ready := 0
		for _, n := range snap.Nodes {
			if n.State == "ready" && (n.InstanceID == tc.control.id && n.ManagerStatus == "leader" ||
				n.InstanceID == g.instances[0].id && n.EngineLabels["role"] == "worker" && n.EngineLabels[names.EngineLabelGroup] == "g") {
				ready++
			}
		}
		return ready == 2 && snap.Publisher == tc.control.id, fmt.Sprintf("%+v", snap.Nodes)
	})
	if n := byInstance(swarmNodes(t, m), tc.control.id); n == nil || n.Spec.Availability != "drain" {
		t.Errorf("the manager is not drained: %+v", n)
	}

	token := tc.terminate(t, g.asg, g.instances[0].id, a)
	if act := completed(t, token, 2*time.Minute); act.Result != "CONTINUE" {
		t.Errorf("lifecycle action %+v", act)
	}
	if byInstance(swarmNodes(t, m), g.instances[0].id) != nil {
		t.Error("the terminated agent is still in the swarm")
	}
	eventually(t, time.Minute, "the notice is deleted", func() (bool, string) { return tc.queueEmpty(t) })
}

// A lone manager running the Go agent backs the swarm up (the engine
// paused for the copy); its replacement takes the stale marker over and
// restores it: the service, secret and network survive, the agents rejoin.
// Grown to three managers, the swarm no longer has a backup, and the
// change of manager count is recorded.
func TestGoAgentSingleManagerRestored(t *testing.T) {
	nodeAgent(t)
	tc := deployCore(t, "golone")
	g := tc.deployGroup(t, "g", 2, spec.Labels{"role": "worker"})
	fast := "CLUSTERCTL_BACKUP_INTERVAL=10"
	manager := tc.bootGoManager(t, tc.control, fast)
	tc.readyManager(t, manager)
	for i := range g.instances {
		g.readyAgent(t, g.bootGoAgent(t, tc, i))
	}
	dockerOn(t, manager, "network", "create", "--driver", "overlay", "--attachable", "backend")
	dockerOn(t, manager, "secret", "create", "token", "/etc/hostname")
	dockerOn(t, manager, "service", "create", "--detach", "--name", "web", "--replicas", "2", "--no-resolve-image", "--network", "host",
		"--constraint", "engine.labels.clusterctl.group==g", enginetest.Image, "sleep", "3600")
	created := time.Now()
	eventually(t, 2*time.Minute, "a backup newer than the service", func() (bool, string) {
		var st struct{ LastBackup *time.Time }
		body, err := tc.tryObject(names.StatusKey)
		if err != nil || json.Unmarshal(body, &st) != nil || st.LastBackup == nil {
			return false, fmt.Sprintf("status %s", body)
		}
		return st.LastBackup.After(created.Add(time.Second)), st.LastBackup.String()
	})
	if _, sse := tc.getObject(t, names.ControlKey(names.Backup)); sse != "AES256" {
		t.Errorf("backup encryption %q", sse)
	}

	tc.terminateInstance(t, manager)
	newcomer := tc.replacement(t, []*enginetest.Node{manager})
	n := tc.bootGoManager(t, newcomer, fast)
	tc.readyManager(t, n)
	if out := dockerOn(t, n, "service", "ls", "--format", "{{.Name}}"); out != "web" {
		t.Errorf("services after the restore: %q", out)
	}
	if out := dockerOn(t, n, "secret", "ls", "--format", "{{.Name}}"); out != "token" {
		t.Errorf("secrets after the restore: %q", out)
	}
	if out := dockerOn(t, n, "network", "ls", "--filter", "name=backend", "--format", "{{.Name}}"); out != "backend" {
		t.Errorf("networks after the restore: %q", out)
	}
	eventually(t, 3*time.Minute, "the agents rejoin and run the service", func() (bool, string) {
		nodes, err := trySwarmNodes(n)
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, i := range g.instances {
			for _, sn := range nodes {
				if sn.Description.Engine.Labels[names.EngineLabelInstanceID] == i.id && sn.Status.State == "ready" {
					ready++
				}
			}
		}
		tasks, err := tryServiceTasks(n, "web")
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, c := range runningOn(tasks) {
			running += c
		}
		return ready == 2 && running == 2, fmt.Sprintf("%d agents Ready, %d replicas running", ready, running)
	})

	var more []*enginetest.Node
	for range 2 {
		more = append(more, tc.bootGoManager(t, tc.scaleManagers(t, +1), fast))
	}
	for _, m := range more {
		tc.readyManager(t, m)
	}
	live := append([]*enginetest.Node{n}, more...)
	eventually(t, 2*time.Minute, "three reachable managers", func() (bool, string) {
		q := quorum(t, live)
		return q.managers == 3 && q.reachable == 3 && q.leaders == 1, fmt.Sprintf("%+v", q)
	})
	eventually(t, time.Minute, "no backup with three managers, the count recorded", func() (bool, string) {
		_, err := tc.tryObject(names.ControlKey(names.Backup))
		body, _ := tc.tryObject(names.ControlKey(names.ManagersChanged))
		count, _, _ := strings.Cut(string(body), " ")
		return err != nil && count == "3", fmt.Sprintf("backup: %v; managers changed %q", err, body)
	})
}

// Three managers running the Go agent, started at once, form one swarm:
// exactly one initialises it, the others join; all are Reachable, drained,
// and published.
func TestGoAgentManagersFormOneSwarm(t *testing.T) {
	nodeAgent(t)
	tc := deployManagers(t, "gotrio", 3)
	runs := map[*enginetest.Node]*enginetest.Run{}
	var managers []*enginetest.Node
	for _, i := range tc.managers {
		n := labNode(t, "manager-"+i.id[2:8], i, true)
		runs[n] = boot(t, n, goUserData(nodeAgent(t), "manager", tc.name, map[string]string{
			"CLUSTER_NAME": tc.name, "NODE_GROUP": names.GroupControl, "STACK_NAME": tc.name, "AWS_REGION": region,
			"BUCKET_NAME": tc.bucket, "LIFECYCLE_QUEUE_URL": tc.queue,
		}))
		managers = append(managers, n)
	}
	initialised := 0
	for _, n := range managers {
		tc.readyManager(t, n)
		if _, out := wait(t, runs[n]); strings.Contains(out, "clusterctl: initialised the swarm") {
			initialised++
		}
	}
	if initialised != 1 {
		t.Errorf("%d managers initialised the swarm, want exactly 1", initialised)
	}
	q := quorum(t, managers)
	if q.managers != 3 || q.reachable != 3 || q.leaders != 1 {
		t.Errorf("swarm managers %+v, want 3 reachable, one leader", q)
	}
	for _, sn := range swarmNodes(t, managers[0]) {
		if sn.Spec.Role == "manager" && sn.Spec.Availability != "drain" {
			t.Errorf("manager %s is %s, want drain", sn.ID, sn.Spec.Availability)
		}
	}
	token, sse := tc.getObject(t, names.ControlKey(names.ManagerToken))
	if strings.TrimSpace(string(token)) != dockerOn(t, managers[0], "swarm", "join-token", "-q", "manager") || sse != "AES256" {
		t.Errorf("published manager token %q (encryption %q)", token, sse)
	}
	eventually(t, 3*time.Minute, "the three managers are published", func() (bool, string) {
		b, err := tc.tryObject(names.ManagersKey)
		return err == nil && strings.Count(string(b), ":2377\n") == 3, string(b)
	})
}

// drain-node against managers running the Go agent: the request the CLI
// sends (internal/wire) is the one the agent takes; the drain is seen
// through in the snapshot, with no task left on the node; a request that
// waited on the queue beyond the bound is dropped.
func TestGoAgentDrainNodeCommand(t *testing.T) {
	nodeAgent(t)
	tc := deployCore(t, "godrain")
	g := tc.deployGroup(t, "g", 2, nil)
	control := tc.bootGoManager(t, tc.control, "CLUSTERCTL_REQUEST_MAX_AGE=25")
	tc.readyManager(t, control)
	for i := range g.instances {
		g.readyAgent(t, g.bootGoAgent(t, tc, i))
	}
	leaving, staying := g.instances[0].id, g.instances[1].id
	var leavingNode, stayingNode string
	eventually(t, time.Minute, "both agents in the swarm", func() (bool, string) {
		nodes, err := trySwarmNodes(control)
		if err != nil {
			return false, err.Error()
		}
		l, s := byInstance(nodes, leaving), byInstance(nodes, staying)
		if l == nil || s == nil || l.Status.State != "ready" || s.Status.State != "ready" {
			return false, fmt.Sprintf("%d nodes", len(nodes))
		}
		leavingNode, stayingNode = l.ID, s.ID
		return true, ""
	})
	createService(t, control, "web", 4, "--constraint", "engine.labels.clusterctl.group==g", "--stop-grace-period", "2s")
	eventually(t, time.Minute, "web runs on both agents", func() (bool, string) {
		on := runningOn(serviceTasks(t, control, "web"))
		return on[leavingNode] > 0 && on[stayingNode] > 0 && on[leavingNode]+on[stayingNode] == 4, fmt.Sprint(on)
	})
	eventually(t, time.Minute, "the status snapshot", func() (bool, string) {
		_, err := tc.tryObject(names.StatusKey)
		return err == nil, fmt.Sprint(err)
	})
	svc := tc.service()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d, err := svc.DrainNode(ctx, cluster.DrainOptions{Instance: leaving})
	if err != nil {
		t.Fatalf("drain-node: %v\n%s", err, control.Logs())
	}
	if !d.Changed || d.Availability != "drain" || len(d.Nodes) != 1 || d.Nodes[0].NodeID != leavingNode || d.Nodes[0].RunningTasks != 0 {
		t.Errorf("drain-node: %+v", d)
	}
	if on := runningOn(serviceTasks(t, control, "web")); on[leavingNode] != 0 {
		t.Errorf("web still runs on the drained agent: %v", on)
	}
	if !strings.Contains(control.Logs(), fmt.Sprintf("set node %s of instance %s to drain: request %s", leavingNode, leaving, d.RequestID)) {
		t.Errorf("housekeeping did not log the request:\n%s", control.Logs())
	}
	eventually(t, 30*time.Second, "the request leaves the queue", func() (bool, string) { return tc.queueEmpty(t) })
	d, err = svc.DrainNode(ctx, cluster.DrainOptions{Instance: leaving, Undo: true})
	if err != nil || !d.Changed || d.Nodes[0].Availability != "active" {
		t.Fatalf("drain-node --undo: %+v, %v", d, err)
	}

	stale := requestBody(t, tc.name, staying, "drain")
	if _, err := tc.c.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(tc.queue), MessageBody: aws.String(stale.body), DelaySeconds: 30}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "housekeeping drops the old request", func() (bool, string) {
		return strings.Contains(control.Logs(), "dropping request "+stale.id+" to set instance "+staying+" drain"), "not yet"
	})
	eventually(t, 30*time.Second, "the old request leaves the queue", func() (bool, string) { return tc.queueDrained(t) })
	if n := byInstance(swarmNodes(t, control), staying); n == nil || n.Spec.Availability != "active" {
		t.Errorf("an old request drained %+v", n)
	}
}

// A rolling replacement of three managers running the Go agent, the
// leader first (it demotes itself and hands its notice to the next
// leader), never leaves the swarm without its quorum.
func TestGoAgentRollingReplacementKeepsQuorum(t *testing.T) {
	nodeAgent(t)
	tc := deployManagers(t, "goroll", 3)
	g := tc.deployGroup(t, "g", 1, nil)
	var managers []*enginetest.Node
	for _, i := range tc.managers {
		managers = append(managers, tc.bootGoManager(t, i))
	}
	for _, n := range managers {
		tc.readyManager(t, n)
	}
	g.readyAgent(t, g.bootGoAgent(t, tc, 0))
	createService(t, managers[0], "web", 1, "--constraint", "engine.labels.clusterctl.group==g")
	check := func(step string, live []*enginetest.Node, want int) {
		t.Helper()
		q := quorum(t, live)
		if q.reachable <= q.managers/2 || q.leaders != 1 || q.managers != want {
			t.Fatalf("%s: %+v, want %d managers with a majority reachable and one leader", step, q, want)
		}
	}
	live := slices.Clone(managers)
	check("before", live, 3)
	leader := leaderOf(t, managers)
	order := append([]*enginetest.Node{leader}, slices.DeleteFunc(slices.Clone(managers), func(n *enginetest.Node) bool { return n == leader })...)
	for _, old := range order {
		i := tc.scaleManagers(t, +1)
		n := tc.bootGoManager(t, i)
		tc.readyManager(t, n)
		live = append(live, n)
		check("new manager "+i.id+" in", live, 4)
		token := tc.terminate(t, tc.managerGroup, old.Spec.InstanceID, old)
		if act := completed(t, token, 3*time.Minute); act.Result != "CONTINUE" {
			t.Fatalf("lifecycle action of %s: %+v", old.Spec.Name, act)
		}
		if old == leader && !strings.Contains(old.Logs(), "is terminating: demoted it; the next leader removes it") {
			t.Errorf("the leader did not hand its own termination over:\n%s", old.Logs())
		}
		live = slices.DeleteFunc(live, func(n *enginetest.Node) bool { return n == old })
		if nodes := swarmNodes(t, leaderOf(t, live)); byInstance(nodes, old.Spec.InstanceID) != nil {
			t.Fatalf("%s is still in the swarm when its lifecycle action completes", old.Spec.Name)
		}
		check("old manager "+old.Spec.InstanceID+" out", live, 3)
		old.PowerOff()
		tc.shrinkManagers(t, old.Spec.InstanceID)
		check("old manager "+old.Spec.InstanceID+" terminated", live, 3)
	}
	eventually(t, 3*time.Minute, "the service runs", func() (bool, string) {
		tasks, err := tryServiceTasks(live[0], "web")
		if err != nil {
			return false, err.Error()
		}
		return len(runningOn(tasks)) == 1, fmt.Sprint(runningOn(tasks))
	})
}

// The Go agent with spot instances: a spot node labels and tags itself, an
// interruption warning drains it at once (another cluster's changes
// nothing), its termination removes it, a rebalance recommendation drains.
func TestGoAgentSpotInterruption(t *testing.T) {
	nodeAgent(t)
	tc := deployCore(t, "gospot")
	g := tc.deployGroup(t, "g", 2, spec.Labels{"role": "worker"})
	g.instances[0].lifecycle = "spot"
	control := tc.bootGoManager(t, tc.control)
	tc.readyManager(t, control)
	spot, onDemand := g.bootGoAgent(t, tc, 0), g.bootGoAgent(t, tc, 1)
	for _, n := range []*enginetest.Node{spot, onDemand} {
		g.readyAgent(t, n)
	}
	spotID, onDemandID := g.instances[0].id, g.instances[1].id
	var spotNode, onDemandNode string
	eventually(t, 3*time.Minute, "both agents in the swarm", func() (bool, string) {
		nodes, err := trySwarmNodes(control)
		if err != nil {
			return false, err.Error()
		}
		s, o := byInstance(nodes, spotID), byInstance(nodes, onDemandID)
		if s == nil || o == nil {
			return false, fmt.Sprintf("%d nodes", len(nodes))
		}
		spotNode, onDemandNode = s.ID, o.ID
		return true, ""
	})

	// What each node is, as it says itself: engine labels and instance tags.
	for _, n := range swarmNodes(t, control) {
		want := map[string]string{spotNode: "spot", onDemandNode: "on-demand"}[n.ID]
		if want == "" {
			continue
		}
		l := n.Description.Engine.Labels
		if l[names.EngineLabelLifecycle] != want || l[names.EngineLabelZone] != availabilityZone || l[names.EngineLabelInstanceType] != "m5.large" {
			t.Errorf("node %s has labels %v, want lifecycle %s", n.ID, l, want)
		}
	}
	for id, want := range map[string]string{spotID: "spot", onDemandID: "on-demand"} {
		tags := tc.instanceTags(t, id)
		if tags[names.TagLifecycle] != want || tags[names.TagZone] != availabilityZone || tags[names.TagInstanceType] != "m5.large" {
			t.Errorf("instance %s has tags %v, want lifecycle %s", id, tags, want)
		}
	}

	// web anywhere in the group; api on on-demand nodes only.
	createService(t, control, "web", 4, "--constraint", "engine.labels.clusterctl.group==g")
	createService(t, control, "api", 2, "--constraint", "engine.labels.clusterctl.lifecycle==on-demand")
	eventually(t, 3*time.Minute, "web on both agents, api on the on-demand one", func() (bool, string) {
		web, api := runningOn(serviceTasks(t, control, "web")), runningOn(serviceTasks(t, control, "api"))
		return web[spotNode] > 0 && web[spotNode]+web[onDemandNode] == 4 && api[onDemandNode] == 2 && len(api) == 1,
			fmt.Sprintf("web %v, api %v", web, api)
	})

	// Another cluster's instance: nothing is drained.
	events := watchNodeEvents(t, control)
	tc.putNotice(t, enginetest.InterruptionWarning(account, region, "i-0123456789abcdef0"))
	eventually(t, 3*time.Minute, "the foreign warning leaves the queue", func() (bool, string) { return tc.queueEmpty(t) })
	for _, n := range swarmNodes(t, control) {
		if n.Spec.Role == "worker" && n.Spec.Availability != "active" {
			t.Errorf("node %s is %s after another cluster's warning", n.ID, n.Spec.Availability)
		}
	}

	// EC2 warns: the spot node is drained at once, and every replica runs on
	// the other agent within the two minutes the warning gives.
	at := watchCompletion(t, control, spotID, "web")
	tc.putNotice(t, enginetest.InterruptionWarning(account, region, spotID))
	eventually(t, 3*time.Minute, "web runs on the on-demand agent only", func() (bool, string) {
		web := runningOn(serviceTasks(t, control, "web"))
		return web[onDemandNode] == 4 && web[spotNode] == 0, fmt.Sprint(web)
	})
	if got := events.of(spotNode); !slices.Equal(got, []string{"drain"}) {
		t.Errorf("events of the spot node %v, want a drain only: it stays in the swarm until it terminates", got)
	}
	eventually(t, 2*time.Minute, "the warning leaves the queue", func() (bool, string) { return tc.queueEmpty(t) })

	// Auto Scaling terminates it: the termination notice removes the node
	// and completes the action.
	token := tc.terminate(t, g.asg, spotID, spot)
	if act := completed(t, token, 4*time.Minute); act.Result != "CONTINUE" {
		t.Errorf("lifecycle action %+v", act)
	}
	at.check(t, spotID, spotNode, map[string]int{"web": 4})
	tc.terminateInstance(t, spot)
	if n := byInstance(swarmNodes(t, control), spotID); n != nil {
		t.Errorf("the spot node is still in the swarm: %+v", n)
	}

	// A rebalance recommendation drains at once too.
	tc.putNotice(t, enginetest.RebalanceRecommendation(account, region, onDemandID))
	eventually(t, 3*time.Minute, "the node of a rebalance recommendation is drained", func() (bool, string) {
		n := byInstance(swarmNodes(t, control), onDemandID)
		return n != nil && n.Spec.Availability == "drain", fmt.Sprintf("%+v", n)
	})
}

// startGoCluster is startCluster with the Go agent on every node.
func startGoCluster(t *testing.T, name string, count, agents int) (*testCluster, *testGroup, *enginetest.Node, []*enginetest.Node) {
	t.Helper()
	nodeAgent(t)
	tc := deployCore(t, name)
	g := tc.deployGroup(t, "g", count, spec.Labels{"role": "worker"})
	control := tc.bootGoManager(t, tc.control)
	tc.readyManager(t, control)
	var nodes []*enginetest.Node
	for i := 0; i < agents; i++ {
		nodes = append(nodes, g.bootGoAgent(t, tc, i))
	}
	for _, n := range nodes {
		g.readyAgent(t, n)
	}
	eventually(t, 3*time.Minute, "every node Ready in the swarm", func() (bool, string) {
		nodes, err := trySwarmNodes(control)
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, n := range nodes {
			if n.Status.State == "ready" {
				ready++
			}
		}
		return ready == agents+1, fmt.Sprintf("%d of %d Ready", ready, agents+1)
	})
	return tc, g, control, nodes
}

// TestHousekeepingRestartMidDrain with the Go agent.
func TestGoAgentHousekeepingRestartMidDrain(t *testing.T) {
	tc, g, control, agents := startGoCluster(t, "gorestart", 3, 2)
	// The test image's sleep, as the container's first process, ignores
	// SIGTERM: each task takes its whole grace period to stop, which keeps
	// the drain going.
	createService(t, control, "slow", 2, "--constraint", "engine.labels.clusterctl.group==g", "--stop-grace-period", "20s")
	leavingNode, stayingNode := nodeOf(t, control, g.instances[0].id), nodeOf(t, control, g.instances[1].id)
	eventually(t, 3*time.Minute, "slow runs on both agents", func() (bool, string) {
		on := runningOn(serviceTasks(t, control, "slow"))
		return on[leavingNode] == 1 && on[stayingNode] == 1, fmt.Sprint(on)
	})

	at := watchCompletion(t, control, g.instances[0].id, "slow")
	token := tc.terminate(t, g.asg, g.instances[0].id, agents[0])
	eventually(t, 3*time.Minute, "the node is draining", func() (bool, string) {
		n := byInstance(swarmNodes(t, control), g.instances[0].id)
		return n != nil && n.Spec.Availability == "drain", fmt.Sprintf("%+v", n)
	})
	// Another instance terminates meanwhile: its lifecycle action is kept
	// alive while the first drain goes on, not left to time out.
	waiting := tc.terminate(t, g.asg, g.instances[2].id, nil)
	eventually(t, 2*time.Minute, "the waiting notice is heartbeated", func() (bool, string) {
		act, _ := lab.AWS.Action(waiting)
		return act.Heartbeats > 0, fmt.Sprintf("%+v", act)
	})
	if act, _ := lab.AWS.Action(token); act.Result != "" {
		t.Fatalf("the drain ended before the restart: %+v", act)
	}
	if err := control.RestartUnit(context.Background(), "clusterctl-housekeeping"); err != nil {
		t.Fatal(err)
	}
	if control.UnitRestarts("clusterctl-housekeeping") < 1 {
		t.Fatal("housekeeping was not restarted")
	}
	act := completed(t, token, 4*time.Minute)
	if act.Result != "CONTINUE" {
		t.Errorf("lifecycle action %+v", act)
	}
	at.check(t, g.instances[0].id, leavingNode, map[string]int{"slow": 2})
	eventually(t, 2*time.Minute, "the notice leaves the queue", func() (bool, string) { return tc.queueEmpty(t) })
	if act, _ := lab.AWS.Action(token); act.Completions != 1 {
		t.Errorf("the lifecycle action was completed %d times", act.Completions)
	}
	if act := completed(t, waiting, 2*time.Minute); act.Result != "CONTINUE" || act.Completions != 1 {
		t.Errorf("the waiting lifecycle action: %+v", act)
	}
}

// TestDeadNodeRemoved with the Go agent.
func TestGoAgentDeadNodeRemoved(t *testing.T) {
	tc, g, control, agents := startGoCluster(t, "godead", 2, 2)
	dead, stopped := agents[0], agents[1]
	// Nodes are seen Down sooner (the default is a 5 s heartbeat).
	dockerOn(t, control, "swarm", "update", "--dispatcher-heartbeat", "1s")
	deadNode, stoppedNode := nodeOf(t, control, g.instances[0].id), nodeOf(t, control, g.instances[1].id)

	stopped.StopEngine()
	eventually(t, 3*time.Minute, "the stopped engine's node is Down", func() (bool, string) {
		n := byInstance(swarmNodes(t, control), g.instances[1].id)
		return n != nil && n.Status.State == "down", fmt.Sprintf("%+v", n)
	})
	tc.terminateInstance(t, dead)
	eventually(t, 4*time.Minute, "the terminated instance's node leaves the swarm", func() (bool, string) {
		nodes := swarmNodes(t, control)
		return !slices.ContainsFunc(nodes, func(n swarmNode) bool { return n.ID == deadNode }), fmt.Sprintf("%d nodes", len(nodes))
	})
	n := byInstance(swarmNodes(t, control), g.instances[1].id)
	if n == nil || n.ID != stoppedNode || n.Status.State != "down" {
		t.Errorf("the Down node of a running instance: %+v", n)
	}
}

// TestAgentsRejoinReinitialisedSwarm with the Go agent.
func TestGoAgentsRejoinReinitialisedSwarm(t *testing.T) {
	tc, g, control, agents := startGoCluster(t, "gorejoin", 2, 2)
	before := map[string]string{}
	for _, i := range g.instances {
		before[i.id] = nodeOf(t, control, i.id)
	}
	oldCA := dockerOn(t, control, "swarm", "ca")

	dockerOn(t, control, "swarm", "leave", "--force")
	dockerOn(t, control, "swarm", "init", "--advertise-addr", tc.control.ip)
	newCA := dockerOn(t, control, "swarm", "ca")
	if newCA == oldCA {
		t.Fatal("the new swarm has the old CA")
	}
	eventually(t, 2*time.Minute, "both agents Ready in the new swarm", func() (bool, string) {
		nodes, err := trySwarmNodes(control)
		if err != nil {
			return false, err.Error()
		}
		var state []string
		for _, i := range g.instances {
			n := byInstance(nodes, i.id)
			if n == nil || n.Status.State != "ready" {
				return false, fmt.Sprintf("%d nodes: %v", len(nodes), state)
			}
			state = append(state, n.ID)
		}
		return len(nodes) == 3, fmt.Sprintf("%d nodes", len(nodes))
	})
	for _, i := range g.instances {
		if id := nodeOf(t, control, i.id); id == before[i.id] {
			t.Errorf("instance %s kept node id %s across swarms", i.id, id)
		}
	}
	if ca, _ := tc.getObject(t, names.SwarmPrefix+"/ca.pem"); strings.TrimSpace(string(ca)) != newCA {
		t.Error("the new swarm's CA certificate was not published")
	}
	for _, a := range agents {
		if calls := a.Calls("cfn-signal"); len(calls) != 1 {
			t.Errorf("%s signalled %d times", a.Spec.Name, len(calls))
		}
	}
}
