package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// The managers form the swarm without a fixed first node: the first to
// write the initialisation marker (a conditional write: only if there is
// none) initialises the swarm, or restores it from the last backup when
// there is one; the others join as managers with the manager token the
// leader publishes, through the managers it publishes. A marker whose
// instance is gone while no published manager answers is stale (every
// manager was lost): it is taken over, conditionally again, by one
// newcomer.

var initKey = names.ControlKey(names.InitMarker)

// Init makes this node a manager of the cluster's swarm.
func (m *Manager) Init(ctx context.Context) error {
	self, err := m.Engine.Self(ctx)
	if err != nil {
		return err
	}
	if self.LocalState == StateActive {
		if !self.ControlAvailable {
			return fmt.Errorf("this node is in a swarm but not one of its managers")
		}
		m.Log("already a manager of the swarm")
		if err := m.parts().join.applyAliases(ctx); err != nil {
			m.Log("applying the managers' addresses failed: %v", err)
		}
		return nil
	}
	deadline := m.Clock.Now().Add(m.T.JoinTimeout)
	for {
		if self, err := m.Engine.Self(ctx); err == nil && self.LocalState == StatePending {
			_ = m.Engine.Leave(ctx)
		}
		if err := m.claim(ctx, ""); err == nil {
			return m.initialise(ctx)
		} else if !errors.Is(err, ErrLost) {
			m.Log("claiming the swarm's initialisation: %v", err)
		}
		if err := m.parts().join.applyAliases(ctx); err != nil {
			m.Log("applying the managers' addresses failed: %v", err)
		}
		if m.parts().join.joinManagers(ctx) {
			return nil
		}
		if etag, ok := m.staleMarker(ctx); ok && m.claim(ctx, etag) == nil {
			return m.initialise(ctx)
		}
		if !m.Clock.Now().Before(deadline) {
			return fmt.Errorf("not a manager of the swarm within %s", m.T.JoinTimeout)
		}
		if err := m.Clock.Sleep(ctx, m.T.JoinPause); err != nil {
			return err
		}
	}
}

// claim writes the initialisation marker naming this instance: only if
// there is none, or, given its ETag, only if the marker is still that one.
// Of managers claiming at once, exactly one succeeds.
func (m *Manager) claim(ctx context.Context, etag string) error {
	marker := wire.InitMarker{InstanceID: m.InstanceID, Address: m.Address, Time: m.Clock.Now()}
	return m.Bucket.Claim(ctx, initKey, marker.Marshal(), etag)
}

// staleMarker is the ETag of the initialisation marker when it is stale:
// it names this instance (an earlier boot claimed it and did not finish),
// or its instance is gone while no published manager answers.
func (m *Manager) staleMarker(ctx context.Context) (string, bool) {
	body, obj, err := m.Bucket.Get(ctx, initKey)
	if err != nil {
		return "", false
	}
	owner := wire.ParseInitMarker(body).InstanceID
	if owner != m.InstanceID && wire.ValidInstanceID(owner) {
		if b, _, err := m.Bucket.Get(ctx, names.ManagersKey); err == nil {
			for _, a := range strings.Fields(string(b)) {
				if ValidManager(a) && m.Network.Answers(ctx, a) {
					return "", false
				}
			}
		}
		states, err := m.Instances.States(ctx, []string{owner})
		if err != nil {
			return "", false // better to wait than to take over
		}
		if s := states[owner]; s == "pending" || s == "running" {
			return "", false
		}
		if why, ok := m.publishedGone(ctx); !ok {
			m.Log("not taking the swarm over: %s", why)
			return "", false
		}
		m.Log("the swarm's managers are gone (the initialising instance %s too): taking over", owner)
	}
	return obj.ETag, true
}

// publishedGone tells whether every published manager but this node is
// proven gone by EC2 and Auto Scaling (provenGone), and why not: one that
// does not answer may be cut off, and taking the swarm over then would
// make a second swarm. Without the means to ask (no Recovery), the
// answers and the initialising instance decide alone, as before.
func (m *Manager) publishedGone(ctx context.Context) (string, bool) {
	if m.Recovery == nil || m.Recovery.Proof == nil {
		return "", true
	}
	b, _, err := m.Bucket.Get(ctx, names.ManagersKey)
	if errors.Is(err, ErrMissing) {
		return "", true
	}
	if err != nil {
		return err.Error(), false
	}
	var addrs []string
	for _, a := range strings.Fields(string(b)) {
		if ValidManager(a) && host(a) != m.Address {
			addrs = append(addrs, host(a))
		}
	}
	if len(addrs) == 0 {
		return "", true
	}
	at, err := m.Recovery.Proof.At(ctx, addrs)
	if err != nil {
		return fmt.Sprintf("asking EC2 for the published managers: %v", err), false
	}
	group, err := m.Recovery.Proof.ManagerGroup(ctx, m.Cluster)
	if err != nil {
		return fmt.Sprintf("asking Auto Scaling for the managers' group: %v", err), false
	}
	if alive, _ := judgeLost(ctx, m.Recovery.Proof, m.Log, addrs, at, group); len(alive) > 0 {
		return strings.Join(alive, "; "), false
	}
	return "", true
}

