package bootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// Three managers started at once form one swarm: exactly one initialises
// it (the one that wrote the initialisation marker), the others join as
// managers; each signals once it is a Reachable manager. The manager token
// is published where only the managers' role may read it.
func TestManagersFormOneSwarm(t *testing.T) {
	scenario(t)
	tc := deployManagers(t, "trio", 3)
	runs := map[*enginetest.Node]*enginetest.Run{}
	var managers []*enginetest.Node
	for _, i := range tc.managers {
		n := labNode(t, "manager-"+i.id[2:8], i, true)
		runs[n] = boot(t, n, tc.controlUserData)
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
	// Managers run no workloads.
	for _, sn := range swarmNodes(t, managers[0]) {
		if sn.Spec.Role == "manager" && sn.Spec.Availability != "drain" {
			t.Errorf("manager %s is %s, want drain", sn.ID, sn.Spec.Availability)
		}
	}
	for _, n := range managers[1:] {
		if id := dockerOn(t, n, "info", "--format", "{{.Swarm.Cluster.ID}}"); id != dockerOn(t, managers[0], "info", "--format", "{{.Swarm.Cluster.ID}}") {
			t.Errorf("%s is in swarm %s, not the first manager's", n.Spec.Name, id)
		}
	}
	marker, _ := tc.getObject(t, names.ControlKey(names.InitMarker))
	var m struct{ InstanceID string }
	if err := json.Unmarshal(marker, &m); err != nil || !slices.ContainsFunc(tc.managers, func(i instance) bool { return i.id == m.InstanceID }) {
		t.Errorf("initialisation marker %s: %v", marker, err)
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

// A manager killed, its instance terminated, is replaced: the Auto Scaling
// group launches another, which joins as a manager; the dead one is demoted
// and removed; a replicated service on the agents runs on throughout.
func TestManagerLost(t *testing.T) {
	scenario(t)
	tc := deployManagers(t, "lose", 3)
	g := tc.deployGroup(t, "g", 2, spec.Labels{"role": "worker"})
	managers := tc.bootManagers(t)
	for i := range g.instances {
		g.readyAgent(t, g.bootAgent(t, i))
	}
	createService(t, managers[0], "web", 2, "--constraint", "engine.labels.clusterctl.group==g")
	running := func(m *enginetest.Node) func() (bool, string) {
		return func() (bool, string) {
			tasks, err := tryServiceTasks(m, "web")
			if err != nil {
				return false, err.Error()
			}
			n := 0
			for _, c := range runningOn(tasks) {
				n += c
			}
			return n == 2, fmt.Sprintf("%d of 2 replicas running", n)
		}
	}
	eventually(t, 2*time.Minute, "the service runs", running(managers[0]))

	// The leader dies: the harshest case.
	lost := leaderOf(t, managers)
	alive := slices.DeleteFunc(slices.Clone(managers), func(n *enginetest.Node) bool { return n == lost })
	tc.terminateInstance(t, lost)
	q := quorum(t, alive)
	if q.managers != 3 || q.reachable != 2 {
		t.Errorf("after losing one: %+v, want 2 of 3 reachable", q)
	}
	if ok, detail := running(alive[0])(); !ok {
		t.Errorf("the service after losing a manager: %s", detail)
	}

	// The Auto Scaling group replaces it (moto launches another instance).
	newcomer := tc.replacement(t, managers)
	n := tc.bootManager(t, newcomer)
	tc.readyManager(t, n)
	alive = append(alive, n)
	eventually(t, 2*time.Minute, "the dead manager is demoted and removed", func() (bool, string) {
		nodes, err := trySwarmNodes(alive[0])
		if err != nil {
			return false, err.Error()
		}
		if byInstance(nodes, lost.Spec.InstanceID) != nil {
			return false, "still in the swarm"
		}
		return true, ""
	})
	if q := quorum(t, alive); q.managers != 3 || q.reachable != 3 || q.leaders != 1 {
		t.Errorf("after the replacement: %+v, want 3 reachable managers", q)
	}
	if nm := byInstance(swarmNodes(t, alive[0]), newcomer.id); nm == nil || nm.Spec.Role != "manager" {
		t.Errorf("the newcomer is %+v, want a manager", nm)
	}
	if ok, detail := running(alive[0])(); !ok {
		t.Errorf("the service after the replacement: %s", detail)
	}
}

// A rolling replacement of all three managers, played in the order the
// Auto Scaling group's rolling update goes (a new manager, its signal once
// it is Reachable, then an old one through the termination hook), never
// leaves the swarm without its quorum: checked between every step.
func TestRollingReplacementKeepsQuorum(t *testing.T) {
	scenario(t)
	tc := deployManagers(t, "roll", 3)
	g := tc.deployGroup(t, "g", 1, nil)
	managers := tc.bootManagers(t)
	g.readyAgent(t, g.bootAgent(t, 0))
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
	// The group picks which manager goes first by its own rules, blind to
	// the swarm's leadership: the leader first, the hardest case (it hands
	// its notice over to the next leader).
	leader := leaderOf(t, managers)
	order := append([]*enginetest.Node{leader}, slices.DeleteFunc(slices.Clone(managers), func(n *enginetest.Node) bool { return n == leader })...)
	for _, old := range order {
		// MaxBatchSize 1, MinInstancesInService = managers: one more first.
		i := tc.scaleManagers(t, +1)
		n := tc.bootManager(t, i)
		tc.readyManager(t, n) // the signal CloudFormation waits for
		if r := byInstance(swarmNodes(t, n), i.id); r == nil || r.ManagerStatus == nil || r.ManagerStatus.Reachability != "reachable" {
			t.Fatalf("%s signalled before it was a Reachable manager: %+v", n.Spec.Name, r)
		}
		live = append(live, n)
		check("new manager "+i.id+" in", live, 4)

		// Then the old one: through the hook, demoted and removed first.
		token := tc.terminate(t, tc.managerGroup, old.Spec.InstanceID, old)
		act := completed(t, token, 3*time.Minute)
		if act.Result != "CONTINUE" {
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
		tc.shrink(t, old.Spec.InstanceID)
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

// A single manager backs the swarm state up; its replacement, finding the
// initialisation marker of a terminated instance and no manager that
// answers, takes over and restores the backup: services, secrets and
// networks survive, and the agents rejoin on their own.
func TestSingleManagerRestored(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "lone")
	g := tc.deployGroup(t, "g", 2, spec.Labels{"role": "worker"})
	fast := "CLUSTERCTL_BACKUP_INTERVAL=10"
	manager := tc.bootControl(t, fast)
	for i := range g.instances {
		g.readyAgent(t, g.bootAgent(t, i))
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
	if keys := tc.backups(t); len(keys) == 0 {
		t.Error("no backup under " + names.ControlKey(names.BackupsPrefix))
	} else if _, sse := tc.getObject(t, keys[len(keys)-1]); sse != "AES256" {
		t.Errorf("backup encryption %q", sse)
	}

	tc.terminateInstance(t, manager)
	newcomer := tc.replacement(t, []*enginetest.Node{manager})
	n := tc.bootManager(t, newcomer, fast)
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

	// The restored swarm takes managers again (1 → 3).
	var more []*enginetest.Node
	for range 2 {
		more = append(more, tc.bootManager(t, tc.scaleManagers(t, +1), fast))
	}
	for _, m := range more {
		tc.readyManager(t, m)
	}
	live := append([]*enginetest.Node{n}, more...)
	eventually(t, 2*time.Minute, "three reachable managers", func() (bool, string) {
		q := quorum(t, live)
		return q.managers == 3 && q.reachable == 3 && q.leaders == 1, fmt.Sprintf("%+v", q)
	})
}

// swarmQuorum is what a swarm's managers say of themselves.
type swarmQuorum struct{ managers, reachable, leaders int }

// quorum asks the first of the live managers that answers, and fails the
// test when none can list the swarm's nodes (no quorum) for two minutes
// (an election, when the leader was lost or demoted itself, takes seconds).
func quorum(t *testing.T, live []*enginetest.Node) swarmQuorum {
	t.Helper()
	var last error
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		if q, err := tryQuorum(live); err == nil {
			return q
		} else {
			last = err
		}
	}
	t.Fatalf("no manager lists the swarm (quorum lost?): %v", last)
	return swarmQuorum{}
}

func tryQuorum(live []*enginetest.Node) (swarmQuorum, error) {
	var last error
	for _, m := range live {
		nodes, err := trySwarmNodes(m)
		if err != nil {
			last = err
			continue
		}
		var q swarmQuorum
		for _, n := range nodes {
			if n.Spec.Role != "manager" || n.ManagerStatus == nil {
				continue
			}
			q.managers++
			if n.ManagerStatus.Reachability == "reachable" {
				q.reachable++
			}
			if n.ManagerStatus.Leader {
				q.leaders++
			}
		}
		return q, nil
	}
	return swarmQuorum{}, last
}

// leaderOf returns the live manager that leads the swarm.
func leaderOf(t *testing.T, live []*enginetest.Node) *enginetest.Node {
	t.Helper()
	var leader *enginetest.Node
	eventually(t, 3*time.Minute, "a leader", func() (bool, string) {
		for _, m := range live {
			if out, err := m.Docker(context.Background(), "node", "inspect", "self", "--format", "{{.ManagerStatus.Leader}}"); err == nil && strings.TrimSpace(out) == "true" {
				leader = m
				return true, ""
			}
		}
		return false, "none of the live managers leads"
	})
	return leader
}

// bootManagers boots every manager of the cluster at once and waits until
// each signalled.
func (tc *testCluster) bootManagers(t *testing.T, env ...string) []*enginetest.Node {
	t.Helper()
	var out []*enginetest.Node
	for _, i := range tc.managers {
		out = append(out, tc.bootManager(t, i, env...))
	}
	for _, n := range out {
		tc.readyManager(t, n)
	}
	return out
}

// replacement waits for the instance the managers' Auto Scaling group
// launched in place of a terminated one (moto replaces it) and returns it.
func (tc *testCluster) replacement(t *testing.T, known []*enginetest.Node) instance {
	t.Helper()
	var found instance
	eventually(t, 3*time.Minute, "the Auto Scaling group launches a replacement", func() (bool, string) {
		for _, i := range groupInstances(t, tc.c, tc.managerGroup) {
			if !slices.ContainsFunc(known, func(n *enginetest.Node) bool { return n.Spec.InstanceID == i.id }) {
				found = i
				return true, ""
			}
		}
		return false, "no new instance"
	})
	return found
}

// scaleManagers plays the rolling update adding a manager: the group's
// desired capacity grows by one; it returns the new instance.
func (tc *testCluster) scaleManagers(t *testing.T, by int32) instance {
	t.Helper()
	return tc.scale(t, tc.managerGroup, by)
}

// scale plays a rolling update adding an instance to the Auto Scaling
// group asg: its desired capacity grows by by; it returns an instance
// launched.
func (tc *testCluster) scale(t *testing.T, asg string, by int32) instance {
	t.Helper()
	ctx := context.Background()
	before := groupInstances(t, tc.c, asg)
	if _, err := tc.c.asg.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{
		AutoScalingGroupName: aws.String(asg), DesiredCapacity: aws.Int32(int32(len(before)) + by),
	}); err != nil {
		t.Fatal(err)
	}
	for _, i := range groupInstances(t, tc.c, asg) {
		if !slices.ContainsFunc(before, func(b instance) bool { return b.id == i.id }) {
			return i
		}
	}
	t.Fatal("no instance launched")
	return instance{}
}

// shrink plays a rolling update terminating an instance whose
// lifecycle action completed: out of the group, its desired capacity back
// down.
func (tc *testCluster) shrink(t *testing.T, id string) {
	t.Helper()
	_, err := tc.c.asg.TerminateInstanceInAutoScalingGroup(context.Background(), &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId: aws.String(id), ShouldDecrementDesiredCapacity: aws.Bool(true),
	})
	if err != nil && !strings.Contains(err.Error(), "not found") && !strings.Contains(err.Error(), "InvalidInstanceID") {
		t.Fatal(err)
	}
}

// tryObject reads an object of the cluster bucket.
func (tc *testCluster) tryObject(key string) ([]byte, error) {
	out, err := tc.c.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// Housekeeping killed outright while a backup has the engine paused
// leaves it paused; the next start of housekeeping lets it run again.
func TestPausedEngineResumedByHousekeeping(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "paused")
	manager := tc.bootControl(t)
	pid, err := os.ReadFile(manager.Root("var/run/docker.pid"))
	if err != nil {
		t.Fatal(err)
	}
	engine, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(engine, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(engine, syscall.SIGCONT) })
	eventually(t, time.Minute, "the engine is stopped", func() (bool, string) {
		state, err := procState(engine)
		return err == nil && state == "T", fmt.Sprintf("state %q, %v", state, err)
	})
	if err := manager.RestartUnit(context.Background(), "clusterctl-housekeeping"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "the engine runs again", func() (bool, string) {
		state, err := procState(engine)
		return err == nil && state != "T", fmt.Sprintf("state %q, %v", state, err)
	})
	if out := dockerOn(t, manager, "info", "--format", "{{.Swarm.LocalNodeState}}"); out != "active" {
		t.Errorf("swarm %q after the engine was resumed", out)
	}
}

// procState is a process's state letter from /proc (T: stopped).
func procState(pid int) (string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	_, rest, ok := strings.Cut(string(stat), ") ")
	if !ok || rest == "" {
		return "", fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	return rest[:1], nil
}

// backups are the keys of the cluster's backups, oldest first.
func (tc *testCluster) backups(t *testing.T) []string {
	t.Helper()
	out, err := tc.c.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(tc.bucket), Prefix: aws.String(names.ControlKey(names.BackupsPrefix) + "/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	slices.Sort(keys)
	return keys
}

// Three managers are backed up by a follower, never the leader; every
// manager lost at once (engines killed, instances terminated), the first
// replacement restores the newest backup: the service, secret, config and
// overlay network are back with the same ids, the agent rejoins on its
// own (the swarm's CA is the same), and the replacements that follow join the restored swarm
// as managers.
func TestEveryManagerLostRestored(t *testing.T) {
	scenario(t)
	tc := deployManagers(t, "total", 3)
	g := tc.deployGroup(t, "g", 1, spec.Labels{"role": "worker"})
	fast := []string{"CLUSTERCTL_BACKUP_INTERVAL=20", "CLUSTERCTL_BACKUP_SPACING=5", "CLUSTERCTL_BACKUP_ORDER_WAIT=30"}
	managers := tc.bootManagers(t, fast...)
	agent := g.bootAgent(t, 0)
	g.readyAgent(t, agent)
	swarmObjects(t, managers[0])
	before := objectIDs(t, managers[0])
	created := time.Now()
	leader := leaderOf(t, managers)
	var newest string
	eventually(t, 3*time.Minute, "a follower's backup newer than the objects", func() (bool, string) {
		keys := tc.backups(t)
		if len(keys) == 0 {
			return false, "no backup"
		}
		newest = keys[len(keys)-1]
		out, err := tc.c.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(newest)})
		if err != nil {
			return false, err.Error()
		}
		taken, _ := strconv.ParseInt(out.Metadata["taken"], 10, 64)
		by := out.Metadata["taken-by"]
		return taken > created.Unix()+1 && out.Metadata["managers"] == "3" && by != "" && by != leader.Spec.InstanceID,
			fmt.Sprintf("%s: %v (leader %s)", newest, out.Metadata, leader.Spec.InstanceID)
	})
	if !strings.Contains(leader.Logs(), "ordered it of follower") {
		t.Errorf("the leader did not order the backup:\n%s", leader.Logs())
	}
	// (It may have backed up while it was the only manager, before the
	// others joined.)
	if regexp.MustCompile(`backed the swarm state up to .* [23] managers\)`).MatchString(leader.Logs()) {
		t.Errorf("the leader of several managers backed up itself (paused):\n%s", leader.Logs())
	}
	eventually(t, time.Minute, "the snapshot's last backup", func() (bool, string) {
		var st struct{ LastBackup *time.Time }
		body, err := tc.tryObject(names.StatusKey)
		if err != nil || json.Unmarshal(body, &st) != nil || st.LastBackup == nil {
			return false, fmt.Sprintf("status %s", body)
		}
		return st.LastBackup.Unix() > created.Unix()+1, st.LastBackup.String()
	})

	// Every manager lost at once.
	known := slices.Clone(managers)
	for _, n := range managers {
		tc.terminateInstance(t, n)
	}
	first := tc.bootManager(t, tc.replacement(t, known), fast...)
	tc.readyManager(t, first)
	if !strings.Contains(first.Logs(), "restored the swarm from its backup "+names.ControlKey(names.BackupsPrefix)) {
		t.Errorf("the first replacement did not restore a backup:\n%s", first.Logs())
	}
	if after := objectIDs(t, first); after != before {
		t.Errorf("after the restore:\n%s\nwant\n%s", after, before)
	}
	eventually(t, 3*time.Minute, "the agent rejoins on its own and runs the service", func() (bool, string) {
		tasks, err := tryServiceTasks(first, "web")
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, c := range runningOn(tasks) {
			running += c
		}
		nodes, err := trySwarmNodes(first)
		if err != nil {
			return false, err.Error()
		}
		sn := byInstance(nodes, agent.Spec.InstanceID)
		return sn != nil && sn.Status.State == "ready" && running == 1, fmt.Sprintf("agent %+v, %d running", sn, running)
	})
	// The other replacements join it as managers.
	live := []*enginetest.Node{first}
	for len(live) < 3 {
		n := tc.bootManager(t, tc.replacement(t, append(slices.Clone(known), live...)), fast...)
		tc.readyManager(t, n)
		live = append(live, n)
	}
	eventually(t, 2*time.Minute, "three reachable managers", func() (bool, string) {
		q := quorum(t, live)
		return q.managers == 3 && q.reachable == 3 && q.leaders == 1, fmt.Sprintf("%+v", q)
	})
}

// objectIDs are the ids and names of the swarm's service web, secrets,
// configs and network backend, as the manager n lists them.
func objectIDs(t *testing.T, n *enginetest.Node) string {
	t.Helper()
	return strings.Join([]string{
		dockerOn(t, n, "service", "ls", "--filter", "name=web", "--format", "{{.ID}} {{.Name}}"),
		dockerOn(t, n, "secret", "ls", "--format", "{{.ID}} {{.Name}}"),
		dockerOn(t, n, "config", "ls", "--format", "{{.ID}} {{.Name}}"),
		dockerOn(t, n, "network", "ls", "--filter", "name=backend", "--format", "{{.ID}} {{.Name}}"),
	}, "\n")
}

// swarmObjects creates a service on the agents of group g, a secret, a
// config and an overlay network.
func swarmObjects(t *testing.T, m *enginetest.Node) {
	t.Helper()
	dockerOn(t, m, "network", "create", "--driver", "overlay", "--attachable", "backend")
	dockerOn(t, m, "secret", "create", "token", "/etc/hostname")
	dockerOn(t, m, "config", "create", "settings", "/etc/hostname")
	createService(t, m, "web", 1, "--constraint", "engine.labels.clusterctl.group==g")
}

// Two managers of three lost at once (engines killed, instances
// terminated): the survivor, without a quorum, waits out the grace, finds
// both proven gone by EC2, and forces a new cluster from its state; the
// service, secret, config and network are intact, the Auto Scaling
// group's replacements join it as managers, and there is one swarm.
func TestQuorumLossHealed(t *testing.T) {
	scenario(t)
	tc := deployManagers(t, "heal", 3)
	g := tc.deployGroup(t, "g", 1, spec.Labels{"role": "worker"})
	fast := []string{"CLUSTERCTL_QUORUM_GRACE=20"}
	managers := tc.bootManagers(t, fast...)
	agent := g.bootAgent(t, 0)
	g.readyAgent(t, agent)
	swarmObjects(t, managers[0])
	before := objectIDs(t, managers[0])
	swarmID := dockerOn(t, managers[0], "info", "--format", "{{.Swarm.Cluster.ID}}")
	// The leader and one more lost: the survivor is a follower.
	leader := leaderOf(t, managers)
	var survivor *enginetest.Node
	lost := []*enginetest.Node{leader}
	for _, m := range managers {
		if m == leader {
			continue
		}
		if survivor == nil {
			survivor = m
		} else {
			lost = append(lost, m)
		}
	}
	lostAt := time.Now()
	for _, m := range lost {
		tc.terminateInstance(t, m)
	}
	eventually(t, 5*time.Minute, "the survivor leads a working swarm", func() (bool, string) {
		out, err := survivor.Docker(context.Background(), "node", "ls", "--format", "{{.Hostname}} {{.ManagerStatus}}")
		return err == nil && strings.Contains(out, "Leader"), fmt.Sprint(out, err)
	})
	t.Logf("measured: the survivor led again %s after the two managers were lost", time.Since(lostAt).Round(time.Second))
	if !strings.Contains(survivor.Logs(), "every lost manager is proven gone") || !strings.Contains(survivor.Logs(), "forced a new cluster") {
		t.Errorf("the survivor did not say why it forced a new cluster:\n%s", survivor.Logs())
	}
	if after := objectIDs(t, survivor); after != before {
		t.Errorf("after the recovery:\n%s\nwant\n%s", after, before)
	}
	live := []*enginetest.Node{survivor}
	known := slices.Clone(managers)
	for len(live) < 3 {
		n := tc.bootManager(t, tc.replacement(t, append(slices.Clone(known), live...)), fast...)
		tc.readyManager(t, n)
		live = append(live, n)
	}
	eventually(t, 3*time.Minute, "three reachable managers", func() (bool, string) {
		q := quorum(t, live)
		return q.managers == 3 && q.reachable == 3 && q.leaders == 1, fmt.Sprintf("%+v", q)
	})
	t.Logf("measured: three reachable managers again %s after the loss", time.Since(lostAt).Round(time.Second))
	for _, n := range live {
		if id := dockerOn(t, n, "info", "--format", "{{.Swarm.Cluster.ID}}"); id != swarmID {
			t.Errorf("%s is in swarm %q, not %q", n.Spec.Name, id, swarmID)
		}
	}
	// The agent is a node of that swarm (a worker's engine does not say
	// its swarm's id): Ready in the survivor's list under its own id.
	eventually(t, 3*time.Minute, "the agent Ready in the recovered swarm", func() (bool, string) {
		id := dockerOn(t, agent, "info", "--format", "{{.Swarm.NodeID}}")
		out, err := survivor.Docker(context.Background(), "node", "inspect", id, "--format", "{{.Status.State}}")
		return err == nil && strings.TrimSpace(out) == "ready", fmt.Sprint(id, out, err)
	})
	eventually(t, 3*time.Minute, "the service runs", func() (bool, string) {
		tasks, err := tryServiceTasks(survivor, "web")
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, c := range runningOn(tasks) {
			n += c
		}
		return n == 1, fmt.Sprintf("%d running", n)
	})
}

// Two managers of three unreachable but running (their engines stopped,
// their instances running: a partition to EC2's eyes): the survivor
// forces nothing, and the status snapshot says why the swarm is stuck.
func TestQuorumLossPartitionForcesNothing(t *testing.T) {
	scenario(t)
	tc := deployManagers(t, "split", 3)
	fast := []string{"CLUSTERCTL_QUORUM_GRACE=20"}
	managers := tc.bootManagers(t, fast...)
	survivor := managers[0]
	for _, m := range managers[1:] {
		m.StopEngine()
	}
	eventually(t, 3*time.Minute, "the snapshot says why the swarm is stuck", func() (bool, string) {
		var st struct {
			QuorumLoss *struct{ Decision, Reason string }
		}
		body, err := tc.tryObject(names.StatusKey)
		if err != nil || json.Unmarshal(body, &st) != nil || st.QuorumLoss == nil {
			return false, fmt.Sprintf("status %s", body)
		}
		return st.QuorumLoss.Decision == "stuck" && strings.Contains(st.QuorumLoss.Reason, "is unreachable but its instance"), st.QuorumLoss.Reason
	})
	time.Sleep(30 * time.Second) // more rounds: still nothing
	if strings.Contains(survivor.Logs(), "forcing a new cluster") {
		t.Errorf("the survivor forced a new cluster with two managers running:\n%s", survivor.Logs())
	}
	if _, err := tc.tryObject(names.ControlKey(names.QuorumRecovery)); err == nil {
		t.Error("a recovery was claimed")
	}
	if out, err := survivor.Docker(context.Background(), "node", "ls"); err == nil {
		t.Errorf("the survivor has a quorum: %s", out)
	}
}
