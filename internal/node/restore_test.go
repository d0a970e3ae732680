package node

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

const iM3 = "i-0000000000000f003"

// rotator is a fake TokenRotator; caFails makes the CA's rotation fail.
type rotator struct {
	c       *calls
	caFails bool
}

func (r rotator) RotateJoinTokens(context.Context) error {
	r.c.add("docker swarm join-token --rotate")
	return nil
}

func (r rotator) RotateCA(context.Context) error {
	if r.caFails {
		return errors.New("the rotation did not finish")
	}
	r.c.add("docker swarm ca --rotate")
	return nil
}

// after fails unless the last call starting with b comes after the first
// starting with a.
func (l *lab) after(a, b string) {
	l.t.Helper()
	i, j := l.c.index(a), -1
	for k, s := range l.c.l {
		if strings.HasPrefix(s, b) {
			j = k
		}
	}
	if i < 0 || j < i {
		l.t.Fatalf("%q (%d) not after %q (%d): calls\n%s", b, j, a, i, strings.Join(l.c.l, "\n"))
	}
}

// iGone took the backups of the tests: a manager since replaced.
const iGone = "i-0000000000000f009"

// restoreLab is a leader of three managers with a backup taken 20 minutes
// before start by cluster of; it returns the backup's key.
func restoreLab(t *testing.T, of string) (*lab, string) {
	return restoreLabBy(t, of, iGone)
}

// restoreLabBy is restoreLab, the backup taken by the manager by.
func restoreLabBy(t *testing.T, of, by string) (*lab, string) {
	l := newLab(t)
	l.m.Tokens = rotator{c: l.c}
	l.e.addManager(nodeID("m2"), iM2, "10.0.1.2", false)
	l.e.addManager(nodeID("m3"), iM3, "10.0.1.3", false)
	taken := start.Add(-20 * time.Minute)
	key := names.BackupKey(taken, by)
	l.b.set(key, []byte("the backup's archive"))
	l.b.meta[key] = wire.BackupMeta{Taken: taken, SwarmID: "swarm1", Managers: 3, TakenBy: by, Cluster: of}.Metadata()
	return l, key
}

