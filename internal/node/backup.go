package node

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
)

const backupState = "backup"

// backupRecord is the last backup this manager made, and of which members.
type backupRecord struct {
	Time    time.Time `json:"time"`
	Members string    `json:"members"`
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

// backUp backs the swarm state up when this leader is the only manager
// and a backup is due (now with force): none yet, the last one older than
// BackupEvery, or the swarm's members changed since (BackupSpacing apart
// at most, when they keep changing). With more managers there is nothing
// a newcomer would restore (it joins the others) and a backup would go
// stale: whoever leads them removes it, whichever manager made it.
func (m *Manager) backUp(ctx context.Context, force bool) error {
	nodes, err := m.Engine.Nodes(ctx)
	if err != nil {
		return err
	}
	count := countManagers(nodes)
	if err := m.recordManagers(ctx, count); err != nil {
		return fmt.Errorf("recording the manager count: %w", err)
	}
	if count > 1 {
		// Every round: a lone manager that lost the lead since may still
		// be writing one.
		if err := m.Bucket.Delete(ctx, names.ControlKey(names.Backup)); err != nil {
			return err
		}
		if err := m.State.Remove(backupState); err != nil {
			return err
		}
		if !m.backupGone {
			m.Log("no backup of the swarm state: %d managers keep it", count)
		}
		m.backupGone = true
		return nil
	}
	m.backupGone = false
	now := m.Clock.Now()
	current := members(nodes)
	var last backupRecord
	if _, err := m.State.Load(backupState, &last); err != nil {
		return err
	}
	if !force && now.Before(last.Time.Add(m.T.BackupEvery)) &&
		(last.Members == current || now.Before(last.Time.Add(m.T.BackupSpacing))) {
		return nil
	}
	archive, err := m.Backups.Archive(ctx)
	if err != nil {
		return err
	}
	meta := map[string]string{takenKey: strconv.FormatInt(now.Unix(), 10)}
	if err := m.Bucket.Put(ctx, names.ControlKey(names.Backup), archive, "application/gzip", meta); err != nil {
		return err
	}
	if err := m.State.Save(backupState, backupRecord{Time: now.UTC().Truncate(time.Second), Members: current}); err != nil {
		return err
	}
	m.Log("backed the swarm state up to %s in the cluster bucket", names.ControlKey(names.Backup))
	return nil
}
