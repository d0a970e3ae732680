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

// What EC2 and Auto Scaling say proves a lost manager gone, or not.
func TestProvenGone(t *testing.T) {
	group := []string{"i-a", "i-b"}
	for _, tc := range []struct {
		name  string
		at    []InstanceAt
		gone  bool
		why   string
		fence []string
	}{
		{"no instance", nil, true, "10.0.1.2: no instance", nil},
		{"terminated", []InstanceAt{{"i-a", "terminated"}}, true, "10.0.1.2: i-a terminated", nil},
		{"stopped in the group: fenced, not gone", []InstanceAt{{"i-a", "stopped"}}, false,
			"the manager at 10.0.1.2 is unreachable and its instance i-a stopped: being terminated before anything is forced", []string{"i-a"}},
		{"stopping in the group: fenced, not gone", []InstanceAt{{"i-a", "stopping"}}, false,
			"the manager at 10.0.1.2 is unreachable and its instance i-a stopped: being terminated before anything is forced", []string{"i-a"}},
		{"stopped, detached from the group", []InstanceAt{{"i-x", "stopped"}}, true, "10.0.1.2: i-x stopped, out of the managers' group", nil},
		{"running", []InstanceAt{{"i-a", "running"}}, false, "the manager at 10.0.1.2 is unreachable but its instance i-a is running", nil},
		{"shutting down: not yet", []InstanceAt{{"i-a", "shutting-down"}}, false, "the manager at 10.0.1.2 is unreachable but its instance i-a is shutting-down", nil},
		{"running, out of the group", []InstanceAt{{"i-x", "running"}}, true, "10.0.1.2: i-x running, out of the managers' group", nil},
		{"address reused by a manager", []InstanceAt{{"i-a", "terminated"}, {"i-b", "running"}}, false, "the manager at 10.0.1.2 is unreachable but its instance i-b is running", nil},
	} {
		gone, why, fence := provenGone("10.0.1.2", tc.at, group)
		if gone != tc.gone || why != tc.why || !slices.Equal(fence, tc.fence) {
			t.Errorf("%s: %v %q %v, want %v %q %v", tc.name, gone, why, fence, tc.gone, tc.why, tc.fence)
		}
	}
}

// quorumEngine is a fake engine as a survivor sees it.
type quorumEngine struct {
	c    *calls
	view QuorumView
}

func (e *quorumEngine) Quorum(context.Context) (QuorumView, error) { return e.view, nil }
func (e *quorumEngine) ForceNewCluster(_ context.Context, addr string) error {
	e.c.add("docker swarm init --force-new-cluster %s", addr)
	e.view.Leaderless = false
	return nil
}
func (e *quorumEngine) Leave(context.Context) error {
	e.c.add("docker swarm leave")
	e.view = QuorumView{}
	return nil
}

// proof is a fake EC2 and Auto Scaling.
type proof struct {
	c     *calls
	at    map[string][]InstanceAt
	group []string
}

func (p *proof) At(_ context.Context, addrs []string) (map[string][]InstanceAt, error) {
	p.c.add("ec2 describe %s", strings.Join(addrs, ","))
	return p.at, nil
}
func (p *proof) ManagerGroup(context.Context, string) ([]string, error) { return p.group, nil }

// Fence plays Auto Scaling terminating the instance: EC2 shows it
// shutting down at once (terminated on the fake's next word: terminate).
func (p *proof) Fence(_ context.Context, id string) error {
	p.c.add("autoscaling terminate-instance-in-auto-scaling-group %s --no-should-decrement-desired-capacity", id)
	for a, is := range p.at {
		for i := range is {
			if is[i].ID == id {
				p.at[a][i].State = "shutting-down"
			}
		}
	}
	return nil
}

type survivor struct {
	r     *Recovery
	e     *quorumEngine
	logs  []string
	joins int
}

// newSurvivor is a manager of three (m1 at 10.0.1.1, m2, m3) that sees no
// leader, in the lab's bucket; answers are the managers that answer.
func newSurvivor(t *testing.T, l *lab, self, instance string) *survivor {
	s := &survivor{e: &quorumEngine{c: l.c, view: QuorumView{NodeID: nodeID(self), Manager: true, Leaderless: true,
		Managers: []RemoteManager{{nodeID("m1"), "10.0.1.1:2377"}, {nodeID("m2"), "10.0.1.2:2377"}, {nodeID("m3"), "10.0.1.3:2377"}}}}}
	s.r = &Recovery{Cluster: "core", InstanceID: instance, Address: "10.0.1." + self[1:], Engine: s.e,
		Proof: &proof{c: l.c, at: map[string][]InstanceAt{}, group: []string{iM1, iM2, "i-0000000000000f003"}}, Bucket: l.b, Network: l.net,
		Clock: l.clock, State: State{Dir: t.TempDir()}, Grace: 2 * time.Minute,
		Log:    func(f string, a ...any) { s.logs = append(s.logs, fmt.Sprintf(f, a...)) },
		Rejoin: func(context.Context) bool { s.joins++; return s.joins > 1 }}
	return s
}

