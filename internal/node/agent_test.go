package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// agentEngine is a fake agent engine: joining a manager of the lab's swarm
// makes it trust that swarm's CA.
type agentEngine struct {
	c       *calls
	self    Self
	selves  int   // answers to Self: each is an /info, which costs the engine
	down    error // Self's error: the engine does not answer
	trusted string
	swarmCA func() string // the CA of the swarm a join reaches
	fail    error
}

func (e *agentEngine) Self(context.Context) (Self, error) {
	e.selves++
	return e.self, e.down
}
func (e *agentEngine) Join(_ context.Context, _, addr, remote string) error {
	e.c.add("docker swarm join %s %s", addr, remote)
	if e.fail != nil {
		return e.fail
	}
	e.self = Self{NodeID: nodeID("w" + fmt.Sprint(len(e.c.l))), LocalState: StateActive}
	e.trusted = e.swarmCA()
	return nil
}
func (e *agentEngine) Leave(context.Context) error {
	e.c.add("docker swarm leave")
	e.self, e.trusted = Self{LocalState: StateInactive}, ""
	return nil
}
func (e *agentEngine) TrustedCA(context.Context, Self) (string, error) { return e.trusted, nil }

type lifecycle struct {
	c           *calls
	terminating bool
	asked       int // the agent asks once per step
}

func (l *lifecycle) Terminating(context.Context) bool {
	l.asked++
	return l.terminating
}
func (l *lifecycle) Signal(_ context.Context, ok bool, reason string) error {
	l.c.add("cfn-signal %v %s", ok, reason)
	return nil
}

type agentLab struct {
	*lab
	a  *Agent
	ae *agentEngine
	lc *lifecycle
	// lost: the swarm no longer lists the agent's node.
	lost bool
}

func newAgentLab(t *testing.T) *agentLab {
	l := newLab(t)
	ae := &agentEngine{c: l.c, self: Self{LocalState: StateInactive}, swarmCA: func() string { return l.e.ca }}
	lc := &lifecycle{c: l.c}
	a := &Agent{Cluster: "core", Group: "web", InstanceType: "t3.small", Address: "10.0.2.5", ManagersKey: names.ManagersKey,
		Engine: ae, Bucket: l.b, Node: lc, Clock: l.clock, State: State{Dir: t.TempDir()}, T: AgentDefaults(),
		Log: func(f string, x ...any) { l.logs = append(l.logs, fmt.Sprintf(f, x...)) }}
	return &agentLab{lab: l, a: a, ae: ae, lc: lc}
}

// run runs the agent for d of the fake clock, with the leader's
// housekeeping publishing alongside when leader.
func (l *agentLab) run(d time.Duration, leader bool) {
	ctx, cancel := context.WithCancel(context.Background())
	end := l.clock.now.Add(d)
	l.clock.tick = func() {
		if leader {
			// The swarm shows the agent's node as its engine says.
			if l.ae.self.NodeID != "" && l.ae.trusted == l.e.ca && !l.lost {
				if _, ok := l.e.nodes[l.ae.self.NodeID]; !ok {
					l.e.add(Node{ID: l.ae.self.NodeID, Labels: map[string]string{}})
				}
			}
			l.m.parts().status.publish(ctx)
		}
		if !l.clock.now.Before(end) {
			cancel()
		}
	}
	l.a.Run(ctx)
	l.clock.tick = nil
}

func (l *agentLab) publish() {
	if err := l.m.parts().join.publish(context.Background(), true); err != nil {
		l.t.Fatal(err)
	}
}

// An agent waits for the join material, joins through a published
// manager, and signals once the swarm shows it Ready, once.
func TestAgentJoins(t *testing.T) {
	l := newAgentLab(t)
	l.run(time.Minute, false)
	if l.c.index("docker swarm join") >= 0 || !l.logged("waiting for the join material") {
		t.Fatalf("joined without material: %v", l.c.l)
	}
	l.publish()
	l.run(3*time.Minute, true)
	l.order("docker swarm join 10.0.2.5 10.0.1.1:2377", "cfn-signal true agent ready")
	if l.c.count("cfn-signal") != 1 || l.c.count("docker swarm join") != 1 {
		t.Errorf("calls %v", l.c.l)
	}
}

