package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

const backupState = "backup"

// backupRecord is what the leader knows of the swarm's backups: the
// newest one's time (the snapshot's lastBackup), the swarm's digest
// (members and objects) it was taken of, the order outstanding with the
// digest it was ordered at, the followers whose orders lapsed (asked last),
// and a backup wanted now (a request), with why.
type backupRecord struct {
	Time        time.Time         `json:"time"`
	Members     string            `json:"members"`
	Order       *wire.BackupOrder `json:"order,omitempty"`
	OrderDigest string            `json:"orderDigest,omitempty"`
	Lapsed      []string          `json:"lapsed,omitempty"`
	Wanted      string            `json:"wanted,omitempty"`
}

// managersChanged is the record of the swarm's number of managers in the
// bucket (names.ManagersChanged), and when it last changed: a restore
// refuses a backup taken before then, which was of another swarm than the
// one that was lost. The object is "COUNT SINCE" (Unix seconds; 0: not
// since it was first recorded), as the shell managers write it too.
type managersChanged struct {
	Count int
	Since int64
}

func parseManagersChanged(b []byte) (managersChanged, bool) {
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return managersChanged{}, false
	}
	c, err1 := strconv.Atoi(f[0])
	s, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || c < 0 || s < 0 {
		return managersChanged{}, false
	}
	return managersChanged{Count: c, Since: s}, true
}

func (mc managersChanged) String() string { return fmt.Sprintf("%d %d\n", mc.Count, mc.Since) }

// takenKey is the backup's metadata saying when it was taken (Unix
// seconds).
const takenKey = "taken"

// members is a digest of the swarm's members: its nodes and their roles.
func members(nodes []Node) string {
	var l []string
	for _, n := range nodes {
		l = append(l, n.ID+" "+n.Role)
	}
	sort.Strings(l)
	return Digest([]byte(strings.Join(l, "\n")))
}

// raftManagers counts the managers with a manager status: the members of
// the swarm's Raft.
func raftManagers(nodes []Node) int {
	c := 0
	for _, n := range nodes {
		if n.Role == "manager" && n.Manager() {
			c++
		}
	}
	return c
}

func countManagers(nodes []Node) int {
	c := 0
	for _, n := range nodes {
		if n.Role == "manager" {
			c++
		}
	}
	return c
}

// recordManagers records the number of managers in the bucket when it is
// not the one recorded, and since when: now, unless there was no record
// (0, as the shell managers write it).
func (m *Manager) recordManagers(ctx context.Context, count int) error {
	known := m.managers != 0
	if !known {
		b, _, err := m.Bucket.Get(ctx, names.ControlKey(names.ManagersChanged))
		switch {
		case err == nil:
			if mc, ok := parseManagersChanged(b); ok {
				m.managers, known = mc.Count, true
			} else {
				// Unreadable: rewritten as changed now, which refuses
				// any older backup.
				m.managers, known = -1, true
			}
		case !errors.Is(err, ErrMissing):
			return err
		}
	}
	if known && m.managers == count {
		return nil
	}
	mc := managersChanged{Count: count}
	if known {
		mc.Since = m.Clock.Now().Unix()
	}
	if err := m.Bucket.Put(ctx, names.ControlKey(names.ManagersChanged), []byte(mc.String()), "text/plain", nil); err != nil {
		return err
	}
	m.managers = count
	return nil
}

// The backups of every swarm (docs/design.md, "Backups of the swarm").
// The leader decides when one is due and who takes it; a lone leader takes
// it itself, and with several managers the leader orders one follower
// (never itself: the copy pauses the engine, and a paused leader stops the
// swarm) through names.BackupOrder, which that follower carries out in its
// own round, only while a full quorum plus one is reachable, so that the
// others keep the quorum while it is paused. The leader sees the backup
// appear under names.BackupsPrefix, prunes the oldest beyond BackupKeep,
// and orders another follower when an order lapses.

