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

// swarmBackups are the backups of the swarm (see above): the leader's
// part and a follower's, and what the leader keeps of them for the
// snapshot.
type swarmBackups struct {
	Cluster    string
	InstanceID string
	Engine     Engine
	Bucket     Bucket
	// Objects is what a backup is judged by: the swarm's id and objects;
	// Backups takes one.
	Objects SwarmObjects
	Backups Backups
	State   State
	Clock   Clock
	Log     Logger
	T       Timings
	// Keep is how many backups are kept (0: wire.BackupKeep).
	Keep int

	// managers is the number of managers last recorded in the bucket (0:
	// not read yet); deferred why a backup due is not taken (last
	// logged); legacyGone: the lone manager's single backup of before is
	// removed.
	managers   int
	deferred   string
	legacyGone bool
	// meta and list: the backups kept, for the snapshot.
	meta map[string]wire.BackupMeta
	list []wire.BackupInfo
}

// reset forgets what the record of managers says when this manager stops
// leading: another leader may change it meanwhile.
func (sb *swarmBackups) reset() { sb.managers, sb.deferred = 0, "" }

// recordManagers records the number of managers in the bucket when it is
// not the one recorded, and since when: now, unless there was no record
// (0, as the shell managers write it).
func (sb *swarmBackups) recordManagers(ctx context.Context, count int) error {
	known := sb.managers != 0
	if !known {
		b, _, err := sb.Bucket.Get(ctx, names.ControlKey(names.ManagersChanged))
		switch {
		case err == nil:
			if mc, ok := parseManagersChanged(b); ok {
				sb.managers, known = mc.Count, true
			} else {
				// Unreadable: rewritten as changed now, which refuses
				// any older backup.
				sb.managers, known = -1, true
			}
		case !errors.Is(err, ErrMissing):
			return err
		}
	}
	if known && sb.managers == count {
		return nil
	}
	mc := managersChanged{Count: count}
	if known {
		mc.Since = sb.Clock.Now().Unix()
	}
	if err := sb.Bucket.Put(ctx, names.ControlKey(names.ManagersChanged), []byte(mc.String()), "text/plain", nil); err != nil {
		return err
	}
	sb.managers = count
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
func (sb *swarmBackups) backUp(ctx context.Context, force bool) error {
	nodes, err := sb.Engine.Nodes(ctx)
	if err != nil {
		return err
	}
	count := countManagers(nodes)
	if err := sb.recordManagers(ctx, count); err != nil {
		return fmt.Errorf("recording the manager count: %w", err)
	}
	var rec backupRecord
	if _, err := sb.State.Load(backupState, &rec); err != nil {
		return err
	}
	if force && rec.Wanted == "" && rec.Order == nil {
		// An order outstanding is a backup taken from now on: it will do.
		rec.Wanted = "asked for"
	}
	list, err := listBackups(ctx, sb.Bucket)
	if err != nil {
		return err
	}
	now := sb.Clock.Now()
	if n := len(list); n > 0 && list[n-1].Time.After(rec.Time) {
		rec.Time = list[n-1].Time
		if rec.Order != nil && !list[n-1].Time.Before(rec.Order.Time.Truncate(time.Second)) {
			sb.Log("follower %s took the backup ordered (%s)", rec.Order.Node, list[n-1].Key)
			rec.Members, rec.Order, rec.Lapsed = rec.OrderDigest, nil, nil
			if err := sb.Bucket.Delete(ctx, names.ControlKey(names.BackupOrder)); err != nil {
				return err
			}
		}
	}
	if err := sb.prune(ctx, list); err != nil {
		return err
	}
	if err := sb.describe(ctx, list); err != nil {
		return err
	}
	if o := rec.Order; o != nil {
		if now.Before(o.Deadline) {
			return sb.State.Save(backupState, rec) // the follower is at it
		}
		sb.Log("follower %s did not take the backup ordered by %s: asking another", o.Node, o.Deadline.Format(time.RFC3339))
		rec.Lapsed, rec.Order, rec.Wanted = append(rec.Lapsed, o.Node), nil, o.Reason
	}
	digest, err := sb.digest(ctx, nodes)
	if err != nil {
		return err
	}
	reason := backupDue(rec, digest, now, sb.T)
	if reason == "" {
		return sb.State.Save(backupState, rec)
	}
	if raftManagers(nodes) <= 1 {
		// Alone in the Raft (a restored or forced swarm still lists its
		// lost managers until they are removed): no follower to ask.
		if err := sb.takeBackup(ctx, 1, reason); err != nil {
			return err
		}
		rec.Time, rec.Members, rec.Wanted, rec.Lapsed = now.UTC().Truncate(time.Second), digest, "", nil
		return sb.State.Save(backupState, rec)
	}
	follower, why := chooseFollower(nodes, rec.Lapsed)
	if follower == "" {
		if why != sb.deferred {
			sb.Log("a backup is due (%s) but none is taken: %s", reason, why)
		}
		sb.deferred = why
		return sb.State.Save(backupState, rec)
	}
	sb.deferred = ""
	order := wire.BackupOrder{ID: wire.NewRequestID(), Node: follower, Time: now.UTC(), Deadline: now.Add(sb.T.BackupOrderWait).UTC(), Reason: reason}
	if err := sb.Bucket.Put(ctx, names.ControlKey(names.BackupOrder), order.Marshal(), "application/json", nil); err != nil {
		return err
	}
	rec.Order, rec.OrderDigest, rec.Wanted = &order, digest, ""
	sb.Log("a backup is due (%s): ordered it of follower %s", reason, follower)
	return sb.State.Save(backupState, rec)
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
func (sb *swarmBackups) takeBackup(ctx context.Context, managers int, reason string) error {
	swarmID, _, err := sb.Objects.Objects(ctx)
	if err != nil {
		return err
	}
	archive, err := sb.Backups.Archive(ctx)
	if err != nil {
		return err
	}
	now := sb.Clock.Now().UTC().Truncate(time.Second)
	meta := wire.BackupMeta{Taken: now, SwarmID: swarmID, Managers: managers, TakenBy: sb.InstanceID, Cluster: sb.Cluster}
	key := names.BackupKey(now, sb.InstanceID)
	if err := sb.Bucket.Put(ctx, key, archive, "application/gzip", meta.Metadata()); err != nil {
		return err
	}
	sb.Log("backed the swarm state up to %s (%d bytes, %d managers): %s", key, len(archive), managers, reason)
	return nil
}

// followOrder is a follower's part: the order that names this node,
// not carried out yet and not past its deadline, is taken once, unless
// this node leads now or too few managers are reachable to pause one.
func (sb *swarmBackups) followOrder(ctx context.Context) error {
	body, _, err := sb.Bucket.Get(ctx, names.ControlKey(names.BackupOrder))
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
	self, err := sb.Engine.Self(ctx)
	if err != nil || order.Node != self.NodeID {
		return err
	}
	var done string
	if _, err := sb.State.Load(orderDone, &done); err != nil {
		return err
	}
	if done == order.ID || !sb.Clock.Now().Before(order.Deadline) {
		return nil
	}
	nodes, err := sb.Engine.Nodes(ctx)
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
		sb.Log("not taking the backup ordered (%s): %s", order.ID, why)
		return sb.State.Save(orderDone, order.ID)
	}
	if err := sb.takeBackup(ctx, countManagers(nodes), "ordered by the leader: "+order.Reason); err != nil {
		return err
	}
	return sb.State.Save(orderDone, order.ID)
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

// listBackups lists the swarm's backups in bucket, oldest first.
func listBackups(ctx context.Context, bucket Bucket) ([]listedBackup, error) {
	objs, err := bucket.List(ctx, names.ControlKey(names.BackupsPrefix)+"/")
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

// keepOf is how many backups are kept, given the core's setting (0:
// wire.BackupKeep).
func keepOf(setting int) int {
	if setting > 0 {
		return setting
	}
	return wire.BackupKeep
}

// prune removes the oldest backups beyond Keep, and the lone
// manager's single backup of before once there is a newer one.
func (sb *swarmBackups) prune(ctx context.Context, list []listedBackup) error {
	for len(list) > keepOf(sb.Keep) {
		if err := sb.Bucket.Delete(ctx, list[0].Key); err != nil {
			return err
		}
		sb.Log("removed the backup %s: %d are kept", list[0].Key, keepOf(sb.Keep))
		list = list[1:]
	}
	if len(list) > 0 && !sb.legacyGone {
		if err := sb.Bucket.Delete(ctx, names.ControlKey(names.Backup)); err != nil {
			return err
		}
		sb.legacyGone = true
	}
	return nil
}

// digest is a digest of the swarm's members and objects (services,
// secrets, configs, networks, each with its version): a backup is due
// when it changes.
func (sb *swarmBackups) digest(ctx context.Context, nodes []Node) (string, error) {
	_, objects, err := sb.Objects.Objects(ctx)
	if err != nil {
		return "", err
	}
	objects = slices.Clone(objects)
	sort.Strings(objects)
	return Digest([]byte(members(nodes) + "\n" + strings.Join(objects, "\n"))), nil
}

// describe keeps the backups kept, with their metadata (read once
// per backup), for the status snapshot: the bucket lets only the managers
// read them, and clusterctl backups lists them from the snapshot.
func (sb *swarmBackups) describe(ctx context.Context, list []listedBackup) error {
	if len(list) > keepOf(sb.Keep) {
		list = list[len(list)-keepOf(sb.Keep):]
	}
	if sb.meta == nil {
		sb.meta = map[string]wire.BackupMeta{}
	}
	infos := make([]wire.BackupInfo, 0, len(list))
	known := map[string]wire.BackupMeta{}
	for _, b := range list {
		meta, ok := sb.meta[b.Key]
		if !ok {
			obj, err := sb.Bucket.Head(ctx, b.Key)
			if errors.Is(err, ErrMissing) {
				continue
			}
			if err != nil {
				return err
			}
			if meta, err = wire.ParseBackupMeta(obj.Metadata); err != nil {
				sb.Log("the backup %s: %v", b.Key, err)
			}
			if meta.Taken.IsZero() {
				meta.Taken = b.Time
			}
		}
		known[b.Key] = meta
		infos = append(infos, wire.BackupInfo{Key: b.Key, Size: b.Size, BackupMeta: meta})
	}
	sb.meta, sb.list = known, infos
	return nil
}