// Once in the swarm, each step of the agent asks its engine what it is
// once: its state, its CA's place and its node id are one answer's (an
// /info, which runs two programs on the engine's side).
func TestAgentAsksItsEngineOncePerStep(t *testing.T) {
	l := newAgentLab(t)
	l.publish()
	l.run(3*time.Minute, true)
	if l.c.count("cfn-signal true") != 1 {
		t.Fatalf("not Ready: %v", l.c.l)
	}
	selves, steps := l.ae.selves, l.lc.asked
	l.run(10*time.Minute, true)
	selves, steps = l.ae.selves-selves, l.lc.asked-steps
	// run starts the agent anew, whose start asks once more.
	if steps < 5 || selves != steps+1 {
		t.Fatalf("a start and %d steps asked the engine %d times", steps, selves)
	}
}

// An engine that does not say what it is is not made to join: the agent
// says why it waits, and joins once the engine answers.
func TestAgentWaitsForItsEngine(t *testing.T) {
	l := newAgentLab(t)
	l.publish()
	l.ae.down = errors.New("Cannot connect to the Docker daemon")
	l.run(3*time.Minute, true)
	if l.c.index("docker swarm") >= 0 || l.c.index("cfn-signal") >= 0 || !l.logged("asking the engine what it is: Cannot connect") {
		t.Fatalf("calls %v, logs %v", l.c.l, l.logs)
	}
	l.ae.down = nil
	l.run(3*time.Minute, true)
	l.order("docker swarm join 10.0.2.5 10.0.1.1:2377", "cfn-signal true agent ready")
}

// A swarm initialised anew (another CA): the agent leaves and joins it.
func TestAgentRejoinsNewSwarm(t *testing.T) {
	l := newAgentLab(t)
	l.publish()
	l.run(time.Minute, true)
	l.e.ca, l.e.worker, l.e.manager = swarmCA(t, "two")
	l.e.nodes = map[string]*Node{}
	l.e.addManager(nodeID("m9"), iM1, "10.0.1.1", true)
	l.publish()
	l.c.l = nil
	l.run(2*time.Minute, true)
	l.order("docker swarm leave", "docker swarm join 10.0.2.5 10.0.1.1:2377")
	if l.ae.trusted != l.e.ca {
		t.Errorf("trusts %q", l.ae.trusted)
	}
}

// A node the swarm has not shown Ready for RejoinAfter joins again.
func TestAgentNotShownReady(t *testing.T) {
	l := newAgentLab(t)
	l.publish()
	l.run(time.Minute, true)
	// The swarm lost the node (removed as dead while it was cut off).
	delete(l.e.nodes, l.ae.self.NodeID)
	l.lost = true
	l.c.l = nil
	l.run(l.a.T.RejoinAfter+time.Minute, true)
	if l.c.index("docker swarm join") < 0 || !l.logged("has not shown this node Ready for 2m0s (absent)") {
		t.Errorf("calls %v, logs %v", l.c.l, l.logs)
	}
}

// Not Ready within the join timeout: the stack is told why, once.
func TestAgentGivesUp(t *testing.T) {
	l := newAgentLab(t)
	l.publish()
	l.ae.fail = fmt.Errorf("connection refused")
	l.run(l.a.T.JoinTimeout+time.Minute, false)
	if l.c.count("cfn-signal false clusterctl: agent not Ready in the swarm within 480 s") != 1 || l.c.index("cfn-signal true") >= 0 {
		t.Errorf("calls %v", l.c.l)
	}
}

