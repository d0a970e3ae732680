package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/wire"
)

const (
	iM1 = "i-0000000000000f001"
	iW1 = "i-00000000000000a01"
	iW2 = "i-00000000000000a02"
)

var start = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// lab is a leader's housekeeping against fakes.
type lab struct {
	t     *testing.T
	c     *calls
	clock *clock
	e     *engine
	b     *bucket
	q     *queue
	s     *scaling
	ec2   *instances
	bk    *backups
	net   *network
	m     *Manager
	logs  []string
}

func newLab(t *testing.T) *lab {
	c := &calls{}
	clk := &clock{now: start}
	l := &lab{t: t, c: c, clock: clk, e: newEngine(t, c), b: newBucket(c, clk),
		q:   &queue{c: c, hidden: map[string]time.Time{}, clock: clk},
		s:   &scaling{c: c, owners: map[string]string{"core-ManagerGroup-1": "core", "core-web-Group-1": "core", "prod-web-Group-1": "prod"}},
		ec2: &instances{c: c, states: map[string]string{}, ips: map[string]string{}}, bk: &backups{c: c},
		net: &network{c: c, answers: map[string]bool{}, rules: map[string]string{}}}
	l.ec2.e = l.e
	l.s.q = l.q
	leader := l.e.addManager(nodeID("m1"), iM1, "10.0.1.1", true)
	l.e.self = Self{NodeID: leader.ID, LocalState: StateActive, ControlAvailable: true}
	l.m = &Manager{Cluster: "core", InstanceID: iM1, Address: "10.0.1.1",
		Engine: l.e, Bucket: l.b, Queue: l.q, Scaling: l.s, Instances: l.ec2, Backups: l.bk, Objects: l.e, Network: l.net,
		Clock: clk, State: State{Dir: t.TempDir()}, T: Defaults(),
		Log: func(f string, a ...any) { l.logs = append(l.logs, fmt.Sprintf(f, a...)) }}
	return l
}

func (l *lab) round() { l.m.Round(context.Background()) }

