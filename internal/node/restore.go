package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// A restore of the live swarm (docs/design.md, "Restoring a backup"),
// as clusterctl restore asks: the leader decides. It demotes every other
// manager and waits until it is the only member of the swarm's Raft, so
// that no other manager can keep a quorum of the swarm as it is (a second
// swarm), and until they have left (followRestore). The backup is
// restored by the manager that took it when it is one (the backup's swarm
// knows its manager at that node's address), once the leader has left
// too; by the leader otherwise. names.Restore says who and how far; the
// others join the restored swarm as managers through the join material
// the restorer publishes.

// TokenRotator gives the swarm new join tokens, and a new root CA: after
// a restore of another cluster's backup, neither that cluster's tokens
// nor its nodes' certificates (signed by the backup's CA) let anyone in.
type TokenRotator interface {
	RotateJoinTokens(ctx context.Context) error
	RotateCA(ctx context.Context) error
}

// rotateAll rotates the swarm's root CA, then its join tokens.
func rotateAll(ctx context.Context, r TokenRotator) error {
	if err := r.RotateCA(ctx); err != nil {
		return err
	}
	return r.RotateJoinTokens(ctx)
}

var restoreKey = names.ControlKey(names.Restore)

// restoreRun is the leader's record of the restore it carries out: a
// handling cut short while the engine was being restored is not repeated.
const restoreRun = "restore-run"

// handleRestoreRequest restores the swarm from the backup the request
// names, or refuses, and puts the outcome in the status snapshot. A
// request older than RequestMaxAge, or of another shape or cluster, is
// dropped.
func (m *Manager) handleRestoreRequest(ctx context.Context, file string, n notice, e wire.Event) error {
	r, err := e.RestoreRequest(m.Cluster)
	age := m.Clock.Now().Sub(n.Sent)
	switch {
	case err != nil:
		m.Log("ignoring a restore request: %v", err)
	case age > m.T.RequestMaxAge:
		m.Log("dropping restore request %s: made %s ago", r.RequestID, age.Round(time.Second))
	default:
		m.Log("restore request %s from %s: the backup %s", r.RequestID, r.RequestedBy, r.Backup)
		if err := m.restore(ctx, r); err != nil {
			return err
		}
		m.watch()
	}
	return m.forget(ctx, file, n)
}