// backUp is the leader's part, every round; with force (a request, the
// last manager leaving) a backup is due now.
func (m *Manager) backUp(ctx context.Context, force bool) error {
	nodes, err := m.Engine.Nodes(ctx)
	if err != nil {
		return err
	}
	count := countManagers(nodes)
	if err := m.recordManagers(ctx, count); err != nil {
		return fmt.Errorf("recording the manager count: %w", err)
	}
	var rec backupRecord
	if _, err := m.State.Load(backupState, &rec); err != nil {
		return err
	}
	if force && rec.Wanted == "" && rec.Order == nil {
		// An order outstanding is a backup taken from now on: it will do.
		rec.Wanted = "asked for"
	}
	list, err := m.listBackups(ctx)
	if err != nil {
		return err
	}
	now := m.Clock.Now()
	if n := len(list); n > 0 && list[n-1].Time.After(rec.Time) {
		rec.Time = list[n-1].Time
		if rec.Order != nil && !list[n-1].Time.Before(rec.Order.Time.Truncate(time.Second)) {
			m.Log("follower %s took the backup ordered (%s)", rec.Order.Node, list[n-1].Key)
			rec.Members, rec.Order, rec.Lapsed = rec.OrderDigest, nil, nil
			if err := m.Bucket.Delete(ctx, names.ControlKey(names.BackupOrder)); err != nil {
				return err
			}
		}
	}
	if err := m.pruneBackups(ctx, list); err != nil {
		return err
	}
	if err := m.describeBackups(ctx, list); err != nil {
		return err
	}
	if o := rec.Order; o != nil {
		if now.Before(o.Deadline) {
			return m.State.Save(backupState, rec) // the follower is at it
		}
		m.Log("follower %s did not take the backup ordered by %s: asking another", o.Node, o.Deadline.Format(time.RFC3339))
		rec.Lapsed, rec.Order, rec.Wanted = append(rec.Lapsed, o.Node), nil, o.Reason
	}
	digest, err := m.swarmDigest(ctx, nodes)
	if err != nil {
		return err
	}
	reason := backupDue(rec, digest, now, m.T)
	if reason == "" {
		return m.State.Save(backupState, rec)
	}
	if raftManagers(nodes) <= 1 {
		// Alone in the Raft (a restored or forced swarm still lists its
		// lost managers until they are removed): no follower to ask.
		if err := m.takeBackup(ctx, 1, reason); err != nil {
			return err
		}
		rec.Time, rec.Members, rec.Wanted, rec.Lapsed = now.UTC().Truncate(time.Second), digest, "", nil
		return m.State.Save(backupState, rec)
	}
	follower, why := chooseFollower(nodes, rec.Lapsed)
	if follower == "" {
		if why != m.backupDeferred {
			m.Log("a backup is due (%s) but none is taken: %s", reason, why)
		}
		m.backupDeferred = why
		return m.State.Save(backupState, rec)
	}
	m.backupDeferred = ""
	order := wire.BackupOrder{ID: wire.NewRequestID(), Node: follower, Time: now.UTC(), Deadline: now.Add(m.T.BackupOrderWait).UTC(), Reason: reason}
	if err := m.Bucket.Put(ctx, names.ControlKey(names.BackupOrder), order.Marshal(), "application/json", nil); err != nil {
		return err
	}
	rec.Order, rec.OrderDigest, rec.Wanted = &order, digest, ""
	m.Log("a backup is due (%s): ordered it of follower %s", reason, follower)
	return m.State.Save(backupState, rec)
}

// backupDue is why a backup is due, "" when none is: none yet, asked for,
// the last one older than BackupEvery, or the swarm changed since (but not
// within BackupSpacing of the last).
func backupDue(rec backupRecord, digest string, now time.Time, t Timings) string {
	switch {
	case rec.Wanted != "":
		return rec.Wanted
	case rec.Time.IsZero():
		return "none yet"
	case !now.Before(rec.Time.Add(t.BackupEvery)):
		return "the last is " + now.Sub(rec.Time).Truncate(time.Second).String() + " old"
	case digest != rec.Members && !now.Before(rec.Time.Add(t.BackupSpacing)):
		return "the swarm changed"
	}
	return ""
}

