package node

import (
	"context"
	"sort"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// statusPublisher publishes the status snapshot (names.StatusKey): what
// clusterctl reads of the swarm. Besides the engine's view it says what
// the other parts keep: the autoscaler's decisions, the backups, the last
// restore, the secrets.
type statusPublisher struct {
	Cluster    string
	InstanceID string
	Engine     Engine
	Bucket     Bucket
	State      State
	Clock      Clock
	Log        Logger
	// T: StatusEvery, how often it is published; WatchEvery, how often
	// while a request is watched, for WatchFor after it.
	T Timings

	prover   *prover
	secrets  *SecretsSync
	scaler   *autoscaling
	backups  *swarmBackups
	restores *restorer

	next, watchUntil time.Time
}

// publish publishes the status snapshot when it is due: every
// StatusEvery, and every WatchEvery while a request is being watched (for
// WatchFor after it), so that clusterctl drain-node sees it through. It
// gives the snapshot it built (nil when none was due), for the round's
// other uses of it.
func (sp *statusPublisher) publish(ctx context.Context) (*wire.Snapshot, error) {
	now := sp.Clock.Now()
	if now.Before(sp.next) {
		return nil, nil
	}
	snap, err := sp.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	b, err := snap.Marshal()
	if err != nil {
		return &snap, err
	}
	if err := sp.Bucket.Put(ctx, names.StatusKey, b, "application/json", nil); err != nil {
		return &snap, err
	}
	sp.next = now.Add(sp.T.StatusEvery)
	if now.Before(sp.watchUntil) && sp.T.WatchEvery < sp.T.StatusEvery {
		sp.next = now.Add(sp.T.WatchEvery)
	}
	return &snap, nil
}

// publishOrLog publishes the snapshot when due, and logs why it could not.
func (sp *statusPublisher) publishOrLog(ctx context.Context) {
	if _, err := sp.publish(ctx); err != nil {
		sp.Log("publishing the status snapshot failed: %v", err)
	}
}

// watch publishes the snapshot now and often for a while.
func (sp *statusPublisher) watch() {
	sp.next = time.Time{}
	sp.watchUntil = sp.Clock.Now().Add(sp.T.WatchFor)
}

// now has the snapshot published in this round, whatever the time.
func (sp *statusPublisher) now() { sp.next = time.Time{} }

// watching tells whether a request is watched at now.
func (sp *statusPublisher) watching(now time.Time) bool { return now.Before(sp.watchUntil) }

// Snapshot is the swarm's status: the digest of its CA certificate (agents
// compare it with the one they trust), and every node with its instance,
// role, state, availability, manager status, engine labels and running
// tasks (by their actual state: a drained node's tasks count until they
// have stopped); and when the swarm state was last backed up (nil: no
// backup, with more than one manager); and the swarm's services with all
// their tasks (those no node took yet too), for clusterctl services, in
// the shape the managers of earlier versions published too.
func (sp *statusPublisher) Snapshot(ctx context.Context) (wire.Snapshot, error) {
	nodes, err := sp.Engine.Nodes(ctx)
	if err != nil {
		return wire.Snapshot{}, err
	}
	services, err := sp.Engine.Services(ctx)
	if err != nil {
		return wire.Snapshot{}, err
	}
	tasks, err := sp.Engine.Tasks(ctx, TaskFilter{})
	if err != nil {
		return wire.Snapshot{}, err
	}
	ca, err := sp.Engine.CA(ctx)
	if err != nil {
		return wire.Snapshot{}, err
	}
	running := map[string]int{}
	seen := map[string]bool{}
	for _, t := range tasks {
		if !seen[t.ID] && t.State == "running" {
			running[t.NodeID]++
		}
		seen[t.ID] = true
	}
	s := wire.Snapshot{
		Version: wire.SnapshotVersion, Cluster: sp.Cluster, Time: sp.Clock.Now(), Publisher: sp.InstanceID,
		CADigest: Digest([]byte(ca)), Nodes: []wire.SwarmNode{},
		Services: services, Tasks: []wire.SnapshotTask{},
		Autoscale: sp.scaler.decisions, Unplaceable: sp.scaler.unplaceable, Secrets: sp.secrets.Status(),
	}
	if s.Services == nil {
		s.Services = []wire.SnapshotService{}
	}
	sort.SliceStable(s.Services, func(i, j int) bool { return s.Services[i].Name < s.Services[j].Name })
	// The tasks of the services only, as docker service ps lists them.
	ofService := map[string]bool{}
	for _, sv := range s.Services {
		ofService[sv.ID] = true
	}
	for _, t := range tasks {
		if ofService[t.ServiceID] {
			var st wire.SnapshotTask
			st.ServiceID, st.NodeID, st.DesiredState = t.ServiceID, t.NodeID, t.DesiredState
			st.Status.State, st.Status.Message, st.Status.Err = t.State, t.Message, t.Err
			s.Tasks = append(s.Tasks, st)
		}
	}
	var b backupRecord
	if ok, _ := sp.State.Load(backupState, &b); ok && !b.Time.IsZero() {
		t := b.Time
		s.LastBackup = &t
	}
	ids, err := sp.prover.identify(ctx, nodes)
	if err != nil {
		// The snapshot still goes out; a problem is said when EC2 answers.
		sp.Log("the snapshot says no identity problem: %v", err)
	}
	unproven := func(n Node) string {
		if err != nil {
			return ""
		}
		return unprovenReason(ids, n)
	}
	s.Backups, s.Restore = sp.backups.list, sp.restores.restored
	for _, n := range nodes {
		addr := n.Addr
		if (addr == "" || addr == "0.0.0.0") && n.Manager() {
			addr = host(n.ManagerAddr)
		}
		status := ""
		switch {
		case n.Leader:
			status = "leader"
		case n.Manager():
			status = n.Reachability
		}
		labels := n.Labels
		if labels == nil {
			labels = map[string]string{}
		}
		s.Nodes = append(s.Nodes, wire.SwarmNode{
			NodeID: n.ID, InstanceID: labels[names.EngineLabelInstanceID], Hostname: n.Hostname, Address: addr,
			Role: n.Role, State: n.State, Availability: n.Availability, ManagerStatus: status,
			EngineLabels: labels, EngineVersion: n.EngineVersion, RunningTasks: running[n.ID],
			IdentityProblem: ids.Problem(n.ID), Unproven: unproven(n), NodeLabels: n.NodeLabels,
		})
	}
	sort.Slice(s.Nodes, func(i, j int) bool { return s.Nodes[i].NodeID < s.Nodes[j].NodeID })
	return s, nil
}
