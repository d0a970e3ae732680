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
// swarm), and until they have left (restorer.follow). The backup is
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

// restorer carries a restore out: the leader's part, the demoted
// managers' and the restorer's (see above).
type restorer struct {
	Cluster    string
	InstanceID string
	Address    string
	Engine     Engine
	Bucket     Bucket
	Backups    Backups
	// Tokens rotates the join tokens after a restore of another
	// cluster's backup; nil: such a backup is refused.
	Tokens TokenRotator
	State  State
	Clock  Clock
	Log    Logger
	// Keep is how many backups are kept (for the refusal's words).
	Keep int

	join   *joining
	status *statusPublisher
	// demoted tells the round that this manager left the lead.
	demoted func()

	// restored: the last restore request acted on, for the snapshot.
	restored *wire.RestoreStatus
}

// restore carries the request out; an error is one to try again (the
// swarm untouched), an outcome is the snapshot's.
func (rs *restorer) restore(ctx context.Context, r wire.RestoreDetail) error {
	var run string
	if _, err := rs.State.Load(restoreRun, &run); err != nil {
		return err
	}
	if run == r.RequestID {
		// Cut short while the engine was being restored: whichever swarm
		// it has now leads; the demoted managers join it.
		rs.finish(ctx, r, wire.RestoreFailed, "the restore was cut short (the agent restarted); the swarm is the one this engine has now", nil)
		return rs.State.Remove(restoreRun)
	}
	meta, archive, why, err := rs.choose(ctx, r)
	if err != nil {
		return err
	}
	if why != "" {
		rs.refuse(r, why)
		return nil
	}
	nodes, err := rs.Engine.Nodes(ctx)
	if err != nil {
		return err
	}
	self, err := rs.Engine.Self(ctx)
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
				rs.refuse(r, why)
				return nil
			}
			others = append(others, n.ID)
		}
	}
	marker := wire.RestoreMarker{RequestID: r.RequestID, Leader: rs.InstanceID, Backup: r.Backup, Demoted: others, Restorer: restorer,
		Rotate: meta.Cluster != "" && meta.Cluster != rs.Cluster, Time: rs.Clock.Now().UTC()}
	if err := rs.Bucket.Put(ctx, restoreKey, marker.Marshal(), "application/json", nil); err != nil {
		return err
	}
	rs.restored = &wire.RestoreStatus{RequestID: r.RequestID, Backup: r.Backup, Outcome: wire.RestoreRestoring, Time: rs.Clock.Now().UTC()}
	rs.status.publishOrLog(ctx)
	if err := rs.demoteAll(ctx, others); err != nil {
		rs.finish(ctx, r, wire.RestoreFailed, fmt.Sprintf("demoting the other managers: %v; nothing restored", err), &marker)
		return nil
	}
	if restorer != "" {
		// The last manager of the swarm as it is leaves it; the restorer
		// restores, and this manager joins it as the demoted ones do.
		rs.Log("the only manager of the swarm: leaving it for manager %s, which took the backup %s, to restore it", restorer, r.Backup)
		if err := rs.Engine.Leave(ctx); err != nil {
			rs.finish(ctx, r, wire.RestoreFailed, fmt.Sprintf("leaving the swarm for the restorer: %v", err), &marker)
			return nil
		}
		rs.demoted()
		if err := rs.State.Save(restoreLeft, r.RequestID); err != nil {
			return err
		}
		marker.LeaderLeft = true
		if err := rs.Bucket.Put(ctx, restoreKey, marker.Marshal(), "application/json", nil); err != nil {
			return err
		}
		rs.restored = nil // the restorer publishes the snapshot from here
		return nil
	}
	if err := rs.State.Save(restoreRun, r.RequestID); err != nil {
		return err
	}
	rs.Log("the only manager of the swarm: restoring the backup %s (taken %s of swarm %s) on %s", r.Backup, meta.Taken.Format(time.RFC3339), orQ(meta.SwarmID), rs.Address)
	if err := rs.Backups.Restore(ctx, archive, rs.Address); err != nil {
		rs.finish(ctx, r, wire.RestoreFailed, fmt.Sprintf("restoring the backup: %v", err), &marker)
		return rs.State.Remove(restoreRun)
	}
	reason := ""
	if meta.Cluster != "" && meta.Cluster != rs.Cluster {
		if err := rotateAll(ctx, rs.Tokens); err != nil {
			// The old cluster's nodes could join with the backup's tokens,
			// or come back with certificates of its CA: the swarm is not
			// taken as restored until both are rotated.
			rs.finish(ctx, r, wire.RestoreFailed, fmt.Sprintf("restored, but rotating the CA and join tokens of cluster %s's swarm failed: %v", meta.Cluster, err), &marker)
			return rs.State.Remove(restoreRun)
		}
		reason = fmt.Sprintf("a backup of cluster %s: the CA and the join tokens rotated", meta.Cluster)
		rs.Log("rotated the swarm's CA and join tokens: the backup was of cluster %s", meta.Cluster)
	}
	rs.join.republished(ctx)
	rs.finish(ctx, r, wire.RestoreRestored, reason, &marker)
	return rs.State.Remove(restoreRun)
}

