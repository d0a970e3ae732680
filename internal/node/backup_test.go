package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

const iM2 = "i-0000000000000f002"

var backupsPrefix = names.ControlKey(names.BackupsPrefix) + "/"

// backupsTaken counts the backups written.
func (l *lab) backupsTaken() int { return l.c.count("s3 put " + backupsPrefix) }

// A lone manager backs up at once, then every BackupEvery, and soon after
// the swarm changed (its members or its objects), BackupSpacing apart at
// most; each backup says when, of which swarm, of how many managers and
// by whom.
func TestLoneManagerBackups(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	step := func(what string, at time.Time, want int) {
		t.Helper()
		l.clock.now = at
		if err := l.m.parts().backups.backUp(ctx, false); err != nil {
			t.Fatal(err)
		}
		if got := l.backupsTaken(); got != want {
			t.Fatalf("%s: %d backups, want %d: %v", what, got, want, l.c.l)
		}
	}
	step("first", start, 1)
	key := names.BackupKey(start, iM1)
	meta, err := wire.ParseBackupMeta(l.b.meta[key])
	if err != nil || meta != (wire.BackupMeta{Taken: start, SwarmID: "swarm1", Managers: 1, TakenBy: iM1, Cluster: "core"}) {
		t.Fatalf("backup %s: %+v, %v (objects %v)", key, meta, err, l.b.objects)
	}
	step("within BackupEvery", start.Add(10*time.Minute), 1)
	w := l.e.addWorker(nodeID("w1"), iW1)
	step("a node joined", start.Add(10*time.Minute), 2)
	delete(l.e.nodes, w.ID)
	step("a node left, within the spacing", start.Add(10*time.Minute+10*time.Second), 2)
	step("after the spacing", start.Add(10*time.Minute+l.m.T.BackupSpacing), 3)
	l.e.objects = []string{"secret s1 11"}
	step("a secret added", start.Add(11*time.Minute), 4)
	l.e.objects = []string{"secret s1 12"}
	step("a secret updated, within the spacing", start.Add(11*time.Minute+time.Second), 4)
	step("a secret updated, after the spacing", start.Add(12*time.Minute), 5)
	step("nothing changed", start.Add(26*time.Minute), 5)
	step("BackupEvery", start.Add(27*time.Minute), 6)
	if err := l.m.parts().backups.backUp(ctx, true); err != nil || l.backupsTaken() != 7 {
		t.Fatalf("asked for: %v, %v", err, l.c.l)
	}
	// The snapshot says the newest.
	s, err := l.m.parts().status.Snapshot(ctx)
	if err != nil || s.LastBackup == nil || !s.LastBackup.Equal(start.Add(27*time.Minute)) {
		t.Errorf("snapshot's last backup %v, %v", s.LastBackup, err)
	}
}

