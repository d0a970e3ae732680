package cluster

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/wire"
)

// Validation of a cluster between the stacks of an upgrade, as kops
// validates between instance groups: a pure function of the swarm's
// status snapshot and of what Auto Scaling says, so that the rules are
// tested by table and the upgrade only feeds them.

// DefaultPendingBound is how long a task may stay pending before the
// cluster is not valid: longer than the swarm takes to place a task on a
// node that just joined.
const DefaultPendingBound = 2 * time.Minute

// pendingStates are the states of a task the swarm has not started yet.
var pendingStates = map[string]bool{"new": true, "pending": true, "assigned": true, "accepted": true, "preparing": true, "ready": true, "starting": true}

// Validity is the state of the cluster as one snapshot shows it.
type Validity struct {
	// Problems say what is not valid, one sentence each, sorted; none:
	// valid.
	Problems []string
}

// Valid says whether nothing is wrong.
func (v Validity) Valid() bool { return len(v.Problems) == 0 }

// String is the problems on one line.
func (v Validity) String() string {
	if v.Valid() {
		return "valid"
	}
	return strings.Join(v.Problems, "; ")
}

// PendingTracker remembers since when each service has had tasks
// pending, across the snapshots of one validation: a task pending in one
// snapshot is normal, one pending for longer than the bound is not.
type PendingTracker map[string]time.Time

// ValidateSwarm judges snap, read at now, against inService (the
// instances Auto Scaling has in service over the cluster's groups, the
// managers' included): every node of the swarm ready and proven, as many
// nodes as instances in service, every replicated service at its desired
// count of running tasks, and no service with tasks pending for longer
// than bound (tracked across snapshots in pending, which it updates).
func ValidateSwarm(snap *wire.Snapshot, inService int, pending PendingTracker, now time.Time, bound time.Duration) Validity {
	var v Validity
	add := func(format string, args ...any) { v.Problems = append(v.Problems, fmt.Sprintf(format, args...)) }
	if snap == nil {
		add("no status snapshot")
		return v
	}
	for _, n := range snap.Nodes {
		name := n.NodeID
		if n.InstanceID != "" {
			name = n.InstanceID
		}
		switch {
		case n.State != "ready":
			add("node %s is %s", name, orNone(n.State))
		case n.IdentityProblem != "":
			add("node %s is not proven: %s", name, n.IdentityProblem)
		case n.Unproven != "":
			add("node %s is not proven: %s", name, n.Unproven)
		case n.Role == "manager" && n.ManagerStatus != "leader" && n.ManagerStatus != "reachable":
			add("manager %s is %s", name, orNone(n.ManagerStatus))
		}
	}
	if len(snap.Nodes) != inService {
		add("the swarm has %d nodes, Auto Scaling %d instances in service", len(snap.Nodes), inService)
	}
	running, waiting := map[string]int{}, map[string]int{}
	for _, t := range snap.Tasks {
		if t.DesiredState != "running" {
			continue
		}
		switch {
		case t.Status.State == "running":
			running[t.ServiceID]++
		case pendingStates[t.Status.State]:
			waiting[t.ServiceID]++
		}
	}
	for _, sv := range snap.Services {
		if sv.Mode.Replicated == nil {
			continue // global services and jobs have no count to keep
		}
		if want := *sv.Mode.Replicas(); running[sv.ID] < want {
			add("service %s runs %d of %d tasks", sv.Name, running[sv.ID], want)
		}
	}
	names := map[string]string{}
	for _, sv := range snap.Services {
		names[sv.ID] = sv.Name
	}
	for id := range pending {
		if waiting[id] == 0 {
			delete(pending, id)
		}
	}
	for id, n := range waiting {
		since, ok := pending[id]
		if !ok {
			pending[id], since = snap.Time, snap.Time
		}
		if d := now.Sub(since); d > bound {
			name := names[id]
			if name == "" {
				name = id
			}
			add("service %s has %d tasks pending for %s", name, n, d.Round(time.Second))
		}
	}
	sort.Strings(v.Problems)
	return v
}
