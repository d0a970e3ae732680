package node

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
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

// managerCount is the record of the swarm's manager count in the bucket
// (names.ManagerCount), and since when it is so: a restore refuses a
// backup older than the last change, which was taken of another swarm
// than the one that was lost.
type managerCount struct {
	Count int       `json:"count"`
	Since time.Time `json:"since"`
}

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

// recordManagers records the manager count in the bucket when it is not
// the one recorded.
func (m *Manager) recordManagers(ctx context.Context, count int) error {
	if m.managers == 0 {
		b, _, err := m.Bucket.Get(ctx, names.ControlKey(names.ManagerCount))
		switch {
		case err == nil:
			var mc managerCount
			if json.Unmarshal(b, &mc) == nil {
				m.managers = mc.Count
			}
		case err != ErrMissing:
			return err
		}
	}
	if m.managers == count {
		return nil
	}
	b, _ := json.Marshal(managerCount{Count: count, Since: m.Clock.Now().UTC().Truncate(time.Second)})
	if err := m.Bucket.Put(ctx, names.ControlKey(names.ManagerCount), b, "application/json"); err != nil {
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
		if m.backupGone {
			return nil
		}
		if err := m.Bucket.Delete(ctx, names.ControlKey(names.Backup)); err != nil {
			return err
		}
		if err := m.State.Remove(backupState); err != nil {
			return err
		}
		m.backupGone = true
		m.Log("no backup of the swarm state: %d managers keep it", count)
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
	if err := m.Bucket.Put(ctx, names.ControlKey(names.Backup), archive, "application/gzip"); err != nil {
		return err
	}
	if err := m.State.Save(backupState, backupRecord{Time: now.UTC().Truncate(time.Second), Members: current}); err != nil {
		return err
	}
	m.Log("backed the swarm state up to %s in the cluster bucket", names.ControlKey(names.Backup))
	return nil
}
