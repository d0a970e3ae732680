package query

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
)

// crowdedSnapshot is a snapshot of n swarm nodes that all name one
// instance, the worst case for merging by instance, and the cluster's
// node of that instance.
func crowdedSnapshot(n int) (Swarm, []Node) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	snap := &Snapshot{Version: SnapshotVersion, Cluster: "core", Time: now, Nodes: make([]SwarmNode, n)}
	states := []string{"down", "unknown", "ready"}
	for i := range snap.Nodes {
		snap.Nodes[i] = SwarmNode{
			NodeID: fmt.Sprintf("node%021d", i), InstanceID: "i-0123456789abcdef0", Role: "worker",
			State: states[i%len(states)], Availability: "active",
			EngineLabels: map[string]string{names.EngineLabelGroup: "web", names.EngineLabelInstanceID: "i-0123456789abcdef0"},
		}
	}
	nodes := []Node{{Cluster: "core", Group: "web", InstanceID: "i-0123456789abcdef0", State: "running"}}
	return Swarm{Cluster: "core", Snapshot: snap, Now: now}, nodes
}

// BenchmarkWithSwarm merges snapshots of growing size whose nodes all
// name one instance: the time per op grows as the size does (compare
// ns/op across sizes; ns/node stays flat when the merge is linear).
func BenchmarkWithSwarm(b *testing.B) {
	for _, n := range []int{10_000, 40_000, 160_000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			w, nodes := crowdedSnapshot(n)
			b.ResetTimer()
			for range b.N {
				in := append([]Node(nil), nodes...)
				if got := WithSwarm(in, w, ""); len(got) != n {
					b.Fatalf("%d nodes merged, want %d", len(got), n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
	}
}

// Merging looks at each swarm node once: one comparison per node after
// an instance's first, however many name one instance, so no snapshot
// makes it quadratic. The best node of each instance is the first of
// those none is better than.
func TestBestByInstanceIsOnePass(t *testing.T) {
	w, _ := crowdedSnapshot(30_000)
	compared := 0
	counting := func(a, b SwarmNode) bool { compared++; return better(a, b) }
	best := bestByInstance(w.Snapshot.Nodes, counting)
	if compared != 30_000-1 {
		t.Errorf("%d comparisons for 30000 nodes of one instance, want 29999", compared)
	}
	// down, unknown, ready, down, ...: the first ready one is index 2.
	if len(best) != 1 || best["i-0123456789abcdef0"] != 2 {
		t.Errorf("best nodes %v, want i-0123456789abcdef0 → 2", best)
	}

	nodes := []SwarmNode{
		{NodeID: "a", InstanceID: "i-1", State: "down"}, {NodeID: "b", InstanceID: "i-2", State: "ready"},
		{NodeID: "c", InstanceID: "i-1", State: "unknown"}, {NodeID: "d", InstanceID: "i-1", State: "ready"},
		{NodeID: "e", InstanceID: "i-1", State: "ready"}, {NodeID: "f", InstanceID: "", State: "ready"},
		{NodeID: "g", InstanceID: "i-2", State: "ready"},
	}
	if got := bestByInstance(nodes, better); len(got) != 2 || got["i-1"] != 3 || got["i-2"] != 1 {
		t.Errorf("best nodes %v, want i-1 → 3 (d), i-2 → 1 (b)", got)
	}
}

// Every swarm node of a crowded snapshot is listed once: the instance's
// node is its best one, each other a duplicate, in node id order.
func TestWithSwarmCrowdedSnapshot(t *testing.T) {
	w, nodes := crowdedSnapshot(3_000)
	got := WithSwarm(nodes, w, "")
	if len(got) != 3_000 {
		t.Fatalf("%d nodes listed, want 3000", len(got))
	}
	seen := map[string]bool{}
	dups := 0
	for i, n := range got {
		if n.Swarm == nil || seen[n.Swarm.NodeID] {
			t.Fatalf("node %d: %+v listed twice or without its swarm node", i, n)
		}
		seen[n.Swarm.NodeID] = true
		if i > 0 && got[i-1].swarmID() > n.swarmID() {
			t.Errorf("node %d (%s) after %s: not in node id order", i, n.swarmID(), got[i-1].swarmID())
		}
		switch {
		case !n.SwarmOnly:
			if n.Swarm.NodeID != w.Snapshot.Nodes[2].NodeID || n.Swarm.Status != SwarmReady {
				t.Errorf("the instance's node is %s (%s), want its first ready one %s", n.Swarm.NodeID, n.Swarm.Status, w.Snapshot.Nodes[2].NodeID)
			}
		case strings.HasSuffix(n.Swarm.Status, "(duplicate)"):
			dups++
		default:
			t.Errorf("node %s: %q", n.Swarm.NodeID, n.Swarm.Status)
		}
	}
	if dups != 2_999 {
		t.Errorf("%d duplicates, want 2999", dups)
	}
}