// chooseFollower is the follower to take a backup: the first by node id of
// the reachable managers that are not the leader, those whose order lapsed
// last; none (and why) while fewer than a quorum plus one managers are
// reachable, for pausing one must leave the others a quorum.
func chooseFollower(nodes []Node, lapsed []string) (string, string) {
	count, reachable := 0, 0
	var followers []string
	for _, n := range nodes {
		if n.Role != "manager" || !n.Manager() {
			continue
		}
		count++
		if n.Reachability != "reachable" {
			continue
		}
		reachable++
		if !n.Leader {
			followers = append(followers, n.ID)
		}
	}
	if need := count/2 + 2; reachable < need {
		return "", fmt.Sprintf("%d of %d managers reachable; a follower pauses for the copy only while %d are", reachable, count, need)
	}
	sort.SliceStable(followers, func(i, j int) bool {
		a, b := slices.Contains(lapsed, followers[i]), slices.Contains(lapsed, followers[j])
		if a != b {
			return b
		}
		return followers[i] < followers[j]
	})
	return followers[0], ""
}

// takeBackup archives this engine's swarm state and writes it under
// BackupsPrefix with its metadata.
func (m *Manager) takeBackup(ctx context.Context, managers int, reason string) error {
	swarmID, _, err := m.Objects.Objects(ctx)
	if err != nil {
		return err
	}
	archive, err := m.Backups.Archive(ctx)
	if err != nil {
		return err
	}
	now := m.Clock.Now().UTC().Truncate(time.Second)
	meta := wire.BackupMeta{Taken: now, SwarmID: swarmID, Managers: managers, TakenBy: m.InstanceID, Cluster: m.Cluster}
	key := names.BackupKey(now, m.InstanceID)
	if err := m.Bucket.Put(ctx, key, archive, "application/gzip", meta.Metadata()); err != nil {
		return err
	}
	m.Log("backed the swarm state up to %s (%d bytes, %d managers): %s", key, len(archive), managers, reason)
	return nil
}

// followBackupOrder is a follower's part: the order that names this node,
// not carried out yet and not past its deadline, is taken once, unless
// this node leads now or too few managers are reachable to pause one.
func (m *Manager) followBackupOrder(ctx context.Context) error {
	body, _, err := m.Bucket.Get(ctx, names.ControlKey(names.BackupOrder))
	if errors.Is(err, ErrMissing) {
		return nil
	}
	if err != nil {
		return err
	}
	order, err := wire.ParseBackupOrder(body)
	if err != nil {
		return err
	}
	self, err := m.Engine.Self(ctx)
	if err != nil || order.Node != self.NodeID {
		return err
	}
	var done string
	if _, err := m.State.Load(orderDone, &done); err != nil {
		return err
	}
	if done == order.ID || !m.Clock.Now().Before(order.Deadline) {
		return nil
	}
	nodes, err := m.Engine.Nodes(ctx)
	if err != nil {
		return err
	}
	follower, why := chooseFollower(nodes, nil)
	for _, n := range nodes {
		if n.ID == self.NodeID && n.Leader {
			why = "this manager leads the swarm now"
		}
	}
	if follower == "" || why != "" {
		m.Log("not taking the backup ordered (%s): %s", order.ID, why)
		return m.State.Save(orderDone, order.ID)
	}
	if err := m.takeBackup(ctx, countManagers(nodes), "ordered by the leader: "+order.Reason); err != nil {
		return err
	}
	return m.State.Save(orderDone, order.ID)
}

// orderDone is the state file of the last order this follower carried out
// (or refused).
const orderDone = "backup-order-done"

// listedBackup is a backup in the bucket.
type listedBackup struct {
	Key  string
	Time time.Time
	Size int64
}