func restoreBody(t *testing.T, cluster, key, from string, at time.Time) (string, string) {
	id := wire.NewRequestID()
	b, err := wire.NewRestoreRequest(wire.RestoreDetail{RequestID: id, Cluster: cluster, Backup: key, FromCluster: from}, at, "arn:aws:sts::123456789012:assumed-role/ops/me", "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	return b, id
}

// The leader demotes the other managers, and only once it is the only
// manager, and they have left, restores the backup on itself; the demoted
// managers leave once demoted, and join the restored swarm as managers
// once it is done.
func TestRestoreLiveSwarm(t *testing.T) {
	l, key := restoreLab(t, "core")
	ctx := context.Background()
	f2, f3 := l.follower(nodeID("m2"), iM2), l.follower(nodeID("m3"), iM3)
	f2.Address, f3.Address = "10.0.1.2", "10.0.1.3"
	followers := []*Manager{f2, f3}
	// The followers' rounds, while the leader waits: a demotion reaches
	// the follower's engine, which leaves when told; a node that left is
	// Down.
	l.clock.tick = func() {
		for _, f := range followers {
			e := f.Engine.(*engine)
			if id := e.self.NodeID; id != "" && l.e.nodes[id].Role == "worker" {
				e.self.ControlAvailable = false
			}
			self := e.self
			f.parts().restores.follow(ctx)
			if e.self.LocalState == StateInactive && self.NodeID != "" {
				l.e.nodes[self.NodeID].State = "down"
			}
		}
	}
	body, id := restoreBody(t, "core", key, "", start)
	l.q.put("r1", body, start)
	l.round()
	l.round()
	l.order("docker node demote "+nodeID("m2"), "docker node demote "+nodeID("m3"), "docker swarm leave", "restore 10.0.1.1", "sqs delete r1")
	if l.c.count("docker swarm leave") != 2 || l.c.index("docker swarm join") >= 0 || l.logged("restoring anyway") {
		t.Fatalf("the demoted managers did not leave before the restore, or joined before it was done: %v", l.c.l)
	}
	l.after("restore 10.0.1.1", "s3 put "+names.ManagersKey)
	if string(l.bk.restored) != "the backup's archive" || l.c.index("docker swarm join-token --rotate") >= 0 {
		t.Fatalf("restored %q; calls %v", l.bk.restored, l.c.l)
	}
	mk, err := wire.ParseRestoreMarker(l.b.objects[restoreKey])
	if err != nil || !mk.Done || mk.RequestID != id || !slices.Equal(mk.Demoted, []string{nodeID("m2"), nodeID("m3")}) {
		t.Fatalf("marker %+v, %v", mk, err)
	}
	s, err := l.m.parts().status.Snapshot(ctx)
	if err != nil || s.Restore == nil || s.Restore.Outcome != wire.RestoreRestored || s.Restore.RequestID != id || s.Restore.Backup != key {
		t.Fatalf("snapshot's restore %+v, %v", s.Restore, err)
	}
	// Done: each demoted manager joins as a manager, once.
	l.clock.tick = nil
	for _, f := range followers {
		if !f.parts().restores.follow(ctx) {
			t.Fatal("a demoted manager did not follow the restore")
		}
		if f.parts().restores.follow(ctx) {
			t.Fatal("followed the same restore twice")
		}
	}
	if l.c.count("docker swarm leave") != 2 || l.c.count("docker swarm join 10.0.1.2 10.0.1.1:2377") != 1 || l.c.count("docker swarm join 10.0.1.3 10.0.1.1:2377") != 1 {
		t.Fatalf("calls %v", l.c.l)
	}
	// A manager that joined since was not demoted: nothing.
	f4 := l.follower(nodeID("m4"), "i-0000000000000f004")
	if f4.parts().restores.follow(ctx) || l.c.count("docker swarm leave") != 2 {
		t.Fatalf("a manager not demoted left: %v", l.c.l)
	}
}

// A backup taken by a manager that is still one (a follower: the usual
// case) is restored by that manager, whose address the backup's swarm
// knows its manager by: the leader demotes the others, they leave, it
// leaves too, the taker restores on itself, and the others join it.
func TestRestoreByItsTaker(t *testing.T) {
	l, key := restoreLabBy(t, "core", iM2)
	ctx := context.Background()
	f2, f3 := l.follower(nodeID("m2"), iM2), l.follower(nodeID("m3"), iM3)
	f2.Address, f3.Address = "10.0.1.2", "10.0.1.3"
	followers := []*Manager{f2, f3}
	l.clock.tick = func() {
		for _, f := range followers {
			e := f.Engine.(*engine)
			if id := e.self.NodeID; id != "" && l.e.nodes[id] != nil && l.e.nodes[id].Role == "worker" {
				e.self.ControlAvailable = false
			}
			self := e.self
			f.parts().restores.follow(ctx)
			if e.self.LocalState == StateInactive && self.NodeID != "" {
				l.e.nodes[self.NodeID].State = "down"
			}
		}
	}
	body, id := restoreBody(t, "core", key, "", start)
	l.q.put("r1", body, start)
	l.round()
	l.round()
	l.clock.tick = nil
	if l.c.count("docker swarm leave") != 3 || l.c.index("restore ") >= 0 || l.c.index("sqs delete r1") < 0 || !l.logged("leaving it for manager "+iM2) {
		t.Fatalf("calls %v; logs %v", l.c.l, l.logs)
	}
	// The taker restores, out of the swarm; then the others join it.
	f2.Engine.(*engine).self = Self{LocalState: StateInactive}
	l.bk.onRestore = func() {
		f2.Engine.(*engine).self = Self{NodeID: nodeID("m2"), LocalState: StateActive, ControlAvailable: true}
		l.e.addManager(nodeID("m2"), iM2, "10.0.1.2", true)
		// The old leader's node, out of the restored swarm's Raft.
		l.e.nodes[nodeID("m1")].Reachability, l.e.nodes[nodeID("m1")].Leader = "unreachable", false
	}
	if !f2.parts().restores.follow(ctx) {
		t.Fatal("the taker did not restore")
	}
	if string(l.bk.restored) != "the backup's archive" || l.c.count("restore 10.0.1.2") != 1 || l.c.index("restore 10.0.1.1") >= 0 {
		t.Fatalf("restored %q; calls %v", l.bk.restored, l.c.l)
	}
	mk, err := wire.ParseRestoreMarker(l.b.objects[restoreKey])
	if err != nil || !mk.Done || mk.Restorer != iM2 || f2.parts().restores.restored == nil || f2.parts().restores.restored.Outcome != wire.RestoreRestored || f2.parts().restores.restored.RequestID != id {
		t.Fatalf("marker %+v, %v; outcome %+v", mk, err, f2.parts().restores.restored)
	}
	if f2.parts().restores.follow(ctx) {
		t.Fatal("restored twice")
	}
	l.m.Engine.(*engine).self = Self{LocalState: StateInactive}
	for _, f := range []*Manager{l.m, f3} {
		if !f.parts().restores.follow(ctx) {
			t.Fatal("a manager that left did not join")
		}
	}
	if l.c.count("docker swarm join 10.0.1.1 10.0.1.2:2377") != 1 || l.c.count("docker swarm join 10.0.1.3 10.0.1.2:2377") != 1 {
		t.Fatalf("calls %v", l.c.l)
	}
}

// Demoted managers that do not leave (their agents stopped) hold no
// quorum of anything: the restore goes on after a bounded wait.
func TestRestoreDemotedStay(t *testing.T) {
	l, key := restoreLab(t, "core")
	body, _ := restoreBody(t, "core", key, "", start)
	l.q.put("r1", body, start)
	restored := false
	l.bk.onRestore = func() {
		// The restored swarm: the backup's managers, out of its Raft.
		restored = true
		l.e.addManager(nodeID("m2"), iM2, "10.0.1.2", false).Reachability = "unreachable"
	}
	l.round()
	l.round()
	if !restored || !l.logged("did not leave within 2m0s: restoring anyway") || l.clock.now.Sub(start) < restoreWait {
		t.Fatalf("restored %v at %s; logs %v", restored, l.clock.now, l.logs)
	}
	s, _ := l.m.parts().status.Snapshot(context.Background())
	if s.Restore == nil || s.Restore.Outcome != wire.RestoreRestored {
		t.Fatalf("snapshot's restore %+v", s.Restore)
	}
}

// A demoted manager that is a manager of a swarm with a leader once the
// restore is done (the restored swarm took it in) does not leave: that
// would take a member from the restored swarm's Raft. One whose swarm has
// no leader (it never heard of its demotion) leaves.
func TestRestoreFollowerAlreadyIn(t *testing.T) {
	l, key := restoreLab(t, "core")
	ctx := context.Background()
	l.b.set(restoreKey, wire.RestoreMarker{RequestID: wire.NewRequestID(), Leader: iM1, Backup: key, Demoted: []string{nodeID("m2")}, Done: true}.Marshal())
	f2 := l.follower(nodeID("m2"), iM2)
	if f2.parts().restores.follow(ctx) || l.c.index("docker swarm leave") >= 0 || !l.logged("a manager of the swarm restored from") {
		t.Fatalf("calls %v; logs %v", l.c.l, l.logs)
	}
	l, key = restoreLab(t, "core")
	l.b.set(restoreKey, wire.RestoreMarker{RequestID: wire.NewRequestID(), Leader: iM1, Backup: key, Demoted: []string{nodeID("m2")}, Done: true}.Marshal())
	f2 = l.follower(nodeID("m2"), iM2)
	f2.Address = "10.0.1.2"
	f2.Engine = noLeader{f2.Engine.(*engine)}
	if err := l.m.parts().join.publish(ctx, true); err != nil {
		t.Fatal(err)
	}
	if !f2.parts().restores.follow(ctx) || l.c.index("docker swarm leave") < 0 || l.c.index("docker swarm join 10.0.1.2") < 0 {
		t.Fatalf("calls %v; logs %v", l.c.l, l.logs)
	}
}

// noLeader is an engine whose swarm has no leader: listing its nodes fails.
type noLeader struct{ *engine }

func (noLeader) Nodes(context.Context) ([]Node, error) {
	return nil, errors.New("rpc error: code = Unknown desc = The swarm does not have a leader")
}

// Refusals leave the swarm as it is and say why in the snapshot; a
// request too old or for another cluster is dropped.
func TestRestoreRefusals(t *testing.T) {
	for _, c := range []struct {
		name, of, cluster, from, want string
		key                           func(string) string
		unreachable                   bool
		age                           time.Duration
	}{
		{name: "missing", of: "core", cluster: "core", key: func(string) string { return names.BackupKey(start.Add(-time.Hour), iM2) }, want: "no backup"},
		{name: "another cluster's", of: "prod", cluster: "core", want: "taken by the managers of cluster prod: restoring it needs --from-cluster prod"},
		{name: "not the cluster named", of: "prod", cluster: "core", from: "stage", want: "taken by the managers of cluster prod, not stage"},
		{name: "ours named as another's", of: "core", cluster: "core", from: "prod", want: "taken by the managers of cluster core, not prod"},
		{name: "a manager unreachable", of: "core", cluster: "core", unreachable: true, want: "is unreachable: a restore demotes every other manager first"},
		{name: "too old", of: "core", cluster: "core", age: 11 * time.Minute},
		{name: "another cluster's request", of: "core", cluster: "prod"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, key := restoreLab(t, c.of)
			if c.key != nil {
				key = c.key(key)
			}
			if c.unreachable {
				l.e.nodes[nodeID("m3")].Reachability = "unreachable"
			}
			body, id := restoreBody(t, c.cluster, key, c.from, start)
			l.q.put("r1", body, start.Add(-c.age))
			l.round()
			l.round()
			if l.c.index("docker node demote") >= 0 || l.c.index("restore ") >= 0 || l.c.index("sqs delete r1") < 0 || l.c.index("s3 put "+restoreKey) >= 0 {
				t.Fatalf("calls %v", l.c.l)
			}
			s, err := l.m.parts().status.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if s.Restore != nil {
					t.Fatalf("a dropped request has an outcome: %+v", s.Restore)
				}
				return
			}
			if s.Restore == nil || s.Restore.Outcome != wire.RestoreRefused || s.Restore.RequestID != id || !strings.Contains(s.Restore.Reason, c.want) || !l.logged(c.want) {
				t.Fatalf("snapshot's restore %+v; logs %v", s.Restore, l.logs)
			}
		})
	}
}

