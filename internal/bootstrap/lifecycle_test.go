package bootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
)

// atCompletion is the swarm as the control node sees it at the moment it
// completes a lifecycle action: the test, playing Auto Scaling, looks
// before it answers.
type atCompletion struct {
	mu    sync.Mutex
	done  bool
	nodes []swarmNode
	tasks map[string][]task
	err   error
}

// watchCompletion records the swarm and the tasks of services when the
// lifecycle action of instance is completed.
func watchCompletion(t *testing.T, control *enginetest.Node, instanceID string, services ...string) *atCompletion {
	t.Helper()
	at := &atCompletion{tasks: map[string][]task{}}
	lab.AWS.OnComplete(instanceID, func(act enginetest.LifecycleAction) {
		at.mu.Lock()
		defer at.mu.Unlock()
		at.done = true
		if at.nodes, at.err = trySwarmNodes(control); at.err != nil {
			return
		}
		for _, s := range services {
			if at.tasks[s], at.err = tryServiceTasks(control, s); at.err != nil {
				return
			}
		}
	})
	t.Cleanup(func() { lab.AWS.OnComplete(instanceID, nil) })
	return at
}

// check asserts that, when the action was completed, the instance's node
// had left the swarm and every replica of each service ran on another
// node.
func (at *atCompletion) check(t *testing.T, instanceID, nodeID string, replicas map[string]int) {
	t.Helper()
	at.mu.Lock()
	defer at.mu.Unlock()
	if !at.done || at.err != nil {
		t.Fatalf("the swarm at completion: seen %v, %v", at.done, at.err)
	}
	if n := byInstance(at.nodes, instanceID); n != nil || slices.ContainsFunc(at.nodes, func(n swarmNode) bool { return n.ID == nodeID }) {
		t.Errorf("node %s of %s still in the swarm when its lifecycle action was completed", nodeID, instanceID)
	}
	for s, want := range replicas {
		on := runningOn(at.tasks[s])
		n := 0
		for id, k := range on {
			n += k
			if id == nodeID {
				t.Errorf("%s: %d replicas still on the terminating node at completion", s, k)
			}
		}
		if n != want {
			t.Errorf("%s: %d replicas running at completion, want %d (%v)", s, n, want, on)
		}
	}
}

