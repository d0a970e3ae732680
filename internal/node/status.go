package node

import (
	"context"
	"sort"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// publishStatus publishes the status snapshot when it is due: every
// StatusEvery, and every WatchEvery while a request is being watched (for
// WatchFor after it), so that clusterctl drain-node sees it through. It
// gives the snapshot it built (nil when none was due), for the round's
// other uses of it.
func (m *Manager) publishStatus(ctx context.Context) (*wire.Snapshot, error) {
	now := m.Clock.Now()
	if now.Before(m.nextStatus) {
		return nil, nil
	}
	snap, err := m.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	b, err := snap.Marshal()
	if err != nil {
		return &snap, err
	}
	if err := m.Bucket.Put(ctx, names.StatusKey, b, "application/json", nil); err != nil {
		return &snap, err
	}
	m.nextStatus = now.Add(m.T.StatusEvery)
	if now.Before(m.watchUntil) && m.T.WatchEvery < m.T.StatusEvery {
		m.nextStatus = now.Add(m.T.WatchEvery)
	}
	return &snap, nil
}

// watch publishes the snapshot now and often for a while.
func (m *Manager) watch() {
	m.nextStatus = time.Time{}
	m.watchUntil = m.Clock.Now().Add(m.T.WatchFor)
}

// Snapshot is the swarm's status: the digest of its CA certificate (agents
// compare it with the one they trust), and every node with its instance,
// role, state, availability, manager status, engine labels and running
// tasks (by their actual state: a drained node's tasks count until they
// have stopped); and when the swarm state was last backed up (nil: no
// backup, with more than one manager); and the swarm's services with all
// their tasks (those no node took yet too), for clusterctl services, in
// the shape the managers of earlier versions published too.
func (m *Manager) Snapshot(ctx context.Context) (wire.Snapshot, error) {
	nodes, err := m.Engine.Nodes(ctx)
	if err != nil {
		return wire.Snapshot{}, err
	}
	services, err := m.Engine.Services(ctx)
	if err != nil {
		return wire.Snapshot{}, err
	}
	tasks, err := m.Engine.Tasks(ctx, TaskFilter{})
	if err != nil {
		return wire.Snapshot{}, err
	}
	ca, err := m.Engine.CA(ctx)
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
		Version: wire.SnapshotVersion, Cluster: m.Cluster, Time: m.Clock.Now(), Publisher: m.InstanceID,
		CADigest: Digest([]byte(ca)), Nodes: []wire.SwarmNode{},
		Services: services, Tasks: []wire.SnapshotTask{},
		Autoscale: m.decisions, Unplaceable: m.unplaceable, Secrets: m.Secrets.Status(),
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
	if ok, _ := m.State.Load(backupState, &b); ok && !b.Time.IsZero() {
		t := b.Time
		s.LastBackup = &t
	}
	ids, err := m.identify(ctx, nodes)
	if err != nil {
		// The snapshot still goes out; a problem is said when EC2 answers.
		m.Log("the snapshot says no identity problem: %v", err)
	}
	unproven := func(n Node) string {
		if err != nil {
			return ""
		}
		return unprovenReason(ids, n)
	}
	s.Backups, s.Restore = m.backupList, m.restored
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