// Another cluster's backup, named, is restored and the swarm's CA and
// join tokens rotated, so that the other cluster's nodes are never let in.
func TestRestoreOtherClusterRotatesTokens(t *testing.T) {
	l, key := restoreLab(t, "prod")
	body, _ := restoreBody(t, "core", key, "prod", start)
	l.q.put("r1", body, start)
	l.round()
	l.round()
	l.order("docker node demote", "restore 10.0.1.1", "docker swarm ca --rotate", "docker swarm join-token --rotate")
	l.after("docker swarm join-token --rotate", "s3 put "+names.ManagersKey)
	s, _ := l.m.parts().status.Snapshot(context.Background())
	if s.Restore == nil || s.Restore.Outcome != wire.RestoreRestored || !strings.Contains(s.Restore.Reason, "the CA and the join tokens rotated") {
		t.Fatalf("snapshot's restore %+v", s.Restore)
	}
	// A CA that could not be rotated fails the restore: the other
	// cluster's nodes would come back with certificates of its CA.
	l, key = restoreLab(t, "prod")
	l.m.Tokens = rotator{c: l.c, caFails: true}
	body, _ = restoreBody(t, "core", key, "prod", start)
	l.q.put("r1", body, start)
	l.round()
	l.round()
	s, _ = l.m.parts().status.Snapshot(context.Background())
	if s.Restore == nil || s.Restore.Outcome != wire.RestoreFailed || !strings.Contains(s.Restore.Reason, "rotating the CA and join tokens of cluster prod's swarm failed: the rotation did not finish") {
		t.Fatalf("snapshot's restore %+v", s.Restore)
	}
	// Without the means to rotate them, it is refused.
	l, key = restoreLab(t, "prod")
	l.m.Tokens = nil
	body, _ = restoreBody(t, "core", key, "prod", start)
	l.q.put("r1", body, start)
	l.round()
	l.round()
	if l.c.index("docker node demote") >= 0 || !l.logged("the join tokens cannot be rotated here") {
		t.Fatalf("calls %v; logs %v", l.c.l, l.logs)
	}
}