// restore carries the request out; an error is one to try again (the
// swarm untouched), an outcome is the snapshot's.
func (m *Manager) restore(ctx context.Context, r wire.RestoreDetail) error {
	var run string
	if _, err := m.State.Load(restoreRun, &run); err != nil {
		return err
	}
	if run == r.RequestID {
		// Cut short while the engine was being restored: whichever swarm
		// it has now leads; the demoted managers join it.
		m.finishRestore(ctx, r, wire.RestoreFailed, "the restore was cut short (the agent restarted); the swarm is the one this engine has now", nil)
		return m.State.Remove(restoreRun)
	}
	meta, archive, why, err := m.chooseRestore(ctx, r)
	if err != nil {
		return err
	}
	if why != "" {
		m.Log("refusing restore request %s: %s", r.RequestID, why)
		m.restored = &wire.RestoreStatus{RequestID: r.RequestID, Backup: r.Backup, Outcome: wire.RestoreRefused, Reason: why, Time: m.Clock.Now().UTC()}
		return nil
	}
	nodes, err := m.Engine.Nodes(ctx)
	if err != nil {
		return err
	}
	self, err := m.Engine.Self(ctx)
	if err != nil {
		return err
	}
	var others []string
	restorer := ""
	for _, n := range nodes {
		if n.Role == "manager" && n.Manager() && n.ID != self.NodeID && meta.TakenBy != "" && n.Labels[names.EngineLabelInstanceID] == meta.TakenBy {
			// The swarm of the backup knows its manager at the address of
			// the manager that took it: that manager restores it, so that
			// no other node has that address.
			restorer = meta.TakenBy
		}
		if n.Role == "manager" && n.Manager() && n.ID != self.NodeID {
			if n.Reachability != "reachable" {
				why := fmt.Sprintf("the manager %s is %s: a restore demotes every other manager first, and one that does not hear it could keep the swarm as it is", n.ID, orQ(n.Reachability))
				m.Log("refusing restore request %s: %s", r.RequestID, why)
				m.restored = &wire.RestoreStatus{RequestID: r.RequestID, Backup: r.Backup, Outcome: wire.RestoreRefused, Reason: why, Time: m.Clock.Now().UTC()}
				return nil
			}
			others = append(others, n.ID)
		}
	}
	marker := wire.RestoreMarker{RequestID: r.RequestID, Leader: m.InstanceID, Backup: r.Backup, Demoted: others, Restorer: restorer,
		Rotate: meta.Cluster != "" && meta.Cluster != m.Cluster, Time: m.Clock.Now().UTC()}
	if err := m.Bucket.Put(ctx, restoreKey, marker.Marshal(), "application/json", nil); err != nil {
		return err
	}
	m.restored = &wire.RestoreStatus{RequestID: r.RequestID, Backup: r.Backup, Outcome: wire.RestoreRestoring, Time: m.Clock.Now().UTC()}
	if _, err := m.publishStatus(ctx); err != nil {
		m.Log("publishing the status snapshot failed: %v", err)
	}
	if err := m.demoteAll(ctx, others); err != nil {
		m.finishRestore(ctx, r, wire.RestoreFailed, fmt.Sprintf("demoting the other managers: %v; nothing restored", err), &marker)
		return nil
	}
	if restorer != "" {
		// The last manager of the swarm as it is leaves it; the restorer
		// restores, and this manager joins it as the demoted ones do.
		m.Log("the only manager of the swarm: leaving it for manager %s, which took the backup %s, to restore it", restorer, r.Backup)
		if err := m.Engine.Leave(ctx); err != nil {
			m.finishRestore(ctx, r, wire.RestoreFailed, fmt.Sprintf("leaving the swarm for the restorer: %v", err), &marker)
			return nil
		}
		m.demoted = true
		if err := m.State.Save(restoreLeft, r.RequestID); err != nil {
			return err
		}
		marker.LeaderLeft = true
		if err := m.Bucket.Put(ctx, restoreKey, marker.Marshal(), "application/json", nil); err != nil {
			return err
		}
		m.restored = nil // the restorer publishes the snapshot from here
		return nil
	}
	if err := m.State.Save(restoreRun, r.RequestID); err != nil {
		return err
	}
	m.Log("the only manager of the swarm: restoring the backup %s (taken %s of swarm %s) on %s", r.Backup, meta.Taken.Format(time.RFC3339), orQ(meta.SwarmID), m.Address)
	if err := m.Backups.Restore(ctx, archive, m.Address); err != nil {
		m.finishRestore(ctx, r, wire.RestoreFailed, fmt.Sprintf("restoring the backup: %v", err), &marker)
		return m.State.Remove(restoreRun)
	}
	reason := ""
	if meta.Cluster != "" && meta.Cluster != m.Cluster {
		if err := rotateAll(ctx, m.Tokens); err != nil {
			// The old cluster's nodes could join with the backup's tokens,
			// or come back with certificates of its CA: the swarm is not
			// taken as restored until both are rotated.
			m.finishRestore(ctx, r, wire.RestoreFailed, fmt.Sprintf("restored, but rotating the CA and join tokens of cluster %s's swarm failed: %v", meta.Cluster, err), &marker)
			return m.State.Remove(restoreRun)
		}
		reason = fmt.Sprintf("a backup of cluster %s: the CA and the join tokens rotated", meta.Cluster)
		m.Log("rotated the swarm's CA and join tokens: the backup was of cluster %s", meta.Cluster)
	}
	m.republish = true
	if err := m.PublishJoinMaterial(ctx, true); err != nil {
		m.Log("publishing the join material failed: %v", err)
	}
	m.finishRestore(ctx, r, wire.RestoreRestored, reason, &marker)
	return m.State.Remove(restoreRun)
}

// chooseRestore reads the backup the request names, or why it is
// refused: not in the bucket, or of another cluster than this one or the
// one the request names.
func (m *Manager) chooseRestore(ctx context.Context, r wire.RestoreDetail) (wire.BackupMeta, []byte, string, error) {
	archive, obj, err := m.Bucket.Get(ctx, r.Backup)
	if errors.Is(err, ErrMissing) {
		return wire.BackupMeta{}, nil, fmt.Sprintf("no backup %s in the bucket (the newest %d are kept)", r.Backup, m.keep()), nil
	}
	if err != nil {
		return wire.BackupMeta{}, nil, "", err
	}
	meta, err := wire.ParseBackupMeta(obj.Metadata)
	if err != nil {
		return meta, nil, fmt.Sprintf("the backup %s: %v", r.Backup, err), nil
	}
	if meta.Taken.IsZero() {
		meta.Taken, _ = wire.BackupKeyTime(r.Backup)
	}
	of := meta.Cluster
	if of == "" {
		of = m.Cluster // a backup of before the metadata said the cluster
	}
	switch {
	case r.FromCluster != "" && of != r.FromCluster:
		return meta, nil, fmt.Sprintf("the backup %s was taken by the managers of cluster %s, not %s", r.Backup, of, r.FromCluster), nil
	case r.FromCluster == "" && of != m.Cluster:
		return meta, nil, fmt.Sprintf("the backup %s was taken by the managers of cluster %s: restoring it needs --from-cluster %s", r.Backup, of, of), nil
	case of != m.Cluster && m.Tokens == nil:
		return meta, nil, "the join tokens cannot be rotated here: another cluster's backup is not restored", nil
	}
	return meta, archive, "", nil
}