// A rolling replacement of a group running a replicated service, played as
// Auto Scaling does it (a new instance, Ready, then an old one terminated):
// every terminating agent is drained before it leaves the swarm, so at the
// moment each lifecycle action is completed (with the notice's token) its
// node is gone and every replica runs elsewhere; afterwards the swarm holds
// no Down node. Notices for an instance that never joined are completed at
// once; notices for a group of another cluster, or older than a lifecycle
// action lasts, are dropped without draining anything.
func TestRollingReplacement(t *testing.T) {
	scenario(t)
	tc, g, control, agents := startCluster(t, "rolling", 5, 2)
	// Replicas that take a while to run again elsewhere (a task is
	// "starting" until its first health check passes): completing a
	// lifecycle action without waiting for them would be seen.
	createService(t, control, "web", 4, "--constraint", "engine.labels.clusterctl.group==g",
		"--health-cmd", "true", "--health-interval", "6s", "--stop-grace-period", "2s")
	eventually(t, 3*time.Minute, "web runs on both agents", func() (bool, string) {
		on := runningOn(serviceTasks(t, control, "web"))
		first, second := on[nodeOf(t, control, g.instances[0].id)], on[nodeOf(t, control, g.instances[1].id)]
		return first > 0 && second > 0 && first+second == 4, fmt.Sprint(on)
	})

	events := watchNodeEvents(t, control)
	for i, old := range agents {
		// The replacement first, as the rolling update keeps capacity.
		fresh := g.bootAgent(t, 2+i)
		g.readyAgent(t, fresh)

		id := g.instances[i].id
		node := nodeOf(t, control, id)
		at := watchCompletion(t, control, id, "web")
		token := tc.terminate(t, g.asg, id, old)
		act := completed(t, token, 4*time.Minute)
		if act.Result != "CONTINUE" || act.Token != token || act.Group != g.asg || act.Hook != names.LifecycleHook(tc.name) || act.Completions != 1 {
			t.Errorf("lifecycle action of %s: %+v", id, act)
		}
		at.check(t, id, node, map[string]int{"web": 4})
		eventually(t, 2*time.Minute, "the node's events", func() (bool, string) {
			got := events.of(node)
			d, r := slices.Index(got, "drain"), slices.Index(got, "remove")
			return d >= 0 && r > d, fmt.Sprintf("events of %s: %v, want a drain, then the removal", node, got)
		})
		eventually(t, 2*time.Minute, "the notice leaves the queue", func() (bool, string) { return tc.queueEmpty(t) })
		// Auto Scaling goes on: the instance is terminated.
		tc.terminateInstance(t, old)
	}
	nodes := swarmNodes(t, control)
	if len(nodes) != 3 {
		t.Errorf("%d swarm nodes after the replacement, want the control node and the two new agents", len(nodes))
	}
	for _, n := range nodes {
		if n.Status.State != "ready" {
			t.Errorf("node %s (%s) is %s after the replacement", n.ID, n.Description.Engine.Labels[names.EngineLabelInstanceID], n.Status.State)
		}
	}
	if on := runningOn(serviceTasks(t, control, "web")); on[nodeOf(t, control, g.instances[2].id)]+on[nodeOf(t, control, g.instances[3].id)] != 4 {
		t.Errorf("web after the replacement: %v", on)
	}

	// An instance that never joined: nothing to drain.
	token := tc.terminate(t, g.asg, g.instances[4].id, nil)
	if act := completed(t, token, 3*time.Minute); act.Result != "CONTINUE" {
		t.Errorf("lifecycle action of an instance that never joined: %+v", act)
	}
	if after := len(swarmNodes(t, control)); after != 3 {
		t.Errorf("%d swarm nodes after a notice for an instance that never joined, want 3", after)
	}
	eventually(t, 2*time.Minute, "the notice leaves the queue", func() (bool, string) { return tc.queueEmpty(t) })

	// A group of another cluster, with a notice naming one of ours: not
	// ours to drain.
	foreign := foreignGroup(t, tc, g)
	token = lab.AWS.BeginLifecycleAction(foreign, names.LifecycleHook(tc.name), g.instances[2].id)
	act, _ := lab.AWS.Action(token)
	tc.putNotice(t, enginetest.TerminationNotice(account, region, act))
	eventually(t, 3*time.Minute, "the foreign notice leaves the queue", func() (bool, string) { return tc.queueEmpty(t) })
	if act, _ := lab.AWS.Action(token); act.Result != "" || act.Completions != 0 {
		t.Errorf("a foreign group's lifecycle action was completed: %+v", act)
	}
	if n := byInstance(swarmNodes(t, control), g.instances[2].id); n == nil || n.Spec.Availability != "active" {
		t.Errorf("the foreign notice touched %+v", n)
	}

	// A notice sent longer ago than a lifecycle action can last: given up,
	// nothing drained.
	token = lab.AWS.BeginLifecycleAction(g.asg, names.LifecycleHook(tc.name), g.instances[3].id)
	act, _ = lab.AWS.Action(token)
	tc.putNotice(t, sentAt(t, enginetest.TerminationNotice(account, region, act), time.Now().Add(-72*time.Hour)))
	eventually(t, 2*time.Minute, "the old notice leaves the queue", func() (bool, string) { return tc.queueEmpty(t) })
	if act, _ := lab.AWS.Action(token); act.Completions != 0 {
		t.Errorf("the lifecycle action of a notice three days old was completed: %+v", act)
	}
	if n := byInstance(swarmNodes(t, control), g.instances[3].id); n == nil || n.Spec.Availability != "active" {
		t.Errorf("a notice three days old touched %+v", n)
	}
}

// foreignGroup creates an Auto Scaling group of another cluster, tagged as
// clusterctl tags its groups, from g's launch template.
func foreignGroup(t *testing.T, tc *testCluster, g *testGroup) string {
	t.Helper()
	name := "other-g-AutoScalingGroup-" + strings.ToUpper(tc.name)
	_, err := tc.c.asg.CreateAutoScalingGroup(context.Background(), &autoscaling.CreateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String(name), MinSize: aws.Int32(0), MaxSize: aws.Int32(1), DesiredCapacity: aws.Int32(0),
		LaunchTemplate:    &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(stackResources(t, tc.c, g.stack)["LaunchTemplate"])},
		VPCZoneIdentifier: aws.String(subnetID),
		Tags:              []astypes.Tag{{Key: aws.String(names.TagCluster), Value: aws.String("other"), PropagateAtLaunch: aws.Bool(true)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// Housekeeping restarted while it waits for a drain picks the notice up
// where it was: the node leaves after its replicas moved, and the
// lifecycle action is completed once. A notice that arrives during the
// drain is received and heartbeated meanwhile, then handled.
func TestHousekeepingRestartMidDrain(t *testing.T) {
	scenario(t)
	tc, g, control, agents := startCluster(t, "restart", 3, 2)
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

// A node that is Down and whose instance is terminated is removed from the
// swarm after the grace period; a Down node whose instance still runs (a
// stopped engine, a network partition) is not.
func TestDeadNodeRemoved(t *testing.T) {
	scenario(t)
	tc, g, control, agents := startCluster(t, "dead", 2, 2)
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

// sentAt sets the time an event was sent.
func sentAt(t *testing.T, event string, at time.Time) string {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal([]byte(event), &ev); err != nil {
		t.Fatal(err)
	}
	ev["time"] = at.UTC().Format(time.RFC3339)
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