// A restore cut short (the agent restarted while the engine was being
// restored) is not done again: the demoted managers are let go.
func TestRestoreCutShort(t *testing.T) {
	l, key := restoreLab(t, "core")
	body, id := restoreBody(t, "core", key, "", start)
	l.b.set(restoreKey, wire.RestoreMarker{RequestID: id, Leader: iM1, Backup: key, Demoted: []string{nodeID("m2")}}.Marshal())
	l.m.State.Save(restoreRun, id)
	l.q.put("r1", body, start)
	l.round()
	l.round()
	mk, _ := wire.ParseRestoreMarker(l.b.objects[restoreKey])
	s, _ := l.m.parts().status.Snapshot(context.Background())
	if l.c.index("restore ") >= 0 || !mk.Done || s.Restore == nil || s.Restore.Outcome != wire.RestoreFailed {
		t.Fatalf("calls %v; marker %+v; restore %+v", l.c.l, mk, s.Restore)
	}
}

// A leader that left for the restorer, its agent restarted before it
// said so, says so then: the restorer waits for it.
func TestRestoreLeaderLeftSaid(t *testing.T) {
	l, key := restoreLabBy(t, "core", iM2)
	ctx := context.Background()
	l.b.set(restoreKey, wire.RestoreMarker{RequestID: wire.NewRequestID(), Leader: iM1, Backup: key, Restorer: iM2, Demoted: []string{nodeID("m2")}}.Marshal())
	if l.m.parts().restores.follow(ctx) {
		t.Fatal("the leader, still in the swarm, took itself for gone")
	}
	l.e.self = Self{LocalState: StateInactive}
	if !l.m.parts().restores.follow(ctx) {
		t.Fatal("the leader out of the swarm did not follow")
	}
	if mk, _ := wire.ParseRestoreMarker(l.b.objects[restoreKey]); !mk.LeaderLeft {
		t.Fatalf("marker %+v", mk)
	}
}