// The decisions of when a backup is due.
func TestBackupDue(t *testing.T) {
	tm := Defaults()
	last := start
	for _, tc := range []struct {
		name   string
		rec    backupRecord
		digest string
		now    time.Time
		want   string
	}{
		{"none yet", backupRecord{}, "d", start, "none yet"},
		{"asked for", backupRecord{Time: last, Members: "d", Wanted: "asked for"}, "d", start, "asked for"},
		{"fresh, unchanged", backupRecord{Time: last, Members: "d"}, "d", start.Add(tm.BackupEvery - time.Second), ""},
		{"old", backupRecord{Time: last, Members: "d"}, "d", start.Add(tm.BackupEvery), "the last is 15m0s old"},
		{"changed, within the spacing", backupRecord{Time: last, Members: "d"}, "e", start.Add(tm.BackupSpacing - time.Second), ""},
		{"changed", backupRecord{Time: last, Members: "d"}, "e", start.Add(tm.BackupSpacing), "the swarm changed"},
	} {
		if got := backupDue(tc.rec, tc.digest, tc.now, tm); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The follower that takes a backup: never the leader, never while fewer
// than a quorum plus one managers are reachable; the first by node id,
// those whose order lapsed last.
func TestChooseFollower(t *testing.T) {
	mgr := func(id string, leader bool, reach string) Node {
		return Node{ID: id, Role: "manager", ManagerAddr: "10.0.1.1:2377", Leader: leader, Reachability: reach}
	}
	worker := Node{ID: "w", Role: "worker"}
	for _, tc := range []struct {
		name   string
		nodes  []Node
		lapsed []string
		want   string
		why    string
	}{
		{"three reachable", []Node{mgr("a", true, "reachable"), mgr("c", false, "reachable"), mgr("b", false, "reachable"), worker}, nil, "b", ""},
		{"the leader first by id", []Node{mgr("a", false, "reachable"), mgr("b", true, "reachable"), mgr("c", false, "reachable")}, nil, "a", ""},
		{"two of three", []Node{mgr("a", true, "reachable"), mgr("b", false, "unreachable"), mgr("c", false, "reachable")}, nil, "", "2 of 3 managers reachable; a follower pauses for the copy only while 3 are"},
		{"four of five", []Node{mgr("a", true, "reachable"), mgr("b", false, "unreachable"), mgr("c", false, "reachable"), mgr("d", false, "reachable"), mgr("e", false, "reachable")}, nil, "c", ""},
		{"three of five", []Node{mgr("a", true, "reachable"), mgr("b", false, "unreachable"), mgr("c", false, "unreachable"), mgr("d", false, "reachable"), mgr("e", false, "reachable")}, nil, "", "3 of 5 managers reachable; a follower pauses for the copy only while 4 are"},
		{"lapsed last", []Node{mgr("a", true, "reachable"), mgr("b", false, "reachable"), mgr("c", false, "reachable")}, []string{"b"}, "c", ""},
		{"all lapsed: by id", []Node{mgr("a", true, "reachable"), mgr("b", false, "reachable"), mgr("c", false, "reachable")}, []string{"c", "b"}, "b", ""},
		{"two managers", []Node{mgr("a", true, "reachable"), mgr("b", false, "reachable")}, nil, "", "2 of 2 managers reachable; a follower pauses for the copy only while 3 are"},
	} {
		got, why := chooseFollower(tc.nodes, tc.lapsed)
		if got != tc.want || why != tc.why {
			t.Errorf("%s: %q (%q), want %q (%q)", tc.name, got, why, tc.want, tc.why)
		}
	}
}

// follower is a follower's housekeeping in the same swarm and bucket as
// the lab's leader.
func (l *lab) follower(id, instance string) *Manager {
	e := *l.e // the same nodes
	e.self = Self{NodeID: id, LocalState: StateActive, ControlAvailable: true}
	f := *l.m
	f.InstanceID, f.Engine, f.Objects, f.State = instance, &e, &e, State{Dir: l.t.TempDir()}
	f.p = nil // its own parts, of its own engine and state
	return &f
}

// With three managers the leader orders a backup of one follower, which
// takes it (and only it, once); the leader sees it, removes the order,
// orders the next when due, and another follower when one lets its order
// lapse.
func TestFollowerBackups(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	l.e.addManager(nodeID("m2"), iM2, "10.0.1.2", false)
	l.e.addManager(nodeID("m3"), "i-0000000000000f003", "10.0.1.3", false)
	f2, f3 := l.follower(nodeID("m2"), iM2), l.follower(nodeID("m3"), "i-0000000000000f003")
	orderKey := names.ControlKey(names.BackupOrder)
	if err := l.m.parts().backups.backUp(ctx, false); err != nil {
		t.Fatal(err)
	}
	order, err := wire.ParseBackupOrder(l.b.objects[orderKey])
	if err != nil || order.Node != nodeID("m2") || order.Reason != "none yet" || l.c.index("archive") >= 0 {
		t.Fatalf("order %+v, %v; calls %v", order, err, l.c.l)
	}
	// The leader does not order again while the follower is at it.
	l.clock.now = start.Add(10 * time.Second)
	l.m.parts().backups.backUp(ctx, false)
	if l.c.count("s3 put "+orderKey) != 1 {
		t.Fatalf("ordered again: %v", l.c.l)
	}
	// Not named: nothing.
	if err := f3.parts().backups.followOrder(ctx); err != nil || l.c.index("archive") >= 0 {
		t.Fatalf("another follower took it: %v, %v", err, l.c.l)
	}
	if err := f2.parts().backups.followOrder(ctx); err != nil || l.backupsTaken() != 1 {
		t.Fatalf("the follower ordered: %v, %v", err, l.c.l)
	}
	meta, _ := wire.ParseBackupMeta(l.b.meta[names.BackupKey(l.clock.now, iM2)])
	if meta.TakenBy != iM2 || meta.Managers != 3 {
		t.Errorf("metadata %+v", meta)
	}
	f2.parts().backups.followOrder(ctx)
	if l.backupsTaken() != 1 {
		t.Fatalf("the same order taken twice: %v", l.c.l)
	}
	l.clock.now = start.Add(20 * time.Second)
	l.m.parts().backups.backUp(ctx, false)
	if _, ok := l.b.objects[orderKey]; ok || !l.logged("follower "+nodeID("m2")+" took the backup ordered") {
		t.Fatalf("order left: %v; %v", l.c.l, l.logs)
	}
	s, _ := l.m.parts().status.Snapshot(ctx)
	if s.LastBackup == nil || !s.LastBackup.Equal(start.Add(10*time.Second)) {
		t.Errorf("snapshot's last backup %v", s.LastBackup)
	}
	// Not due again before BackupEvery.
	l.clock.now = start.Add(10 * time.Minute)
	l.m.parts().backups.backUp(ctx, false)
	if l.c.count("s3 put "+orderKey) != 1 {
		t.Fatalf("ordered again within BackupEvery: %v", l.c.l)
	}
	// Due: m2 is ordered, lets it lapse; then m3.
	l.clock.now = start.Add(16 * time.Minute)
	l.m.parts().backups.backUp(ctx, false)
	l.clock.now = l.clock.now.Add(l.m.T.BackupOrderWait)
	if err := f2.parts().backups.followOrder(ctx); err != nil || l.backupsTaken() != 1 {
		t.Fatalf("took a lapsed order: %v, %v", err, l.c.l)
	}
	l.m.parts().backups.backUp(ctx, false)
	order, _ = wire.ParseBackupOrder(l.b.objects[orderKey])
	if order.Node != nodeID("m3") || !l.logged("did not take the backup ordered") {
		t.Fatalf("after a lapse: %+v; %v", order, l.logs)
	}
	// m3 refuses while a manager is unreachable: the others could not
	// keep the quorum while it pauses.
	l.e.nodes[nodeID("m2")].Reachability = "unreachable"
	var said []string
	f3.Log = func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	if err := f3.parts().backups.followOrder(ctx); err != nil || l.c.index("archive") != l.c.count("archive")-1 && l.backupsTaken() != 1 {
		t.Fatalf("%v, %v", err, l.c.l)
	}
	if l.backupsTaken() != 1 || len(said) != 1 || !strings.Contains(said[0], "2 of 3 managers reachable") {
		t.Fatalf("took a backup without a quorum plus one: %v; %v", l.c.l, said)
	}
	// And the leader orders none then, and says why once.
	l.clock.now = l.clock.now.Add(l.m.T.BackupOrderWait)
	l.m.parts().backups.backUp(ctx, false)
	l.clock.now = l.clock.now.Add(time.Second)
	l.m.parts().backups.backUp(ctx, false)
	if n := strings.Count(strings.Join(l.logs, "\n"), "but none is taken: 2 of 3 managers reachable"); n != 1 {
		t.Errorf("said %d times why no backup: %v", n, l.logs)
	}
}

// A follower that leads by the time it reads the order does not pause.
func TestLeaderNeverPauses(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	l.e.addManager(nodeID("m2"), iM2, "10.0.1.2", false)
	l.e.addManager(nodeID("m3"), "i-0000000000000f003", "10.0.1.3", false)
	l.m.parts().backups.backUp(ctx, false)
	l.e.nodes[nodeID("m1")].Leader, l.e.nodes[nodeID("m2")].Leader = false, true
	var said []string
	f2 := l.follower(nodeID("m2"), iM2)
	f2.Log = func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	if err := f2.parts().backups.followOrder(ctx); err != nil || l.c.index("archive") >= 0 || len(said) != 1 || !strings.Contains(said[0], "leads the swarm") {
		t.Fatalf("%v, %v, %v", err, l.c.l, said)
	}
}

// Only the newest BackupKeep are kept; the lone manager's single backup
// of before goes once there is a newer one.
func TestPruneBackups(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	legacy := names.ControlKey(names.Backup)
	l.b.set(legacy, []byte("old"))
	for i := range wire.BackupKeep + 2 {
		l.b.set(names.BackupKey(start.Add(time.Duration(i-20)*time.Minute), iM2), []byte("b"))
	}
	l.m.State.Save(backupState, backupRecord{Time: start, Members: "x"})
	if err := l.m.parts().backups.backUp(ctx, false); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{names.BackupKey(start.Add(-20*time.Minute), iM2), names.BackupKey(start.Add(-19*time.Minute), iM2), legacy} {
		if _, ok := l.b.objects[k]; ok {
			t.Errorf("%s kept", k)
		}
	}
	if got, _ := l.b.List(ctx, backupsPrefix); len(got) != wire.BackupKeep {
		t.Errorf("%d kept", len(got))
	}
}

// The manager count is recorded, and when it changed: a restore refuses
// a backup taken before.
func TestManagersChanged(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	changed := names.ControlKey(names.ManagersChanged)
	l.e.addManager(nodeID("m2"), "i-0000000000000f002", "10.0.1.2", false)
	l.e.addManager(nodeID("m3"), "i-0000000000000f003", "10.0.1.3", false)
	l.m.parts().backups.backUp(ctx, false)
	l.m.parts().backups.backUp(ctx, false)
	// First recorded: no change since (0), as the shell managers write it.
	if got := string(l.b.objects[changed]); got != "3 0\n" || l.c.count("s3 put "+changed) != 1 {
		t.Errorf("managers changed %q, calls %v", got, l.c.l)
	}
	delete(l.e.nodes, nodeID("m2"))
	delete(l.e.nodes, nodeID("m3"))
	l.clock.now = start.Add(time.Hour)
	l.m.parts().backups.backUp(ctx, false)
	if got, want := string(l.b.objects[changed]), fmt.Sprintf("1 %d\n", start.Add(time.Hour).Unix()); got != want || l.c.count("archive") != 1 {
		t.Errorf("managers changed %q, want %q; calls %v", got, want, l.c.l)
	}
	// Another leader's record, written while this manager did not lead,
	// is read again when it leads again.
	l.e.nodes[nodeID("m1")].Leader = false
	l.round()
	l.b.set(changed, []byte("3 1700000000\n"))
	l.e.nodes[nodeID("m1")].Leader = true
	l.clock.now = start.Add(2 * time.Hour)
	l.m.parts().backups.backUp(ctx, false)
	if got, want := string(l.b.objects[changed]), fmt.Sprintf("1 %d\n", start.Add(2*time.Hour).Unix()); got != want {
		t.Errorf("managers changed %q after another leader's record, want %q", got, want)
	}
	// A record the shell managers wrote is read, not rewritten.
	l3 := newLab(t)
	l3.b.set(changed, []byte("1 1700000000\n"))
	l3.m.parts().backups.backUp(ctx, false)
	if l3.c.count("s3 put "+changed) != 0 || l3.c.count("archive") != 1 {
		t.Errorf("a lone manager recorded: %v", l3.c.l)
	}
}

// A manager initialising restores the newest backup not older than the
// last change of the manager count, the lone manager's of before last;
// none left: a new swarm.
func TestRestoreChoice(t *testing.T) {
	ctx := context.Background()
	at := func(m int) time.Time { return start.Add(time.Duration(m) * time.Minute) }
	for _, tc := range []struct {
		name    string
		taken   []int // minutes after start, the backups'
		legacy  bool
		changed int // minutes after start
		want    string
	}{
		{"the newest", []int{1, 5, 3}, true, 0, names.BackupKey(at(5), iM2)},
		{"the newest after the change", []int{1, 5, 3}, false, 4, names.BackupKey(at(5), iM2)},
		{"older than the change refused", []int{1, 2}, false, 3, ""},
		{"at the change", []int{1, 3}, false, 3, names.BackupKey(at(3), iM2)},
		{"the lone manager's of before", nil, true, 0, names.ControlKey(names.Backup)},
		{"none", nil, false, 0, ""},
		{"another cluster's refused", []int{1, 5}, false, 0, names.BackupKey(at(1), iM2)},
	} {
		l := newLab(t)
		for _, m := range tc.taken {
			k := names.BackupKey(at(m), iM2)
			l.b.set(k, []byte(k))
			l.b.meta[k] = wire.BackupMeta{Taken: at(m), Managers: 3, TakenBy: iM2, Cluster: "core"}.Metadata()
			if strings.HasPrefix(tc.name, "another cluster's") && m == 5 {
				l.b.meta[k] = wire.BackupMeta{Taken: at(m), Managers: 3, TakenBy: iM2, Cluster: "prod"}.Metadata()
			}
		}
		if tc.legacy {
			l.b.set(names.ControlKey(names.Backup), []byte(names.ControlKey(names.Backup)))
			l.b.meta[names.ControlKey(names.Backup)] = map[string]string{"taken": fmt.Sprint(start.Unix())}
		}
		l.b.set(names.ControlKey(names.ManagersChanged), []byte(fmt.Sprintf("3 %d\n", at(tc.changed).Unix())))
		if tc.changed == 0 {
			l.b.set(names.ControlKey(names.ManagersChanged), []byte("3 0\n"))
		}
		key, archive, err := l.m.restoreCandidate(ctx)
		if err != nil || key != tc.want || key != string(archive) {
			t.Errorf("%s: %q, %v", tc.name, key, err)
		}
	}
}

// A forced or restored swarm lists its lost managers (Down, out of the
// Raft) until they are removed: its one manager backs up itself.
func TestForcedSwarmBacksUpItself(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	for _, id := range []string{"m2", "m3"} {
		n := l.e.addManager(nodeID(id), "i-0000000000000f0"+id[1:]+"0", "10.0.1."+id[1:], false)
		n.State, n.ManagerAddr, n.Reachability = "down", "", ""
	}
	if err := l.m.parts().backups.backUp(ctx, false); err != nil || l.backupsTaken() != 1 || l.c.count("s3 put "+names.ControlKey(names.BackupOrder)) != 0 {
		t.Fatalf("%v: %v", err, l.c.l)
	}
}

// A backup request (clusterctl backup) makes a backup due now; one too old
// or of another cluster is dropped. The snapshot lists the backups kept,
// with their metadata.
func TestBackupRequest(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	l.round() // the first backup
	if l.backupsTaken() != 1 {
		t.Fatalf("%v", l.c.l)
	}
	body := func(cluster string) string {
		b, err := wire.NewBackupRequest(wire.NewRequestID(), l.clock.now, "arn:aws:sts::123456789012:assumed-role/ops/me", "eu-west-1", cluster)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	l.clock.now = start.Add(time.Minute)
	l.q.put("r1", body("prod"), l.clock.now)
	l.q.put("r2", body("core"), l.clock.now.Add(-l.m.T.RequestMaxAge-time.Second))
	l.round()
	l.round()
	if l.backupsTaken() != 1 || !l.logged("a backup request for cluster \"prod\"") || !l.logged("dropping backup request") {
		t.Fatalf("%v; %v", l.c.l, l.logs)
	}
	l.clock.now = start.Add(2 * time.Minute)
	l.q.put("r3", body("core"), l.clock.now)
	l.round()
	l.round()
	if l.backupsTaken() != 2 || l.c.index("sqs delete r3") < 0 {
		t.Fatalf("asked for, no backup: %v; %v", l.c.l, l.logs)
	}
	l.round() // the listing of the next round has it
	s, err := l.m.parts().status.Snapshot(ctx)
	if err != nil || len(s.Backups) != 2 || s.Backups[1].Key != names.BackupKey(s.Backups[1].Taken, iM1) || s.Backups[1].Taken.Before(start.Add(2*time.Minute)) ||
		s.Backups[1].TakenBy != iM1 || s.Backups[1].Managers != 1 || s.Backups[1].SwarmID != "swarm1" || s.Backups[1].Size == 0 {
		t.Errorf("snapshot's backups %+v, %v", s.Backups, err)
	}
}

// The core's BackupKeep is how many are kept.
func TestPruneBackupsKeep(t *testing.T) {
	l := newLab(t)
	l.m.BackupKeep = 3
	for i := range 5 {
		l.b.set(names.BackupKey(start.Add(time.Duration(i-20)*time.Minute), iM2), []byte("b"))
	}
	l.m.State.Save(backupState, backupRecord{Time: start, Members: "x"})
	if err := l.m.parts().backups.backUp(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.b.List(context.Background(), backupsPrefix); len(got) != 3 || got[0].Key != names.BackupKey(start.Add(-18*time.Minute), iM2) {
		t.Errorf("kept %v", got)
	}
}
