package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/wire"
)

func replicated(id, name string, n int) wire.SnapshotService {
	sv := wire.SnapshotService{ID: id, Name: name}
	sv.Mode.Replicated = &struct{ Replicas *int }{Replicas: &n}
	return sv
}

func global(id, name string) wire.SnapshotService {
	sv := wire.SnapshotService{ID: id, Name: name}
	sv.Mode.Global = &struct{}{}
	return sv
}

func task(service, state string) wire.SnapshotTask {
	t := wire.SnapshotTask{ServiceID: service, DesiredState: "running"}
	t.Status.State = state
	return t
}

func swarmNode(id, role, state string) wire.SwarmNode {
	n := wire.SwarmNode{NodeID: id, InstanceID: "i-" + id, Role: role, State: state, Availability: "active"}
	if role == "manager" {
		n.ManagerStatus = "reachable"
	}
	return n
}

// The cluster is valid only when every node is ready and proven, the
// swarm has as many nodes as Auto Scaling has instances in service, every
// replicated service runs its count, and nothing has been pending for
// longer than the bound.
func TestValidateSwarm(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	healthy := func() *wire.Snapshot {
		return &wire.Snapshot{Time: at,
			Nodes:    []wire.SwarmNode{swarmNode("m1", "manager", "ready"), swarmNode("a1", "worker", "ready"), swarmNode("a2", "worker", "ready")},
			Services: []wire.SnapshotService{replicated("s1", "web", 2), global("s2", "agent")},
			Tasks:    []wire.SnapshotTask{task("s1", "running"), task("s1", "running"), task("s2", "running")},
		}
	}
	for _, tc := range []struct {
		name      string
		edit      func(*wire.Snapshot)
		inService int
		want      []string // substrings of the problems; none: valid
	}{
		{"healthy", nil, 3, nil},
		{"no snapshot", nil, -1, []string{"no status snapshot"}},
		{"node down", func(s *wire.Snapshot) { s.Nodes[1].State = "down" }, 3, []string{"node i-a1 is down"}},
		{"node unproven", func(s *wire.Snapshot) { s.Nodes[2].Unproven = "no such instance" }, 3, []string{"node i-a2 is not proven: no such instance"}},
		{"identity problem", func(s *wire.Snapshot) { s.Nodes[2].IdentityProblem = "address 10.0.0.9 is not the instance's" }, 3, []string{"node i-a2 is not proven"}},
		{"manager unreachable", func(s *wire.Snapshot) { s.Nodes[0].ManagerStatus = "unreachable" }, 3, []string{"manager i-m1 is unreachable"}},
		{"a node not joined yet", nil, 4, []string{"the swarm has 3 nodes, Auto Scaling 4 instances in service"}},
		{"a terminated node still listed", nil, 2, []string{"the swarm has 3 nodes, Auto Scaling 2"}},
		{"service short of its count", func(s *wire.Snapshot) { s.Tasks = s.Tasks[1:] }, 3, []string{"service web runs 1 of 2 tasks"}},
		{"a task shutting down does not count", func(s *wire.Snapshot) { s.Tasks[0].DesiredState = "shutdown" }, 3, []string{"service web runs 1 of 2 tasks"}},
		{"global service without a count", func(s *wire.Snapshot) { s.Tasks = s.Tasks[:2] }, 3, nil},
		{"pending briefly", func(s *wire.Snapshot) {
			s.Services = append(s.Services, replicated("s3", "api", 0))
			s.Tasks = append(s.Tasks, task("s3", "pending"))
		}, 3, nil},
		{"several problems, sorted", func(s *wire.Snapshot) {
			s.Nodes[2].State = "down"
			s.Tasks = s.Tasks[1:]
		}, 3, []string{"node i-a2 is down", "service web runs 1 of 2 tasks"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var snap *wire.Snapshot
			if tc.inService >= 0 {
				snap = healthy()
				if tc.edit != nil {
					tc.edit(snap)
				}
			}
			v := ValidateSwarm(snap, tc.inService, PendingTracker{}, at, time.Minute)
			if len(tc.want) == 0 {
				if !v.Valid() {
					t.Fatalf("not valid: %s", v)
				}
				return
			}
			if v.Valid() || len(v.Problems) != len(tc.want) {
				t.Fatalf("problems %q, want %q", v.Problems, tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(v.Problems[i], w) {
					t.Errorf("problem %d %q, want it to say %q", i, v.Problems[i], w)
				}
			}
		})
	}
}

// A task pending in one snapshot is normal; the same service still with
// pending tasks in snapshots beyond the bound is not, and a service whose
// tasks were placed meanwhile starts over.
func TestValidatePendingAcrossSnapshots(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	snap := func(t0 time.Time, pending bool) *wire.Snapshot {
		s := &wire.Snapshot{Time: t0, Nodes: []wire.SwarmNode{swarmNode("a1", "worker", "ready")},
			Services: []wire.SnapshotService{replicated("s1", "web", 1), replicated("s2", "big", 0)},
			Tasks:    []wire.SnapshotTask{task("s1", "running")}}
		if pending {
			s.Tasks = append(s.Tasks, task("s2", "pending"))
		}
		return s
	}
	p := PendingTracker{}
	if v := ValidateSwarm(snap(at, true), 1, p, at, 2*time.Minute); !v.Valid() {
		t.Fatalf("first seen pending: %s", v)
	}
	if v := ValidateSwarm(snap(at.Add(time.Minute), true), 1, p, at.Add(time.Minute), 2*time.Minute); !v.Valid() {
		t.Fatalf("pending 1m of 2m: %s", v)
	}
	v := ValidateSwarm(snap(at.Add(3*time.Minute), true), 1, p, at.Add(3*time.Minute), 2*time.Minute)
	if v.Valid() || !strings.Contains(v.String(), "service big has 1 tasks pending for 3m0s") {
		t.Fatalf("pending 3m: %s", v)
	}
	if v := ValidateSwarm(snap(at.Add(4*time.Minute), false), 1, p, at.Add(4*time.Minute), 2*time.Minute); !v.Valid() {
		t.Fatalf("placed: %s", v)
	}
	if v := ValidateSwarm(snap(at.Add(5*time.Minute), true), 1, p, at.Add(5*time.Minute), 2*time.Minute); !v.Valid() {
		t.Fatalf("pending again, newly: %s", v)
	}
}