func (l *lab) logged(s string) bool {
	for _, x := range l.logs {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// order fails unless the calls starting with each prefix come in that order.
func (l *lab) order(prefixes ...string) {
	l.t.Helper()
	last := -1
	for _, p := range prefixes {
		i := l.c.index(p)
		if i < 0 || i < last {
			l.t.Fatalf("%q at %d (after %d): calls\n%s", p, i, last, strings.Join(l.c.l, "\n"))
		}
		last = i
	}
}

func terminationBody(group, instance string, sent time.Time) string {
	d, _ := json.Marshal(map[string]string{
		"AutoScalingGroupName": group, "LifecycleHookName": names.LifecycleHook("core"),
		"LifecycleActionToken": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "LifecycleTransition": wire.TransitionTerminating,
		"EC2InstanceId": instance,
	})
	b, _ := json.Marshal(wire.Event{Version: "0", DetailType: wire.DetailTerminate, Source: "aws.autoscaling", Time: sent.Format(time.RFC3339), Detail: d})
	return string(b)
}

// confirm plays the agent of instance confirming a notice of kind from
// its instance metadata, at the key its session alone may write.
func (l *lab) confirm(instance, kind string, at time.Time) {
	c := wire.InterruptionConfirmation{InstanceID: instance, Kind: kind, Action: "terminate", Time: at}
	l.b.set(names.InterruptionPrefix+"/AROAAGENTROLE:"+instance, c.Marshal())
}

func interruptionBody(kind, instance string) string {
	b, _ := json.Marshal(wire.Event{DetailType: kind, Source: "aws.ec2", Detail: json.RawMessage(`{"instance-id":"` + instance + `"}`)})
	return string(b)
}

func requestBody(t *testing.T, cluster, instance, availability string, at time.Time) string {
	b, err := wire.NewAvailabilityRequest(wire.NewRequestID(), at, "", "eu-west-1", cluster, instance, availability)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A leader's round asks its engine what it is once, and its parts share
// the answer: an /info runs two programs on the engine's side.
func TestRoundAsksTheEngineOnce(t *testing.T) {
	l := newLab(t)
	l.e.addWorker(nodeID("w1"), iW1)
	l.ec2.states[iW1] = "running"
	for round := 1; round <= 3; round++ {
		before := l.e.selves
		l.round()
		if n := l.e.selves - before; n != 1 {
			t.Fatalf("round %d asked the engine %d times", round, n)
		}
	}
	if !l.logged("published the join material") {
		t.Fatalf("the round did not publish: %v", l.logs)
	}
}

// A terminating worker is drained, its tasks wait until their service runs
// elsewhere, then it is removed and the lifecycle action completed, and
// only then is the notice deleted.
func TestTerminationDrainsThenRemoves(t *testing.T) {
	l := newLab(t)
	w1 := l.e.addWorker(nodeID("w1"), iW1)
	l.e.addWorker(nodeID("w2"), iW2)
	l.e.services["web"] = 2
	l.e.tasks = []Task{
		{ID: "t1", NodeID: w1.ID, ServiceID: "web", State: "running", DesiredState: "running"},
		{ID: "t2", NodeID: nodeID("w2"), ServiceID: "web", State: "running", DesiredState: "running"},
	}
	// The swarm moves the drained node's task after a few seconds.
	polls := 0
	l.clock.tick = func() {
		if polls++; polls == 3 && l.e.nodes[w1.ID].Availability == "drain" {
			l.e.tasks[0].State, l.e.tasks[0].DesiredState = "shutdown", "shutdown"
			l.e.tasks = append(l.e.tasks, Task{ID: "t3", NodeID: nodeID("w2"), ServiceID: "web", State: "running", DesiredState: "running"})
		}
	}
	l.q.put("n1", terminationBody("core-web-Group-1", iW1, start), start)
	l.round() // receives
	l.round() // handles
	l.order("docker node update --availability drain "+w1.ID, "heartbeat "+iW1, "docker node rm "+w1.ID, "complete "+iW1, "sqs delete n1")
	if polls < 3 {
		t.Errorf("removed after %d polls, before the task moved", polls)
	}
	if _, ok := l.e.nodes[nodeID("w2")]; !ok || len(l.q.msgs) != 0 {
		t.Errorf("w2 removed, or notice left: %v", l.q.msgs)
	}
	if files, _ := l.m.State.List(noticeDir); len(files) != 0 {
		t.Errorf("notices kept: %v", files)
	}
}

// A drain that never ends is bounded; the lifecycle action and the
// message are heartbeated all along.
func TestDrainBoundAndHeartbeats(t *testing.T) {
	l := newLab(t)
	w1 := l.e.addWorker(nodeID("w1"), iW1)
	l.e.services["db"] = 1
	l.e.tasks = []Task{{ID: "t1", NodeID: w1.ID, ServiceID: "db", State: "running", DesiredState: "running"}}
	l.q.put("n1", terminationBody("core-web-Group-1", iW1, start), start)
	l.round()
	began := l.clock.now
	l.round()
	took := l.clock.now.Sub(began)
	if took < l.m.T.DrainTimeout || took > l.m.T.DrainTimeout+time.Minute {
		t.Errorf("drain took %s, want its bound %s", took, l.m.T.DrainTimeout)
	}
	if n := l.c.count("heartbeat " + iW1); n < 9 || n > 11 {
		t.Errorf("%d heartbeats in %s, want one a minute", n, took)
	}
	if !l.logged("did not all move within 10m0s; removing it anyway") {
		t.Errorf("logs %v", l.logs)
	}
	l.order("docker node rm "+w1.ID, "complete "+iW1, "sqs delete n1")
}

// A service that cannot be placed elsewhere does not hold the drain up.
func TestDrainUnplaceable(t *testing.T) {
	l := newLab(t)
	w1 := l.e.addWorker(nodeID("w1"), iW1)
	l.e.services["gpu"] = 1
	l.e.tasks = []Task{
		{ID: "t1", NodeID: w1.ID, ServiceID: "gpu", State: "shutdown", DesiredState: "shutdown"},
		{ID: "t2", ServiceID: "gpu", State: "pending", DesiredState: "running", Err: "no suitable node (scheduling constraints not satisfied)"},
	}
	// Found before the drain: the task ran there.
	l.m.State.Save(noticeDir+"/n1.json", notice{ID: "n1", Body: terminationBody("core-web-Group-1", iW1, start), Sent: start,
		Nodes: []string{w1.ID}, Services: []string{"gpu"}, Since: start})
	l.q.put("n1", "", start)
	l.q.Receive(context.Background(), 0, time.Minute)
	var n notice
	l.m.State.Load(noticeDir+"/n1.json", &n)
	n.Receipt = l.q.msgs[0].Receipt
	l.m.State.Save(noticeDir+"/n1.json", n)
	began := l.clock.now
	if err := l.m.handleNotice(context.Background(), noticeDir+"/n1.json"); err != nil {
		t.Fatal(err)
	}
	if l.clock.now.Sub(began) > time.Minute {
		t.Errorf("waited %s for a task that cannot be placed", l.clock.now.Sub(began))
	}
	l.order("docker node rm "+w1.ID, "complete "+iW1)
}

// A notice received again (its handling outlived its visibility, or after
// a restart) keeps what was found and since when: the drain's bound does
// not start over; only the receipt is new.
func TestNoticeReceivedAgain(t *testing.T) {
	l := newLab(t)
	l.q.put("n1", terminationBody("core-web-Group-1", iW1, start), start)
	ctx := context.Background()
	if err := l.m.parts().inbox.receive(ctx, 0); err != nil {
		t.Fatal(err)
	}
	file := noticeDir + "/n1.json"
	var n notice
	l.m.State.Load(file, &n)
	n.Nodes, n.Since = []string{nodeID("w1")}, start.Add(-5*time.Minute)
	l.m.State.Save(file, n)
	l.clock.now = l.clock.now.Add(l.m.T.Visibility + time.Second)
	if err := l.m.parts().inbox.receive(ctx, 0); err != nil {
		t.Fatal(err)
	}
	var again notice
	l.m.State.Load(file, &again)
	if !again.Since.Equal(n.Since) || len(again.Nodes) != 1 || again.Receipt == n.Receipt || again.Receipt != l.q.msgs[0].Receipt {
		t.Errorf("kept %+v, was %+v", again, n)
	}
}

// Notices not to act on are forgotten without a drain or a completion.
func TestNoticesIgnored(t *testing.T) {
	for _, tt := range []struct {
		name, body, log string
	}{
		{"sent 49 hours ago", terminationBody("core-web-Group-1", iW1, start.Add(-49*time.Hour)), "sent more than 48 hours ago"},
		{"another cluster's group", terminationBody("prod-web-Group-1", iW1, start), "is not of cluster core"},
		{"not a termination", `{"detail-type":"EC2 Instance Launch Successful","detail":{}}`, "not an instance termination"},
		{"not JSON", "<html>", "ignoring a message"},
		{"spot warning of no instance", interruptionBody(wire.DetailSpot, "x"), "without an instance"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLab(t)
			l.e.addWorker(nodeID("w1"), iW1)
			l.q.put("n1", tt.body, start)
			l.round()
			l.round()
			if l.c.index("docker node") >= 0 || l.c.index("complete") >= 0 || l.c.index("sqs delete n1") < 0 || !l.logged(tt.log) {
				t.Errorf("calls %v, logs %v", l.c.l, l.logs)
			}
		})
	}
}

// The leader's own instance terminating: with other managers it demotes
// itself and hands the notice back; the last manager backs the swarm up
// and lets its instance go.
func TestLeaderLeaving(t *testing.T) {
	t.Run("with other managers", func(t *testing.T) {
		l := newLab(t)
		l.e.addManager(nodeID("m2"), "i-0000000000000f002", "10.0.1.2", false)
		l.e.addManager(nodeID("m3"), "i-0000000000000f003", "10.0.1.3", false)
		l.q.put("n1", terminationBody("core-ManagerGroup-1", iM1, start), start)
		l.round()
		l.round()
		l.order("docker node demote "+nodeID("m1"), "sqs hand back n1")
		if l.c.index("complete") >= 0 || l.c.index("sqs delete") >= 0 || len(l.q.msgs) != 1 {
			t.Errorf("calls %v", l.c.l)
		}
		if files, _ := l.m.State.List(noticeDir); len(files) != 0 {
			t.Errorf("kept %v", files)
		}
	})
	t.Run("the last manager", func(t *testing.T) {
		l := newLab(t)
		l.q.put("n1", terminationBody("core-ManagerGroup-1", iM1, start), start)
		l.round()
		l.c.l = nil
		l.round()
		l.order("archive", "s3 put "+names.ControlKey(names.BackupsPrefix)+"/", "complete "+iM1, "sqs delete n1")
		if l.c.index("docker node demote") >= 0 {
			t.Errorf("demoted the last manager: %v", l.c.l)
		}
	})
}

// A spot warning or a rebalance recommendation drains the node at once and
// leaves it in the swarm; one for an instance not in it is dropped.
func TestInterruptions(t *testing.T) {
	l := newLab(t)
	w1 := l.e.addWorker(nodeID("w1"), iW1)
	l.confirm(iW1, wire.InterruptionSpot, start.Add(2*time.Minute))
	l.q.put("n1", interruptionBody(wire.DetailSpot, iW1), start)
	l.q.put("n2", interruptionBody(wire.DetailRebalance, "i-0123456789abcdef0"), start)
	l.round()
	l.round()
	l.order("docker node update --availability drain "+w1.ID, "sqs delete n1")
	if l.c.index("sqs delete n2") < 0 || l.c.count("docker node update") != 1 || l.c.index("docker node rm") >= 0 || l.c.index("complete") >= 0 {
		t.Errorf("calls %v", l.c.l)
	}
}

// A request sets the availability, publishes the snapshot at once and
// often for a while; a stale one or another cluster's is dropped.
func TestRequests(t *testing.T) {
	l := newLab(t)
	w1 := l.e.addWorker(nodeID("w1"), iW1)
	l.round() // first snapshot
	l.q.put("r1", requestBody(t, "core", iW1, "drain", l.clock.now), l.clock.now)
	l.q.put("r2", requestBody(t, "prod", iW1, "active", l.clock.now), l.clock.now)
	l.q.put("r3", requestBody(t, "core", iW2, "drain", l.clock.now), l.clock.now.Add(-11*time.Minute))
	l.round() // receives
	l.c.l = nil
	l.round() // handles
	l.order("docker node update --availability drain "+w1.ID, "s3 put "+names.StatusKey, "sqs delete r1")
	for _, r := range []string{"r2", "r3"} {
		if l.c.index("sqs delete "+r) < 0 {
			t.Errorf("%s kept: %v", r, l.c.l)
		}
	}
	if l.c.count("docker node update") != 1 || !l.logged("dropping request") || !l.logged(`for cluster "prod", not "core"`) {
		t.Errorf("calls %v, logs %v", l.c.l, l.logs)
	}
	// For a while, a snapshot every few seconds; then every 15 s again.
	l.c.l = nil
	for until := l.clock.now.Add(time.Minute); l.clock.now.Before(until); {
		l.m.parts().status.publish(context.Background())
		l.clock.now = l.clock.now.Add(time.Second)
	}
	if n := l.c.count("s3 put " + names.StatusKey); n < 15 {
		t.Errorf("%d snapshots in the minute after a request", n)
	}
	l.clock.now = l.clock.now.Add(l.m.T.WatchFor)
	l.c.l = nil
	for until := l.clock.now.Add(time.Minute); l.clock.now.Before(until); {
		l.m.parts().status.publish(context.Background())
		l.clock.now = l.clock.now.Add(time.Second)
	}
	if n := l.c.count("s3 put " + names.StatusKey); n != 4 {
		t.Errorf("%d snapshots in a minute once watched, want 4", n)
	}
}

// Watched by whole rounds, as the service runs them: after a request the
// wait on the queue is as short as the snapshot's interval, so the
// snapshot goes every 2 s for 2 minutes (as the shell managers publish
// it), then every 15 s again.
func TestWatchedRounds(t *testing.T) {
	l := newLab(t)
	l.e.addWorker(nodeID("w1"), iW1)
	l.round()
	l.q.put("r1", requestBody(t, "core", iW1, "drain", l.clock.now), l.clock.now)
	l.round() // receives
	l.round() // handles
	count := func(d time.Duration) int {
		l.c.l = nil
		for until := l.clock.now.Add(d); l.clock.now.Before(until); {
			l.round()
		}
		return l.c.count("s3 put " + names.StatusKey)
	}
	if n := count(time.Minute); n < 28 {
		t.Errorf("%d snapshots in the minute after a request, want one every 2 s", n)
	}
	count(time.Minute)
	if n := count(time.Minute); n > 5 {
		t.Errorf("%d snapshots in a minute once watched, want one every 15 s", n)
	}
}

// A manager that does not lead does nothing but wait.
func TestFollowerIdles(t *testing.T) {
	l := newLab(t)
	l.e.nodes[nodeID("m1")].Leader = false
	l.q.put("n1", terminationBody("core-web-Group-1", iW1, start), start)
	l.round()
	if len(l.c.l) != 0 || !l.clock.now.Equal(start.Add(l.m.T.Idle)) {
		t.Errorf("a follower: calls %v, slept until %s", l.c.l, l.clock.now)
	}
}

// The snapshot: every node, sorted, with its tasks counted by their actual
// state (a drained node's tasks count until they have stopped).
func TestSnapshotContents(t *testing.T) {
	l := newLab(t)
	m2 := l.e.addManager(nodeID("m2"), "i-0000000000000f002", "10.0.1.2", false)
	m2.Reachability, m2.Addr = "unreachable", "0.0.0.0"
	w := l.e.addWorker(nodeID("a1"), iW1)
	w.Availability, w.EngineVersion, w.Hostname = "drain", "25.0.8", "ip-10-0-2-1"
	l.e.tasks = []Task{
		{ID: "t1", NodeID: w.ID, State: "running", DesiredState: "shutdown"},
		{ID: "t1", NodeID: w.ID, State: "running", DesiredState: "shutdown"}, // listed twice
		{ID: "t2", NodeID: w.ID, State: "running", DesiredState: "running"},
		{ID: "t3", NodeID: w.ID, State: "shutdown", DesiredState: "shutdown"},
		{ID: "t4", NodeID: w.ID, State: "starting", DesiredState: "running"},
	}
	l.round()
	body, _, err := l.b.Get(context.Background(), names.StatusKey)
	if err != nil {
		t.Fatal(err)
	}
	s, err := wire.ParseSnapshot("x", body, "core")
	if err != nil {
		t.Fatal(err)
	}
	if s.Publisher != iM1 || s.CADigest != Digest([]byte(l.e.ca)) || !s.Time.Equal(start) || s.LastBackup != nil {
		t.Errorf("snapshot %+v", s)
	}
	var got []string
	for _, n := range s.Nodes {
		got = append(got, fmt.Sprintf("%s %s %s %s %s %s %d", n.NodeID[:2], n.InstanceID, n.Address, n.Role, n.Availability, n.ManagerStatus, n.RunningTasks))
	}
	// A manager whose address the swarm does not know is shown at its
	// manager address.
	want := []string{
		"a1 " + iW1 + " 10.0.2.a worker drain  2",
		"m1 " + iM1 + " 10.0.1.1 manager drain leader 0",
		"m2 i-0000000000000f002 10.0.1.2 manager drain unreachable 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("nodes\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The snapshot carries the swarm's services and all their tasks, as the
// shell managers publish them, and clusterctl services reads them: here
// from the published object through query's reader.
func TestSnapshotServices(t *testing.T) {
	l := newLab(t)
	w := l.e.addWorker(nodeID("a1"), iW1)
	three := 3
	web := wire.SnapshotService{ID: "s1", Name: "web", Image: "nginx:1.27@sha256:abc"}
	web.Mode.Replicated = &struct{ Replicas *int }{&three}
	web.Endpoint.Ports = []wire.DockerPort{{Protocol: "tcp", TargetPort: 80, PublishedPort: 8080, PublishMode: "ingress"}}
	web.Placement.Constraints = []string{"node.role==worker"}
	agent := wire.SnapshotService{ID: "s2", Name: "agent", Image: "busybox"}
	agent.Mode.Global = &struct{}{}
	l.e.listed = []wire.SnapshotService{web, agent}
	l.e.tasks = []Task{
		{ID: "t1", NodeID: w.ID, ServiceID: "s1", State: "running", DesiredState: "running"},
		{ID: "t2", NodeID: w.ID, ServiceID: "s1", State: "shutdown", DesiredState: "shutdown"},
		{ID: "t3", ServiceID: "s1", State: "pending", DesiredState: "running", Message: "pending task scheduling", Err: "no suitable node (insufficient resources on 1 node)"},
		{ID: "t4", NodeID: w.ID, ServiceID: "s2", State: "running", DesiredState: "running"},
		{ID: "t5", NodeID: w.ID, State: "running", DesiredState: "running"}, // of no service
	}
	l.round()
	body, _, err := l.b.Get(context.Background(), names.StatusKey)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Services []map[string]json.RawMessage `json:"services"`
		Tasks    []map[string]json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	// The keys the managers have always published, in the engine's words.
	for _, sv := range raw.Services {
		for _, k := range []string{"ID", "Name", "Mode", "Image", "Endpoint", "Placement"} {
			if _, ok := sv[k]; !ok {
				t.Errorf("a service without %s: %s", k, body)
			}
		}
	}
	if len(raw.Tasks) != 4 {
		t.Errorf("tasks: %s", body)
	}
	for _, tk := range raw.Tasks {
		for _, k := range []string{"ServiceID", "NodeID", "DesiredState", "Status"} {
			if _, ok := tk[k]; !ok {
				t.Errorf("a task without %s: %s", k, body)
			}
		}
	}
	s, err := wire.ParseSnapshot("x", body, "core")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(query.ServicesOf(s))
	want := `[{"name":"agent","id":"s2","mode":"global","running":1,"desired":1,"image":"busybox","ports":[],"constraints":[],` +
		`"tasks":[{"nodeId":"` + w.ID + `","instanceId":"` + iW1 + `","group":"web","state":"running","desiredState":"running","message":"","error":""}],"pending":"","unplaceable":""},` +
		`{"name":"web","id":"s1","mode":"replicated","running":1,"desired":3,"image":"nginx:1.27","ports":[{"published":8080,"target":80,"protocol":"tcp","mode":"ingress"}],"constraints":["node.role==worker"],` +
		`"tasks":[{"nodeId":"","instanceId":"","group":"","state":"pending","desiredState":"running","message":"pending task scheduling","error":"no suitable node (insufficient resources on 1 node)"},` +
		`{"nodeId":"` + w.ID + `","instanceId":"` + iW1 + `","group":"web","state":"running","desiredState":"running","message":"","error":""}],"pending":"no suitable node (insufficient resources on 1 node)","unplaceable":""}]`
	if string(got) != want {
		t.Errorf("services\n%s\nwant\n%s", got, want)
	}

	// No services: [] (null would say the managers do not publish them).
	l = newLab(t)
	l.round()
	body, _, _ = l.b.Get(context.Background(), names.StatusKey)
	if !strings.Contains(string(body), `"services":[]`) || !strings.Contains(string(body), `"tasks":[]`) {
		t.Errorf("no services: %s", body)
	}
}