// restoreWait bounds each wait of the leader before it restores: for the
// demotions to reach the Raft (seconds), and for the demoted nodes to
// leave (a follower's round or two); housekeeping does nothing else
// meanwhile.
const restoreWait = 2 * time.Minute

// demoteAll demotes the managers others, waits until this manager is
// the only member of the swarm's Raft, then until the demoted nodes have
// left (Down: they leave on their own, followRestore), so that none
// reconnects to the restored swarm with the identity it has now.
func (m *Manager) demoteAll(ctx context.Context, others []string) error {
	for _, id := range others {
		if err := m.Engine.Demote(ctx, id); err != nil {
			return fmt.Errorf("node %s: %w", id, err)
		}
		m.Log("demoted manager %s for the restore", id)
	}
	deadline := m.Clock.Now().Add(restoreWait)
	alone := false
	for {
		nodes, err := m.Engine.Nodes(ctx)
		if err != nil {
			return err
		}
		if !alone && raftManagers(nodes) == 1 {
			alone, deadline = true, m.Clock.Now().Add(restoreWait)
		}
		if alone {
			var staying []string
			for _, n := range nodes {
				if slices.Contains(others, n.ID) && n.State != "down" {
					staying = append(staying, n.ID)
				}
			}
			if len(staying) == 0 {
				return nil
			}
			if !m.Clock.Now().Before(deadline) {
				// Demoted, they hold no quorum of anything: the restore
				// goes on, and they are demoted again in the restored
				// swarm, to leave and join it later.
				m.Log("the demoted managers %v did not leave within %s: restoring anyway", staying, restoreWait)
				return nil
			}
		} else if !m.Clock.Now().Before(deadline) {
			return fmt.Errorf("still %d managers after %s", raftManagers(nodes), restoreWait)
		}
		if err := m.Clock.Sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
}

// finishRestore says how the restore ended: in the snapshot, in the log,
// and, when managers were demoted, in the marker, which they wait for.
func (m *Manager) finishRestore(ctx context.Context, r wire.RestoreDetail, outcome, reason string, marker *wire.RestoreMarker) {
	m.restored = &wire.RestoreStatus{RequestID: r.RequestID, Backup: r.Backup, Outcome: outcome, Reason: reason, Time: m.Clock.Now().UTC()}
	if reason == "" {
		m.Log("restore request %s: %s from %s", r.RequestID, outcome, r.Backup)
	} else {
		m.Log("restore request %s: %s from %s: %s", r.RequestID, outcome, r.Backup, reason)
	}
	if marker == nil {
		b, _, err := m.Bucket.Get(ctx, restoreKey)
		if err != nil {
			return
		}
		mk, err := wire.ParseRestoreMarker(b)
		if err != nil || mk.RequestID != r.RequestID {
			return
		}
		marker = &mk
	}
	marker.Done = true
	if err := m.Bucket.Put(ctx, restoreKey, marker.Marshal(), "application/json", nil); err != nil {
		m.Log("saying the restore is done failed (the demoted managers wait for it): %v", err)
	}
}

// Follower states: the restore this manager followed (or was not
// concerned by), and the one it left its swarm for.
const (
	restoreFollowed = "restore-followed"
	restoreLeft     = "restore-left"
)

// followRestore is a follower's part of a restore: a manager the leader
// demoted leaves the swarm once its engine is no longer a manager, and
// joins the restored swarm as a manager once the restore is done. True while it is at it (nothing else of
// the follower's round is done: a swarm being restored has no leader for
// a while, which is no loss of quorum).
func (m *Manager) followRestore(ctx context.Context) bool {
	b, _, err := m.Bucket.Get(ctx, restoreKey)
	if err != nil {
		if !errors.Is(err, ErrMissing) {
			m.Log("reading the restore marker: %v", err)
		}
		return false
	}
	mk, err := wire.ParseRestoreMarker(b)
	if err != nil || mk.Leader == m.InstanceID && mk.Restorer == "" {
		return false
	}
	var followed, left string
	if _, err := m.State.Load(restoreFollowed, &followed); err != nil || followed == mk.RequestID {
		return false
	}
	if _, err := m.State.Load(restoreLeft, &left); err != nil {
		return false
	}
	if mk.Leader == m.InstanceID && !mk.Done {
		// The leader that left for the restorer: it says it left (again,
		// should its agent have restarted in between), or the restorer
		// would wait for ever.
		if left != mk.RequestID {
			self, err := m.Engine.Self(ctx)
			if err != nil || self.LocalState == StateActive || m.State.Save(restoreLeft, mk.RequestID) != nil {
				return false
			}
		}
		if !mk.LeaderLeft {
			mk.LeaderLeft = true
			if err := m.Bucket.Put(ctx, restoreKey, mk.Marshal(), "application/json", nil); err != nil {
				m.Log("saying the leader left for the restore: %v", err)
			}
		}
		return true
	}
	if left != mk.RequestID {
		self, err := m.Engine.Self(ctx)
		if err != nil {
			return false
		}
		if self.NodeID == "" || !slices.Contains(mk.Demoted, self.NodeID) {
			_ = m.State.Save(restoreFollowed, mk.RequestID) // not one it demoted
			return false
		}
		if self.ControlAvailable {
			if !mk.Done {
				return true // its demotion is on its way
			}
			if _, err := m.Engine.Nodes(ctx); err == nil {
				// A manager of a swarm with a leader: the restored one
				// took it in; leaving would take a member from its Raft.
				m.Log("a manager of the swarm restored from %s", mk.Backup)
				_ = m.State.Save(restoreFollowed, mk.RequestID)
				return false
			}
		}
		m.Log("demoted for the restore from %s: leaving the swarm, to join the restored one", mk.Backup)
		if err := m.Engine.Leave(ctx); err != nil {
			m.Log("leaving the swarm for the restored one: %v", err)
			return true
		}
		if err := m.State.Save(restoreLeft, mk.RequestID); err != nil {
			return true
		}
	}
	if !mk.Done && mk.Restorer == m.InstanceID {
		if mk.LeaderLeft {
			m.restoreAsRestorer(ctx, mk)
		}
		return true
	}
	if !mk.Done {
		return true // the restored swarm is not there yet
	}
	if !m.joinManagers(ctx) {
		return true
	}
	if m.State.Save(restoreFollowed, mk.RequestID) == nil {
		_ = m.State.Remove(restoreLeft)
	}
	m.republish = true
	return true
}

// restoreAsRestorer restores the backup of the marker on this manager,
// out of the swarm (the leader demoted it, and it left), as the leader
// would have: the swarm of the backup knows its manager at this one's
// address. It leads the restored swarm, and says how it ended.
func (m *Manager) restoreAsRestorer(ctx context.Context, mk wire.RestoreMarker) {
	r := wire.RestoreDetail{RequestID: mk.RequestID, Backup: mk.Backup}
	var run string
	if _, err := m.State.Load(restoreRun, &run); err != nil {
		return
	}
	if run == mk.RequestID {
		m.finishRestore(ctx, r, wire.RestoreFailed, "the restore was cut short (the agent restarted); the swarm is the one this engine has now", &mk)
		_ = m.State.Remove(restoreRun)
		return
	}
	archive, _, err := m.Bucket.Get(ctx, mk.Backup)
	if err != nil {
		m.finishRestore(ctx, r, wire.RestoreFailed, fmt.Sprintf("reading the backup: %v", err), &mk)
		return
	}
	if err := m.State.Save(restoreRun, mk.RequestID); err != nil {
		return
	}
	m.Log("restoring the backup %s it took, on %s, as the leader asked", mk.Backup, m.Address)
	if err := m.Backups.Restore(ctx, archive, m.Address); err != nil {
		m.finishRestore(ctx, r, wire.RestoreFailed, fmt.Sprintf("restoring the backup: %v", err), &mk)
		_ = m.State.Remove(restoreRun)
		return
	}
	reason := ""
	if mk.Rotate {
		if m.Tokens == nil {
			m.finishRestore(ctx, r, wire.RestoreFailed, "restored, but the join tokens of another cluster's swarm cannot be rotated here", &mk)
			_ = m.State.Remove(restoreRun)
			return
		}
		if err := rotateAll(ctx, m.Tokens); err != nil {
			m.finishRestore(ctx, r, wire.RestoreFailed, fmt.Sprintf("restored, but rotating the CA and join tokens failed: %v", err), &mk)
			_ = m.State.Remove(restoreRun)
			return
		}
		reason = "another cluster's backup: the CA and the join tokens rotated"
	}
	m.republish = true
	if err := m.PublishJoinMaterial(ctx, true); err != nil {
		m.Log("publishing the join material failed: %v", err)
	}
	m.finishRestore(ctx, r, wire.RestoreRestored, reason, &mk)
	_ = m.State.Remove(restoreRun)
	if m.State.Save(restoreFollowed, mk.RequestID) == nil {
		_ = m.State.Remove(restoreLeft)
	}
}