// A terminating instance no longer joins; a CA that is not the token's is
// never joined with.
func TestAgentRefusals(t *testing.T) {
	l := newAgentLab(t)
	l.publish()
	l.lc.terminating = true
	l.run(time.Minute, false)
	if l.c.index("docker swarm join") >= 0 || !l.logged("being terminated") {
		t.Errorf("calls %v", l.c.l)
	}
	l = newAgentLab(t)
	l.publish()
	other, _, _ := swarmCA(t, "other")
	l.b.set(names.SwarmPrefix+"/"+names.SwarmCA, []byte(other))
	l.run(time.Minute, false)
	if l.c.index("docker swarm join") >= 0 || !l.logged("does not match the join token") {
		t.Errorf("calls %v", l.c.l)
	}
	// Another cluster's snapshot is not trusted.
	l = newAgentLab(t)
	snap, _ := wire.Snapshot{Version: 1, Cluster: "prod", Time: start}.Marshal()
	l.b.set(names.StatusKey, snap)
	if l.a.freshStatus(context.Background()) != nil {
		t.Error("trusted another cluster's snapshot")
	}
}

func TestEngineLabels(t *testing.T) {
	i := Instance{ID: iW1, Type: "m6g.large", Lifecycle: "spot", Zone: "eu-west-1a"}
	got := strings.Join(EngineLabels("web", map[string]string{"tier": "db", "app": "x"}, i), " ")
	want := "app=x tier=db clusterctl.group=web clusterctl.instance-type=m6g.large clusterctl.lifecycle=spot clusterctl.zone=eu-west-1a clusterctl.instance-id=" + iW1
	if got != want {
		t.Errorf("labels %s", got)
	}
	if b := DaemonJSON([]string{"a=b"}, nil); !strings.Contains(string(b), `"labels": [`) || strings.Contains(string(b), "log-") {
		t.Errorf("%s", b)
	}
	if tags := InstanceTags(i); tags[names.TagLifecycle] != "spot" || len(tags) != 3 {
		t.Errorf("tags %v", tags)
	}
}

func TestInstanceCheck(t *testing.T) {
	ok := Instance{ID: "i-0123456789abcdef0", Type: "m7g.large", Lifecycle: "spot", Zone: "eu-west-1a", Address: "10.0.1.5"}
	if err := ok.Check(); err != nil {
		t.Fatalf("EC2's metadata refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Instance)
		says string
	}{
		{"quote in the lifecycle", func(i *Instance) { i.Lifecycle = `spot","x=1` }, "refusing lifecycle"},
		{"id", func(i *Instance) { i.ID = "i-1;reboot" }, "refusing instance-id"},
		{"type", func(i *Instance) { i.Type = "m5 large" }, "refusing instance-type"},
		{"zone", func(i *Instance) { i.Zone = "" }, "refusing zone"},
		{"address", func(i *Instance) { i.Address = "10.0.1.5\n" }, "refusing local-ipv4"},
	} {
		i := ok
		tc.edit(&i)
		if err := i.Check(); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.says)
		}
	}
}

// The engine names its containers' streams as the logs reader reads them,
// each under its node's role, the only streams that role may write: the
// tag, a Go template of the engine, executed as the engine does.
func TestDaemonJSONStreams(t *testing.T) {
	type container struct {
		ContainerLabels map[string]string
		Name            string
	}
	task := container{ContainerLabels: map[string]string{"com.docker.swarm.service.name": "web"}, Name: "web.1.abc"}
	plain := container{ContainerLabels: map[string]string{}, Name: "builder"}
	for _, c := range []struct {
		manager bool
		ctr     container
		want    string
	}{
		{false, task, "agents/service/web/web.1.abc@" + iW1},
		{false, plain, "agents/container/builder@" + iW1},
		{true, task, "managers/service/web/web.1.abc@" + iW1},
		{true, plain, "managers/container/builder@" + iW1},
	} {
		var conf struct {
			Opts map[string]string `json:"log-opts"`
		}
		if err := json.Unmarshal(DaemonJSON(nil, &EngineLogs{Group: "/clusterctl/core", Region: "eu-west-1", InstanceID: iW1, Manager: c.manager}), &conf); err != nil {
			t.Fatal(err)
		}
		tmpl, err := template.New("tag").Parse(conf.Opts["tag"])
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := tmpl.Execute(&b, c.ctr); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("manager %v, %+v: stream %q, want %q", c.manager, c.ctr, b.String(), c.want)
		}
	}
}