func (s *survivor) said(part string) bool {
	return strings.Contains(strings.Join(s.logs, "\n"), part)
}

// A survivor without a leader waits out the grace; then, with every lost
// manager proven gone, exactly one survivor forces a new cluster and the
// other leaves and joins it; with a lost manager whose instance runs,
// nothing is forced and the snapshot says why.
func TestQuorumRecovery(t *testing.T) {
	ctx := context.Background()
	stale := func(l *lab) {
		snap := wire.Snapshot{Version: wire.SnapshotVersion, Cluster: "core", Time: start.Add(-time.Hour), Publisher: iM1}
		b, _ := snap.Marshal()
		l.b.set(names.StatusKey, b)
	}
	quorumLoss := func(l *lab) *wire.QuorumLoss {
		snap, err := wire.ParseSnapshot("", l.b.objects[names.StatusKey], "core")
		if err != nil {
			t.Fatal(err)
		}
		return snap.QuorumLoss
	}
	forced := func(l *lab) int { return l.c.count("docker swarm init --force-new-cluster") }

	t.Run("two of three lost, terminated", func(t *testing.T) {
		l := newLab(t)
		stale(l)
		s := newSurvivor(t, l, "m1", iM1)
		s.r.Proof.(*proof).at = map[string][]InstanceAt{"10.0.1.2": {{iM2, "terminated"}}, "10.0.1.3": {{"i-0000000000000f003", "terminated"}}}
		if won, err := s.r.Round(ctx); won || err != nil || forced(l) != 0 || l.c.index("ec2") >= 0 {
			t.Fatalf("acted at once: %v %v %v", won, err, l.c.l)
		}
		if q := quorumLoss(l); q == nil || q.Decision != "waiting" || q.Observer != iM1 {
			t.Errorf("snapshot's quorum loss %+v", q)
		}
		l.clock.now = start.Add(2*time.Minute - time.Second)
		s.r.Round(ctx)
		if forced(l) != 0 {
			t.Fatalf("forced within the grace: %v", l.c.l)
		}
		l.clock.now = start.Add(2 * time.Minute)
		if won, err := s.r.Round(ctx); !won || err != nil || forced(l) != 1 {
			t.Fatalf("not forced after the grace: %v %v %v; %v", won, err, l.c.l, s.logs)
		}
		l.order("ec2 describe 10.0.1.2,10.0.1.3", "s3 claim "+recoveryKey, "docker swarm init --force-new-cluster 10.0.1.1", "s3 put "+recoveryKey)
		c, _ := wire.ParseRecoveryClaim(l.b.objects[recoveryKey])
		if !c.Done || c.Instance != iM1 || !s.said("every lost manager is proven gone (10.0.1.2: "+iM2+" terminated; 10.0.1.3: i-0000000000000f003 terminated)") {
			t.Errorf("claim %+v, logs %v", c, s.logs)
		}
		// A leader again: nothing more.
		s.r.Round(ctx)
		if forced(l) != 1 {
			t.Errorf("forced twice: %v", l.c.l)
		}
	})

	t.Run("unreachable, instances running", func(t *testing.T) {
		l := newLab(t)
		stale(l)
		s := newSurvivor(t, l, "m1", iM1)
		s.r.Proof.(*proof).at = map[string][]InstanceAt{"10.0.1.2": {{iM2, "running"}}, "10.0.1.3": {{"i-0000000000000f003", "terminated"}}}
		for range 20 {
			l.clock.now = l.clock.now.Add(30 * time.Second)
			if won, err := s.r.Round(ctx); won || err != nil {
				t.Fatal(won, err)
			}
		}
		if forced(l) != 0 || l.c.index("s3 claim") >= 0 {
			t.Fatalf("forced with a manager whose instance runs: %v", l.c.l)
		}
		q := quorumLoss(l)
		if q == nil || q.Decision != "stuck" || !strings.Contains(q.Reason, "the manager at 10.0.1.2 is unreachable but its instance "+iM2+" is running") ||
			!strings.Contains(q.Reason, "docker swarm init --force-new-cluster") {
			t.Errorf("snapshot's quorum loss %+v", q)
		}
		if n := strings.Count(strings.Join(s.logs, "\n"), "is unreachable but"); n != 1 {
			t.Errorf("said it %d times: %v", n, s.logs)
		}
	})

	t.Run("a lost manager stopped: terminated through its group before anything is forced", func(t *testing.T) {
		l := newLab(t)
		stale(l)
		s := newSurvivor(t, l, "m1", iM1)
		p := s.r.Proof.(*proof)
		p.at = map[string][]InstanceAt{"10.0.1.2": {{iM2, "stopped"}}, "10.0.1.3": {{"i-0000000000000f003", "terminated"}}}
		l.clock.now = start
		s.r.Round(ctx)
		l.clock.now = start.Add(3 * time.Minute)
		if won, err := s.r.Round(ctx); won || err != nil || forced(l) != 0 {
			t.Fatalf("forced with a manager stopped, not terminated: %v %v %v", won, err, l.c.l)
		}
		fence := "autoscaling terminate-instance-in-auto-scaling-group " + iM2 + " --no-should-decrement-desired-capacity"
		if l.c.count(fence) != 1 || !s.said("fencing the lost manager at 10.0.1.2: its instance "+iM2+" is stopped") {
			t.Fatalf("the stopped manager was not terminated through its group: %v; %v", l.c.l, s.logs)
		}
		// Shutting down: still nothing forced, and not terminated twice.
		l.clock.now = l.clock.now.Add(30 * time.Second)
		if won, _ := s.r.Round(ctx); won || forced(l) != 0 || l.c.count(fence) != 1 {
			t.Fatalf("forced while shutting down: %v", l.c.l)
		}
		// Terminated: gone; the recovery goes on.
		p.at["10.0.1.2"][0].State = "terminated"
		l.clock.now = l.clock.now.Add(30 * time.Second)
		if won, err := s.r.Round(ctx); !won || err != nil || forced(l) != 1 {
			t.Fatalf("not forced once terminated: %v %v %v; %v", won, err, l.c.l, s.logs)
		}
		l.order(fence, "docker swarm init --force-new-cluster 10.0.1.1")
	})

	t.Run("a leader elsewhere: its snapshot kept", func(t *testing.T) {
		l := newLab(t)
		snap := wire.Snapshot{Version: wire.SnapshotVersion, Cluster: "core", Time: start.Add(-10 * time.Second), Publisher: iM2}
		b, _ := snap.Marshal()
		l.b.set(names.StatusKey, b)
		s := newSurvivor(t, l, "m1", iM1)
		s.r.Round(ctx)
		if quorumLoss(l) != nil || l.c.index("s3 put "+names.StatusKey) >= 0 {
			t.Errorf("overwrote a fresh snapshot: %v", l.c.l)
		}
	})

	t.Run("two survivors of five: one forces, the other joins it", func(t *testing.T) {
		l := newLab(t)
		a, b := newSurvivor(t, l, "m1", iM1), newSurvivor(t, l, "m2", iM2)
		for _, s := range []*survivor{a, b} {
			s.e.view.Managers = append(s.e.view.Managers, RemoteManager{nodeID("m4"), "10.0.1.4:2377"}, RemoteManager{nodeID("m5"), "10.0.1.5:2377"})
			s.r.Proof.(*proof).at = map[string][]InstanceAt{"10.0.1.3": {{"i-0000000000000f003", "terminated"}}}
		}
		l.net.answers["10.0.1.1:2377"], l.net.answers["10.0.1.2:2377"] = true, true
		l.clock.now = start
		a.r.Round(ctx)
		b.r.Round(ctx)
		l.clock.now = start.Add(3 * time.Minute)
		if won, _ := a.r.Round(ctx); !won {
			t.Fatalf("a did not force: %v %v", l.c.l, a.logs)
		}
		// The survivors answer each other: only m3, m4, m5 asked of EC2.
		if l.c.index("ec2 describe 10.0.1.3,10.0.1.4,10.0.1.5") < 0 {
			t.Errorf("calls %v", l.c.l)
		}
		if won, _ := b.r.Round(ctx); won || forced(l) != 1 || !b.said("survivor "+iM1+" forced a new cluster: leaving this one to join it") {
			t.Fatalf("b: %v; %v", l.c.l, b.logs)
		}
		b.r.Round(ctx) // the join fails once
		b.r.Round(ctx)
		if b.joins != 2 || !b.said("joined the swarm another survivor recovered") || l.c.count("docker swarm leave") != 1 {
			t.Errorf("b joined %d times; %v; %v", b.joins, b.logs, l.c.l)
		}
	})

	t.Run("the claim of an earlier loss is taken over; a claim of this loss not done waits", func(t *testing.T) {
		l := newLab(t)
		old := wire.RecoveryClaim{Instance: "i-0000000000000f009", Loss: "earlier", Time: start.Add(-24 * time.Hour), Done: true}
		l.b.set(recoveryKey, old.Marshal())
		s := newSurvivor(t, l, "m1", iM1)
		s.r.Proof.(*proof).at = map[string][]InstanceAt{}
		l.clock.now = start
		s.r.Round(ctx)
		l.clock.now = start.Add(3 * time.Minute)
		if won, err := s.r.Round(ctx); !won || err != nil {
			t.Fatalf("%v %v %v", won, err, l.c.l)
		}
		l2 := newLab(t)
		other := newSurvivor(t, l2, "m2", iM2)
		ours := wire.RecoveryClaim{Instance: iM1, Loss: lossOf(other.e.view), Time: start}
		l2.b.set(recoveryKey, ours.Marshal())
		l2.clock.now = start
		other.r.Round(ctx)
		l2.clock.now = start.Add(3 * time.Minute)
		if won, _ := other.r.Round(ctx); won || forced(l2) != 0 || l2.c.index("docker swarm leave") >= 0 || !other.said("survivor "+iM1+" at ") {
			t.Errorf("%v; %v", l2.c.l, other.logs)
		}
	})
}
