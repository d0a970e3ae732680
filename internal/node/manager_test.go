package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// booting is a manager booting on an empty engine, sharing the lab's
// bucket, queue and AWS.
func (l *lab) booting(instance, ip string) (*Manager, *engine) {
	e := newEngine(l.t, l.c)
	e.ca, e.worker, e.manager = l.e.ca, l.e.worker, l.e.manager
	e.self = Self{LocalState: StateInactive}
	m := *l.m
	m.InstanceID, m.Address, m.Engine, m.State = instance, ip, e, State{Dir: l.t.TempDir()}
	m.p = nil // its own parts, of its own engine and state
	return &m, e
}

// Of managers booting at once, exactly one initialises the swarm; the
// others join it through what it published.
func TestManagersForm(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	a, ea := l.booting("i-00000000000000f0a", "10.0.1.10")
	b, _ := l.booting("i-00000000000000f0b", "10.0.1.11")
	l.ec2.states["i-00000000000000f0a"], l.ec2.states["i-00000000000000f0b"] = "running", "running"
	if err := a.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if l.c.count("docker swarm init") != 1 || !strings.Contains(string(l.b.objects[initKey]), "i-00000000000000f0a") {
		t.Fatalf("calls %v", l.c.l)
	}
	// b cannot claim; it waits for the join material, then joins.
	l.clock.tick = func() {
		if l.clock.now.Sub(start) > 20*time.Second && l.b.objects[names.ManagersKey] == nil {
			ea.addManager(ea.self.NodeID, "i-00000000000000f0a", "10.0.1.10", true)
			if err := a.PublishAtBoot(ctx); err != nil {
				t.Error(err)
			}
		}
	}
	if err := b.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if l.c.count("docker swarm init") != 1 || l.c.index("docker swarm join 10.0.1.11 10.0.1.10:2377") < 0 {
		t.Errorf("calls %v", l.c.l)
	}
}

// The first manager restores the lost lone manager's backup, unless it is
// older than the last change of the manager count.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	l.b.set(names.ControlKey(names.Backup), []byte("tar"))
	a, _ := l.booting("i-00000000000000f0a", "10.0.1.10")
	if err := a.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if string(l.bk.restored) != "tar" || l.c.index("restore 10.0.1.10") < 0 || l.c.index("docker swarm init") >= 0 {
		t.Errorf("calls %v", l.c.l)
	}

	// The backup's "taken" against the managers' "COUNT SINCE".
	// A stale backup is refused and a new swarm initialised; an unreadable
	// record or time fails the boot: nothing is decided on it.
	for _, tc := range []struct {
		taken, changed  string
		restored, fresh bool
	}{
		{"", "", true, false},               // neither says: no change known
		{"", "1 0\n", true, false},          // first recorded, never changed
		{"", "3 1700000000\n", false, true}, // a backup that does not say when
		{"1700000000", "3 1700000000\n", true, false},
		{"1699999999", "3 1700000000\n", false, true},
		{"1700000060", "1 1700000000\n", true, false},
		{"1700000060", "three\n", false, false}, // unreadable: not trusted
		{"soon", "1 0\n", false, false},
	} {
		l = newLab(t)
		l.b.set(names.ControlKey(names.Backup), []byte("tar"))
		if tc.taken != "" {
			l.b.meta[names.ControlKey(names.Backup)] = map[string]string{"taken": tc.taken}
		}
		if tc.changed != "" {
			l.b.set(names.ControlKey(names.ManagersChanged), []byte(tc.changed))
		}
		a, _ = l.booting("i-00000000000000f0a", "10.0.1.10")
		var said []string
		a.Log = func(f string, args ...any) { said = append(said, fmt.Sprintf(f, args...)) }
		err := a.Init(ctx)
		if got := l.bk.restored != nil; got != tc.restored || (tc.restored || tc.fresh) != (err == nil) {
			t.Errorf("taken %q, changed %q: restored %v, %v", tc.taken, tc.changed, got, err)
		}
		inits := l.c.count("docker swarm init")
		switch {
		case tc.fresh && (inits != 1 || !slices.ContainsFunc(said, func(s string) bool {
			return strings.HasPrefix(s, "refusing the backup: older than the last change of managers") && strings.HasSuffix(s, ": "+names.ControlKey(names.Backup))
		})):
			t.Errorf("taken %q, changed %q: %d inits, said %q", tc.taken, tc.changed, inits, said)
		case !tc.restored && !tc.fresh && (err == nil || !strings.Contains(err.Error(), "refusing the backup") || inits != 0):
			t.Errorf("taken %q, changed %q: %v, %d inits", tc.taken, tc.changed, err, inits)
		}
	}
}