// The manager that took another cluster's backup restores it and rotates
// the CA and the join tokens too, before it publishes the join material;
// a CA it cannot rotate fails the restore.
func TestRestorerRotatesCA(t *testing.T) {
	for _, caFails := range []bool{false, true} {
		l, key := restoreLab(t, "prod")
		l.m.Tokens = rotator{c: l.c, caFails: caFails}
		mk := wire.RestoreMarker{RequestID: wire.NewRequestID(), Leader: iM2, Backup: key, Restorer: iM1, Rotate: true, Time: start}
		l.m.parts().restores.restoreAsRestorer(context.Background(), mk)
		if caFails {
			if l.m.parts().restores.restored == nil || l.m.parts().restores.restored.Outcome != wire.RestoreFailed || !strings.Contains(l.m.parts().restores.restored.Reason, "rotating the CA and join tokens failed") ||
				l.c.index("docker swarm join-token --rotate") >= 0 {
				t.Fatalf("outcome %+v; calls %v", l.m.parts().restores.restored, l.c.l)
			}
			continue
		}
		l.order("restore 10.0.1.1", "docker swarm ca --rotate", "docker swarm join-token --rotate", "s3 put "+names.ManagersKey)
		if l.m.parts().restores.restored == nil || l.m.parts().restores.restored.Outcome != wire.RestoreRestored || !strings.Contains(l.m.parts().restores.restored.Reason, "the CA and the join tokens rotated") {
			t.Fatalf("outcome %+v", l.m.parts().restores.restored)
		}
	}
}