// listBackups lists the swarm's backups, oldest first.
func (m *Manager) listBackups(ctx context.Context) ([]listedBackup, error) {
	objs, err := m.Bucket.List(ctx, names.ControlKey(names.BackupsPrefix)+"/")
	if err != nil {
		return nil, err
	}
	var out []listedBackup
	for _, o := range objs {
		if t, ok := wire.BackupKeyTime(o.Key); ok {
			out = append(out, listedBackup{Key: o.Key, Time: t, Size: o.Size})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// keep is how many backups are kept.
func (m *Manager) keep() int {
	if m.BackupKeep > 0 {
		return m.BackupKeep
	}
	return wire.BackupKeep
}

// pruneBackups removes the oldest backups beyond BackupKeep, and the lone
// manager's single backup of before once there is a newer one.
func (m *Manager) pruneBackups(ctx context.Context, list []listedBackup) error {
	for len(list) > m.keep() {
		if err := m.Bucket.Delete(ctx, list[0].Key); err != nil {
			return err
		}
		m.Log("removed the backup %s: %d are kept", list[0].Key, m.keep())
		list = list[1:]
	}
	if len(list) > 0 && !m.legacyGone {
		if err := m.Bucket.Delete(ctx, names.ControlKey(names.Backup)); err != nil {
			return err
		}
		m.legacyGone = true
	}
	return nil
}

// swarmDigest is a digest of the swarm's members and objects (services,
// secrets, configs, networks, each with its version): a backup is due
// when it changes.
func (m *Manager) swarmDigest(ctx context.Context, nodes []Node) (string, error) {
	_, objects, err := m.Objects.Objects(ctx)
	if err != nil {
		return "", err
	}
	objects = slices.Clone(objects)
	sort.Strings(objects)
	return Digest([]byte(members(nodes) + "\n" + strings.Join(objects, "\n"))), nil
}

// describeBackups keeps the backups kept, with their metadata (read once
// per backup), for the status snapshot: the bucket lets only the managers
// read them, and clusterctl backups lists them from the snapshot.
func (m *Manager) describeBackups(ctx context.Context, list []listedBackup) error {
	if len(list) > m.keep() {
		list = list[len(list)-m.keep():]
	}
	if m.backupMeta == nil {
		m.backupMeta = map[string]wire.BackupMeta{}
	}
	infos := make([]wire.BackupInfo, 0, len(list))
	known := map[string]wire.BackupMeta{}
	for _, b := range list {
		meta, ok := m.backupMeta[b.Key]
		if !ok {
			obj, err := m.Bucket.Head(ctx, b.Key)
			if errors.Is(err, ErrMissing) {
				continue
			}
			if err != nil {
				return err
			}
			if meta, err = wire.ParseBackupMeta(obj.Metadata); err != nil {
				m.Log("the backup %s: %v", b.Key, err)
			}
			if meta.Taken.IsZero() {
				meta.Taken = b.Time
			}
		}
		known[b.Key] = meta
		infos = append(infos, wire.BackupInfo{Key: b.Key, Size: b.Size, BackupMeta: meta})
	}
	m.backupMeta, m.backupList = known, infos
	return nil
}

// handleBackupRequest backs the swarm up now, as clusterctl backup asks
// (a follower takes it when there are several managers), and publishes
// the status snapshot often for a while, which says when the newest was
// taken. A request older than RequestMaxAge, or of another shape or
// cluster, is dropped.
func (m *Manager) handleBackupRequest(ctx context.Context, file string, n notice, e wire.Event) error {
	r, err := e.BackupRequest(m.Cluster)
	age := m.Clock.Now().Sub(n.Sent)
	switch {
	case err != nil:
		m.Log("ignoring a backup request: %v", err)
	case age > m.T.RequestMaxAge:
		m.Log("dropping backup request %s: made %s ago", r.RequestID, age.Round(time.Second))
	default:
		m.Log("backup request %s from %s", r.RequestID, r.RequestedBy)
		if err := m.backUp(ctx, true); err != nil {
			return err
		}
		m.watch()
	}
	return m.forget(ctx, file, n)
}