// refuse says why the request r is refused: in the log and the snapshot.
func (rs *restorer) refuse(r wire.RestoreDetail, why string) {
	rs.Log("refusing restore request %s: %s", r.RequestID, why)
	rs.restored = &wire.RestoreStatus{RequestID: r.RequestID, Backup: r.Backup, Outcome: wire.RestoreRefused, Reason: why, Time: rs.Clock.Now().UTC()}
}

// choose reads the backup the request names, or why it is
// refused: not in the bucket, or of another cluster than this one or the
// one the request names.
func (rs *restorer) choose(ctx context.Context, r wire.RestoreDetail) (wire.BackupMeta, []byte, string, error) {
	archive, obj, err := rs.Bucket.Get(ctx, r.Backup)
	if errors.Is(err, ErrMissing) {
		return wire.BackupMeta{}, nil, fmt.Sprintf("no backup %s in the bucket (the newest %d are kept)", r.Backup, keepOf(rs.Keep)), nil
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
		of = rs.Cluster // a backup of before the metadata said the cluster
	}
	switch {
	case r.FromCluster != "" && of != r.FromCluster:
		return meta, nil, fmt.Sprintf("the backup %s was taken by the managers of cluster %s, not %s", r.Backup, of, r.FromCluster), nil
	case r.FromCluster == "" && of != rs.Cluster:
		return meta, nil, fmt.Sprintf("the backup %s was taken by the managers of cluster %s: restoring it needs --from-cluster %s", r.Backup, of, of), nil
	case of != rs.Cluster && rs.Tokens == nil:
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
// left (Down: they leave on their own, follow), so that none
// reconnects to the restored swarm with the identity it has now.
func (rs *restorer) demoteAll(ctx context.Context, others []string) error {
	for _, id := range others {
		if err := rs.Engine.Demote(ctx, id); err != nil {
			return fmt.Errorf("node %s: %w", id, err)
		}
		rs.Log("demoted manager %s for the restore", id)
	}
	deadline := rs.Clock.Now().Add(restoreWait)
	alone := false
	for {
		nodes, err := rs.Engine.Nodes(ctx)
		if err != nil {
			return err
		}
		if !alone && raftManagers(nodes) == 1 {
			alone, deadline = true, rs.Clock.Now().Add(restoreWait)
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
			if !rs.Clock.Now().Before(deadline) {
				// Demoted, they hold no quorum of anything: the restore
				// goes on, and they are demoted again in the restored
				// swarm, to leave and join it later.
				rs.Log("the demoted managers %v did not leave within %s: restoring anyway", staying, restoreWait)
				return nil
			}
		} else if !rs.Clock.Now().Before(deadline) {
			return fmt.Errorf("still %d managers after %s", raftManagers(nodes), restoreWait)
		}
		if err := rs.Clock.Sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
}

// finish says how the restore ended: in the snapshot, in the log,
// and, when managers were demoted, in the marker, which they wait for.
func (rs *restorer) finish(ctx context.Context, r wire.RestoreDetail, outcome, reason string, marker *wire.RestoreMarker) {
	rs.restored = &wire.RestoreStatus{RequestID: r.RequestID, Backup: r.Backup, Outcome: outcome, Reason: reason, Time: rs.Clock.Now().UTC()}
	if reason == "" {
		rs.Log("restore request %s: %s from %s", r.RequestID, outcome, r.Backup)
	} else {
		rs.Log("restore request %s: %s from %s: %s", r.RequestID, outcome, r.Backup, reason)
	}
	if marker == nil {
		b, _, err := rs.Bucket.Get(ctx, restoreKey)
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
	if err := rs.Bucket.Put(ctx, restoreKey, marker.Marshal(), "application/json", nil); err != nil {
		rs.Log("saying the restore is done failed (the demoted managers wait for it): %v", err)
	}
}

// Follower states: the restore this manager followed (or was not
// concerned by), and the one it left its swarm for.
const (
	restoreFollowed = "restore-followed"
	restoreLeft     = "restore-left"
)

// follow is a follower's part of a restore: a manager the leader
// demoted leaves the swarm once its engine is no longer a manager, and
// joins the restored swarm as a manager once the restore is done. True while it is at it (nothing else of
// the follower's round is done: a swarm being restored has no leader for
// a while, which is no loss of quorum).
func (rs *restorer) follow(ctx context.Context) bool {
	b, _, err := rs.Bucket.Get(ctx, restoreKey)
	if err != nil {
		if !errors.Is(err, ErrMissing) {
			rs.Log("reading the restore marker: %v", err)
		}
		return false
	}
	mk, err := wire.ParseRestoreMarker(b)
	if err != nil || mk.Leader == rs.InstanceID && mk.Restorer == "" {
		return false
	}
	var followed, left string
	if _, err := rs.State.Load(restoreFollowed, &followed); err != nil || followed == mk.RequestID {
		return false
	}
	if _, err := rs.State.Load(restoreLeft, &left); err != nil {
		return false
	}
	if mk.Leader == rs.InstanceID && !mk.Done {
		// The leader that left for the restorer: it says it left (again,
		// should its agent have restarted in between), or the restorer
		// would wait for ever.
		if left != mk.RequestID {
			self, err := rs.Engine.Self(ctx)
			if err != nil || self.LocalState == StateActive || rs.State.Save(restoreLeft, mk.RequestID) != nil {
				return false
			}
		}
		if !mk.LeaderLeft {
			mk.LeaderLeft = true
			if err := rs.Bucket.Put(ctx, restoreKey, mk.Marshal(), "application/json", nil); err != nil {
				rs.Log("saying the leader left for the restore: %v", err)
			}
		}
		return true
	}
	if left != mk.RequestID {
		self, err := rs.Engine.Self(ctx)
		if err != nil {
			return false
		}
		if self.NodeID == "" || !slices.Contains(mk.Demoted, self.NodeID) {
			_ = rs.State.Save(restoreFollowed, mk.RequestID) // not one it demoted
			return false
		}
		if self.ControlAvailable {
			if !mk.Done {
				return true // its demotion is on its way
			}
			if _, err := rs.Engine.Nodes(ctx); err == nil {
				// A manager of a swarm with a leader: the restored one
				// took it in; leaving would take a member from its Raft.
				rs.Log("a manager of the swarm restored from %s", mk.Backup)
				_ = rs.State.Save(restoreFollowed, mk.RequestID)
				return false
			}
		}
		rs.Log("demoted for the restore from %s: leaving the swarm, to join the restored one", mk.Backup)
		if err := rs.Engine.Leave(ctx); err != nil {
			rs.Log("leaving the swarm for the restored one: %v", err)
			return true
		}
		if err := rs.State.Save(restoreLeft, mk.RequestID); err != nil {
			return true
		}
	}
	if !mk.Done && mk.Restorer == rs.InstanceID {
		if mk.LeaderLeft {
			rs.restoreAsRestorer(ctx, mk)
		}
		return true
	}
	if !mk.Done {
		return true // the restored swarm is not there yet
	}
	if !rs.join.joinManagers(ctx) {
		return true
	}
	if rs.State.Save(restoreFollowed, mk.RequestID) == nil {
		_ = rs.State.Remove(restoreLeft)
	}
	rs.join.republish = true
	return true
}

// restoreAsRestorer restores the backup of the marker on this manager,
// out of the swarm (the leader demoted it, and it left), as the leader
// would have: the swarm of the backup knows its manager at this one's
// address. It leads the restored swarm, and says how it ended.
func (rs *restorer) restoreAsRestorer(ctx context.Context, mk wire.RestoreMarker) {
	r := wire.RestoreDetail{RequestID: mk.RequestID, Backup: mk.Backup}
	var run string
	if _, err := rs.State.Load(restoreRun, &run); err != nil {
		return
	}
	if run == mk.RequestID {
		rs.finish(ctx, r, wire.RestoreFailed, "the restore was cut short (the agent restarted); the swarm is the one this engine has now", &mk)
		_ = rs.State.Remove(restoreRun)
		return
	}
	archive, _, err := rs.Bucket.Get(ctx, mk.Backup)
	if err != nil {
		rs.finish(ctx, r, wire.RestoreFailed, fmt.Sprintf("reading the backup: %v", err), &mk)
		return
	}
	if err := rs.State.Save(restoreRun, mk.RequestID); err != nil {
		return
	}
	outcome, reason := rs.restoreTaken(ctx, mk, archive)
	rs.finish(ctx, r, outcome, reason, &mk)
	_ = rs.State.Remove(restoreRun)
	if outcome == wire.RestoreRestored && rs.State.Save(restoreFollowed, mk.RequestID) == nil {
		_ = rs.State.Remove(restoreLeft)
	}
}

// restoreTaken restores archive, the backup of the marker this manager
// took, and rotates the join tokens and the CA when the marker says, then
// publishes the join material: the outcome, and why.
func (rs *restorer) restoreTaken(ctx context.Context, mk wire.RestoreMarker, archive []byte) (outcome, reason string) {
	rs.Log("restoring the backup %s it took, on %s, as the leader asked", mk.Backup, rs.Address)
	if err := rs.Backups.Restore(ctx, archive, rs.Address); err != nil {
		return wire.RestoreFailed, fmt.Sprintf("restoring the backup: %v", err)
	}
	if mk.Rotate {
		if rs.Tokens == nil {
			return wire.RestoreFailed, "restored, but the join tokens of another cluster's swarm cannot be rotated here"
		}
		if err := rotateAll(ctx, rs.Tokens); err != nil {
			return wire.RestoreFailed, fmt.Sprintf("restored, but rotating the CA and join tokens failed: %v", err)
		}
		reason = "another cluster's backup: the CA and the join tokens rotated"
	}
	rs.join.republished(ctx)
	return wire.RestoreRestored, reason
}
