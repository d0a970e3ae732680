package bootstrap

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// autoscaleGoal is what the autoscaler's reaction is measured against.
const autoscaleGoal = 30 * time.Second

func (tc *testCluster) desired(t *testing.T, asg string) int {
	t.Helper()
	return int(aws.ToInt32(autoScalingGroup(t, tc.c, asg).DesiredCapacity))
}

// The leader's autoscaler on real engines. A group autoscaled between 1
// and 2 r5.xlarge nodes (32 GiB as EC2 describes the type; the lab's
// engines offer the host's memory, under 28 GiB) runs one task of a
// service reserving 14 GiB a task; the second stays pending, the leader
// raises the desired capacity on moto, the test (playing Auto Scaling)
// boots the new instance as a node, and the task runs there. Scaled to
// zero, one idle node is drained and terminated through its group with the
// capacity decremented after the group's scaleDownAfter (20 s); the test
// plays the lifecycle hook, which finds it drained. A group of the same
// type without autoscaling never changes.
func TestAutoscale(t *testing.T) {
	scenario(t)

	tc := deployCore(t, "goscale")
	one, two := 1, 2
	g := tc.deployGroupOf(t, spec.Group{Name: "big", InstanceType: spec.InstanceTypes{"r5.xlarge"}, Min: &one, Max: &two,
		Labels: spec.Labels{"role": "worker"}, Autoscale: spec.Autoscale{Enabled: true, ScaleDownAfter: spec.Duration(20 * time.Second)}})
	fixed := tc.deployGroupOf(t, spec.Group{Name: "fixed", InstanceType: spec.InstanceTypes{"r5.xlarge"}, Count: &one, Labels: spec.Labels{"role": "worker"}})
	if len(g.instances) != 1 || tc.desired(t, g.asg) != 1 {
		t.Fatalf("the autoscaled group starts with %d instances, desired %d; want its min, 1", len(g.instances), tc.desired(t, g.asg))
	}
	// The housekeeping's wait on the queue as on a node (the lab's is
	// shorter): the autoscaler's delay is measured as it is there.
	control := tc.bootManager(t, tc.control, "CLUSTERCTL_POLL_WAIT=10", "CLUSTERCTL_STATUS_INTERVAL=15")
	tc.readyManager(t, control)
	first := g.bootAgent(t, 0)
	g.readyAgent(t, first)
	eventually(t, 2*time.Minute, "the first node Ready", func() (bool, string) {
		n := byInstance(swarmNodes(t, control), g.instances[0].id)
		return n != nil && n.Status.State == "ready", fmt.Sprintf("%+v", n)
	})

	createService(t, control, "api", 2, "--reserve-memory", "14g", "--constraint", "node.role==worker")
	var pendingTask string
	eventually(t, time.Minute, "one task of api running, one pending", func() (bool, string) {
		tasks := serviceTasks(t, control, "api")
		running, pending := 0, 0
		for _, tk := range tasks {
			switch {
			case tk.State == "running" && tk.DesiredState == "running":
				running++
			case tk.State == "pending" && tk.DesiredState == "running":
				pending++
				pendingTask = tk.ID
			}
		}
		return running == 1 && pending == 1, fmt.Sprintf("%+v", tasks)
	})
	eventually(t, 2*time.Minute, "the leader raises the desired capacity to 2", func() (bool, string) {
		d := tc.desired(t, g.asg)
		return d == 2, fmt.Sprintf("desired %d", d)
	})
	// How long the autoscaler took: from the task's creation (pending from
	// then on) to the call, by the host's clock (the lab's engines and
	// endpoint share it). Logged, not asserted: see the report of the
	// housekeeping timings in docs/design.md, Autoscaling.
	created, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(dockerOn(t, control, "inspect", "--type", "task", "--format", "{{.CreatedAt.Format \"2006-01-02T15:04:05.999999999Z07:00\"}}", pendingTask)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range lab.AWS.Calls() {
		if c.Service == "autoscaling" && c.Action == "SetDesiredCapacity" && c.From == control.Spec.IP {
			d := c.Time.Sub(created)
			t.Logf("from the task becoming pending to the desired-capacity call: %s (%.2f of the goal, %s: two housekeeping rounds)",
				d.Round(100*time.Millisecond), d.Seconds()/autoscaleGoal.Seconds(), autoscaleGoal)
		}
	}

	// Auto Scaling (moto) launched the instance; the test boots it.
	var added []instance
	for _, i := range groupInstances(t, tc.c, g.asg) {
		if i.id != g.instances[0].id {
			added = append(added, i)
		}
	}
	if len(added) != 1 {
		t.Fatalf("instances added: %+v", added)
	}
	g.instances = append(g.instances, added[0])
	second := g.bootAgent(t, 1)
	g.readyAgent(t, second)
	eventually(t, 3*time.Minute, "api runs on both nodes", func() (bool, string) {
		nodes := swarmNodes(t, control)
		a, b := byInstance(nodes, g.instances[0].id), byInstance(nodes, g.instances[1].id)
		if a == nil || b == nil {
			return false, "a node is not in the swarm"
		}
		on := runningOn(serviceTasks(t, control, "api"))
		return on[a.ID] == 1 && on[b.ID] == 1, fmt.Sprint(on)
	})
	eventually(t, time.Minute, "the decision in the status snapshot", func() (bool, string) {
		snap, err := query.ReadSnapshot(context.Background(), tc.c.s3, tc.bucket, tc.name)
		if err != nil || snap == nil {
			return false, fmt.Sprint(err)
		}
		for _, d := range snap.Autoscale {
			if d.String() == "group big: desired 1 → 2: 1 task of api pending: insufficient memory" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", snap.Autoscale)
	})

	// Idle: one node goes, drained first, the capacity decremented.
	scaledDown := time.Now()
	dockerOn(t, control, "service", "scale", "--detach", "api=0")
	eventually(t, 2*time.Minute, "an idle node terminated through its group", func() (bool, string) {
		n := lab.AWS.CountCalls(control.Spec.IP, "autoscaling", "TerminateInstanceInAutoScalingGroup")
		return n == 1 && tc.desired(t, g.asg) == 1, fmt.Sprintf("%d calls, desired %d", n, tc.desired(t, g.asg))
	})
	if d := time.Since(scaledDown); d < 20*time.Second {
		t.Errorf("a node terminated %s after the service was scaled to 0, before the group's scaleDownAfter", d)
	}
	left := groupInstances(t, tc.c, g.asg)
	if len(left) != 1 {
		t.Fatalf("the group has %d instances, want 1", len(left))
	}
	gone, goneNode := g.instances[0].id, first
	if left[0].id == gone {
		gone, goneNode = g.instances[1].id, second
	}
	if n := byInstance(swarmNodes(t, control), gone); n == nil || n.Spec.Availability != "drain" {
		t.Errorf("the terminated node was not drained first: %+v", n)
	}
	// Auto Scaling's lifecycle hook: housekeeping finds the node drained,
	// removes it and lets the termination go on.
	token := tc.terminate(t, g.asg, gone, goneNode)
	if act := completed(t, token, 2*time.Minute); act.Result != "CONTINUE" {
		t.Errorf("lifecycle action %+v", act)
	}
	tc.terminateInstance(t, goneNode)
	eventually(t, time.Minute, "the node is out of the swarm", func() (bool, string) {
		return byInstance(swarmNodes(t, control), gone) == nil, "still there"
	})
	// Never below the min, one scale-in, and the group without
	// autoscaling never changed.
	time.Sleep(30 * time.Second)
	if n := lab.AWS.CountCalls(control.Spec.IP, "autoscaling", "TerminateInstanceInAutoScalingGroup"); n != 1 || tc.desired(t, g.asg) != 1 {
		t.Errorf("after the scale-in: %d terminations, desired %d", n, tc.desired(t, g.asg))
	}
	if n := lab.AWS.CountCalls(control.Spec.IP, "autoscaling", "SetDesiredCapacity"); n != 1 || tc.desired(t, fixed.asg) != 1 {
		t.Errorf("%d desired-capacity calls (want the one of big), the fixed group's desired %d", n, tc.desired(t, fixed.asg))
	}
	if logs := control.Logs(); !strings.Contains(logs, "group big: desired 1 → 2: 1 task of api pending: insufficient memory") ||
		!strings.Contains(logs, "group big: desired 2 → 1: node ") {
		t.Errorf("the leader's log lacks its decisions:\n%s", lastLines(logs, 40))
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