// initialise initialises the swarm on this node, or restores it from the
// newest backup that is not refused (restoreCandidate).
func (m *Manager) initialise(ctx context.Context) error {
	key, archive, err := m.restoreCandidate(ctx)
	if err != nil {
		return err
	}
	if key != "" {
		if err := m.Backups.Restore(ctx, archive, m.Address); err != nil {
			return err
		}
		m.Log("restored the swarm from its backup %s on %s", key, m.Address)
		return nil
	}
	if err := m.Engine.Init(ctx, m.Address); err != nil {
		return err
	}
	m.Log("initialised the swarm on %s", m.Address)
	return nil
}

// restoreCandidate is the newest backup (its key and archive) of this
// cluster (as its metadata says) not older than the last change of the
// manager count: an older one was taken of a swarm that had since gained
// or lost managers, and lost them all. The
// backups are tried newest first, the lone manager's single backup of
// before last; "" when none is left, each refusal logged.
func (m *Manager) restoreCandidate(ctx context.Context) (string, []byte, error) {
	list, err := listBackups(ctx, m.Bucket)
	if err != nil {
		return "", nil, err
	}
	keys := []string{}
	for i := len(list) - 1; i >= 0; i-- {
		keys = append(keys, list[i].Key)
	}
	keys = append(keys, names.ControlKey(names.Backup))
	for _, key := range keys {
		archive, obj, err := m.Bucket.Get(ctx, key)
		if errors.Is(err, ErrMissing) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		if meta, _ := wire.ParseBackupMeta(obj.Metadata); meta.Cluster != "" && meta.Cluster != m.Cluster {
			// Copied from another cluster's bucket: its agents are not
			// this cluster's, and restoring it would take them in.
			m.Log("refusing the backup: taken by the managers of cluster %q, not %q: %s", meta.Cluster, m.Cluster, key)
			continue
		}
		err = m.current(ctx, obj)
		if err == nil {
			return key, archive, nil
		}
		if !errors.Is(err, errStaleBackup) {
			return "", nil, err
		}
		m.Log("%v: %s", err, key)
	}
	return "", nil, nil
}

// current says whether the backup obj was taken (its metadata "taken",
// Unix seconds) since the number of managers last changed: an older one,
// or one that does not say, is of a swarm that had others. As the shell
// managers judge it: no record of the managers is no change.
func (m *Manager) current(ctx context.Context, obj Object) error {
	var since int64
	switch b, _, err := m.Bucket.Get(ctx, names.ControlKey(names.ManagersChanged)); {
	case err == nil:
		mc, ok := parseManagersChanged(b)
		if !ok {
			return fmt.Errorf("refusing the backup of the swarm state: %s is not COUNT SINCE", names.ControlKey(names.ManagersChanged))
		}
		since = mc.Since
	case !errors.Is(err, ErrMissing):
		return err
	}
	taken, err := strconv.ParseInt(obj.Metadata[takenKey], 10, 64)
	if obj.Metadata[takenKey] == "" {
		taken, err = 0, nil
	}
	if err != nil {
		return fmt.Errorf("refusing the backup of the swarm state: its time %q is not Unix seconds", obj.Metadata[takenKey])
	}
	if taken < since {
		return fmt.Errorf("%w (taken at %s, managers changed at %s)", errStaleBackup, unixTime(taken), unixTime(since))
	}
	return nil
}

// errStaleBackup: the backup is older than the last change of managers.
var errStaleBackup = errors.New("refusing the backup: older than the last change of managers")

func unixTime(s int64) string { return time.Unix(s, 0).UTC().Format(time.RFC3339) }

// PublishAtBoot publishes the join material, retrying while a newly joined
// manager's swarm settles.
func (m *Manager) PublishAtBoot(ctx context.Context) error {
	deadline := m.Clock.Now().Add(m.T.JoinTimeout)
	for {
		err := m.parts().join.publish(ctx, true)
		if err == nil {
			return nil
		}
		if !m.Clock.Now().Before(deadline) {
			return err
		}
		if err := m.Clock.Sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
}

// Ready waits until this node is a Reachable manager of its swarm (the
// leader is one): only then does it signal CloudFormation, and does a
// rolling update go on to replace the next manager. Managers run no
// workloads: it drains itself.
func (m *Manager) Ready(ctx context.Context) error {
	deadline := m.Clock.Now().Add(m.T.JoinTimeout)
	for {
		self, err := m.Engine.Self(ctx)
		if err == nil && self.NodeID != "" {
			n, err := m.Engine.Node(ctx, self.NodeID)
			if err == nil && n.Reachability == "reachable" {
				m.Log("a Reachable manager of the swarm")
				if n.Availability != wire.AvailabilityDrain {
					return m.Engine.SetAvailability(ctx, n.ID, wire.AvailabilityDrain)
				}
				return nil
			}
		}
		if !m.Clock.Now().Before(deadline) {
			return fmt.Errorf("not a Reachable manager within %s", m.T.JoinTimeout)
		}
		if err := m.Clock.Sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}