// A marker whose instance is gone while no published manager answers is
// taken over; one whose instance runs stands until the boot gives up.
func TestStaleMarker(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	old := wire.InitMarker{InstanceID: "i-00000000000000f99", Address: "10.0.1.99", Time: start.Add(-time.Hour)}
	l.b.set(initKey, old.Marshal())
	l.b.set(names.ManagersKey, []byte("10.0.1.99:2377\n"))
	a, _ := l.booting("i-00000000000000f0a", "10.0.1.10")
	if err := a.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(l.b.objects[initKey]), "i-00000000000000f0a") || l.c.count("docker swarm init") != 1 || !l.logged("taking over") {
		t.Errorf("calls %v, logs %v", l.c.l, l.logs)
	}

	l = newLab(t)
	l.b.set(initKey, old.Marshal())
	l.ec2.states["i-00000000000000f99"] = "running"
	a, _ = l.booting("i-00000000000000f0a", "10.0.1.10")
	a.T.JoinTimeout = time.Minute
	if err := a.Init(ctx); err == nil || l.c.index("docker swarm init") >= 0 {
		t.Errorf("took over a live manager's marker: %v, %v", err, l.c.l)
	}
	// Nor while a published manager answers.
	l = newLab(t)
	l.b.set(initKey, old.Marshal())
	l.b.set(names.ManagersKey, []byte("10.0.1.99:2377\n"))
	l.net.answers["10.0.1.99:2377"] = true
	a, _ = l.booting("i-00000000000000f0a", "10.0.1.10")
	a.T.JoinTimeout = time.Minute
	if err := a.Init(ctx); err == nil || l.c.index("docker swarm init") >= 0 {
		t.Errorf("took over while a manager answers: %v", err)
	}
	// Nor while a published manager that does not answer is not proven
	// gone: its instance runs in the managers' group (a partition).
	for _, tc := range []struct {
		state string
		takes bool
	}{{"running", false}, {"shutting-down", false}, {"terminated", true}, {"stopped", false}, {"stopping", false}} {
		l = newLab(t)
		l.b.set(initKey, old.Marshal())
		l.b.set(names.ManagersKey, []byte("10.0.1.99:2377\n10.0.1.98:2377\n"))
		a, _ = l.booting("i-00000000000000f0a", "10.0.1.10")
		a.T.JoinTimeout = time.Minute
		a.Recovery = &Recovery{Proof: &proof{c: l.c, at: map[string][]InstanceAt{
			"10.0.1.98": {{"i-00000000000000f98", "terminated"}}, "10.0.1.99": {{"i-00000000000000f97", tc.state}}},
			group: []string{"i-00000000000000f97", "i-00000000000000f0a"}}}
		err := a.Init(ctx)
		if took := l.c.index("docker swarm init") >= 0; took != tc.takes || tc.takes != (err == nil) {
			t.Errorf("a published manager %s: took over %v, %v", tc.state, took, err)
		}
		stopped := tc.state == "stopped" || tc.state == "stopping"
		want := "not taking the swarm over: the manager at 10.0.1.99 is unreachable but its instance i-00000000000000f97 is " + tc.state
		if stopped {
			// Fenced: terminated through its group, and not gone until EC2
			// shows it terminated (the fake shows it shutting down).
			want = "fencing the lost manager at 10.0.1.99: its instance i-00000000000000f97 is stopped"
			if l.c.count("autoscaling terminate-instance-in-auto-scaling-group i-00000000000000f97") != 1 {
				t.Errorf("a published manager %s: not terminated through its group once: %v", tc.state, l.c.l)
			}
		}
		if !tc.takes && !l.logged(want) {
			t.Errorf("a published manager %s: logs %v", tc.state, l.logs)
		}
	}
	// Its own marker (an earlier boot that did not finish) is taken back.
	l = newLab(t)
	mine := wire.InitMarker{InstanceID: "i-00000000000000f0a", Time: start}
	l.b.set(initKey, mine.Marshal())
	a, _ = l.booting("i-00000000000000f0a", "10.0.1.10")
	if err := a.Init(ctx); err != nil || l.c.count("docker swarm init") != 1 {
		t.Errorf("own marker: %v, %v", err, l.c.l)
	}
}

// A node already a manager stays one; one that is a worker is refused.
func TestInitAgain(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	if err := l.m.Init(ctx); err != nil || len(l.c.l) != 0 {
		t.Errorf("%v, %v", err, l.c.l)
	}
	l.e.self.ControlAvailable = false
	if err := l.m.Init(ctx); err == nil {
		t.Error("a worker taken for a manager")
	}
}

// Reachable, a manager drains itself: managers run no workloads.
func TestReady(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	self := l.e.nodes[nodeID("m1")]
	self.Availability, self.Reachability = "active", ""
	l.clock.tick = func() {
		if l.clock.now.Sub(start) >= 5*time.Second {
			self.Reachability = "reachable"
		}
	}
	if err := l.m.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if l.c.index("docker node update --availability drain "+self.ID) < 0 || l.clock.now.Sub(start) < 5*time.Second {
		t.Errorf("calls %v at %s", l.c.l, l.clock.now)
	}
	self.Reachability, l.clock.tick = "unreachable", nil
	l.m.T.JoinTimeout = 30 * time.Second
	if err := l.m.Ready(ctx); err == nil || !strings.Contains(err.Error(), "not a Reachable manager within 30s") {
		t.Errorf("%v", err)
	}
}
