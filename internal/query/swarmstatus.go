package query

import (
	"fmt"
	"math"
	"time"

	"github.com/clusterctl/clusterctl/internal/wire"
)

// BackupEvery is how often the swarm state is backed up at
// least (wire.BackupEvery); a backup older than twice that is overdue.
const BackupEvery = wire.BackupEvery

// SwarmStatus is what describe shows of a cluster's swarm, from its status
// snapshot. The JSON keys are a public interface.
type SwarmStatus struct {
	SnapshotTime time.Time `json:"snapshotTime"`
	AgeSeconds   float64   `json:"ageSeconds"`
	// Stale: the snapshot is too old (or dated too far ahead) to say what
	// the swarm is now; what follows is what it was then.
	Stale     bool      `json:"stale"`
	Publisher string    `json:"publisher"`
	Managers  []Manager `json:"managers"`
	// Leader is the instance of the leading manager ("" when none leads);
	// its swarm node id when the node names no instance.
	Leader string `json:"leader"`
	Quorum Quorum `json:"quorum"`
	Backup Backup `json:"backup"`
}

// Manager is one manager of the swarm.
type Manager struct {
	InstanceID string `json:"instanceId"`
	NodeID     string `json:"nodeId"`
	Hostname   string `json:"hostname"`
	Address    string `json:"address"`
	// Status is the manager status: leader, reachable or unreachable.
	Status       string `json:"status"`
	State        string `json:"state"`
	Availability string `json:"availability"`
}

// Quorum is how many of the swarm's managers are reachable against how
// many the swarm's Raft needs (a majority), and how many more may fail.
type Quorum struct {
	Managers  int  `json:"managers"`
	Reachable int  `json:"reachable"`
	Needed    int  `json:"needed"`
	Tolerates int  `json:"tolerates"`
	Lost      bool `json:"lost"`
}

func (q Quorum) String() string {
	if q.Managers == 0 {
		return "no managers"
	}
	s := fmt.Sprintf("%d/%d reachable, ", q.Reachable, q.Managers)
	if q.Lost {
		return s + fmt.Sprintf("quorum lost (%d needed)", q.Needed)
	}
	return s + fmt.Sprintf("tolerates %s", Plural(q.Tolerates, "failure"))
}

// QuorumOf counts the reachable managers (the leader among them).
func QuorumOf(managers []Manager) Quorum {
	q := Quorum{Managers: len(managers), Needed: len(managers)/2 + 1}
	for _, m := range managers {
		if m.Status == "leader" || m.Status == "reachable" {
			q.Reachable++
		}
	}
	if q.Managers == 0 {
		q.Needed = 0
	}
	q.Lost = q.Reachable < q.Needed
	if !q.Lost {
		q.Tolerates = q.Reachable - q.Needed
	}
	return q
}

// Backup is what the snapshot says of the backup of the swarm state: every
// swarm has one (a lone manager takes it, or a follower of several), which
// a replacement restores when every manager is lost.
type Backup struct {
	// Needed is always true now; kept in the JSON for scripts that read it.
	Needed bool       `json:"needed"`
	Last   *time.Time `json:"last"`
	// AgeSeconds is the last backup's age; null without one.
	AgeSeconds *float64 `json:"ageSeconds"`
	// Overdue: needed, and none yet or the last older than twice the
	// interval.
	Overdue bool `json:"overdue"`
}

// Text says it for a person: "3m12s ago (TIME)" or "none yet".
func (b Backup) Text(managers int) string {
	switch {
	case b.Last == nil:
		return "none yet"
	}
	return fmt.Sprintf("%s ago (%s)", FormatAge(time.Duration(*b.AgeSeconds*float64(time.Second))), b.Last.Format(time.RFC3339))
}

// Status is the swarm's status for describe; nil without a snapshot.
func (w Swarm) Status() *SwarmStatus {
	snap := w.Snapshot
	if snap == nil {
		return nil
	}
	st := &SwarmStatus{
		SnapshotTime: snap.Time, AgeSeconds: seconds(w.Age()), Stale: w.Stale(),
		Publisher: snap.Publisher, Managers: []Manager{},
	}
	for _, n := range snap.Nodes {
		if n.Role != "manager" {
			continue
		}
		m := Manager{InstanceID: n.InstanceID, NodeID: n.NodeID, Hostname: n.Hostname, Address: n.Address,
			Status: n.ManagerStatus, State: n.State, Availability: n.Availability}
		st.Managers = append(st.Managers, m)
		if m.Status == "leader" {
			st.Leader = m.InstanceID
			if st.Leader == "" {
				st.Leader = m.NodeID
			}
		}
	}
	st.Quorum = QuorumOf(st.Managers)
	st.Backup.Needed = true
	{
		if b := snap.LastBackup; b != nil {
			st.Backup.Last = b
			age := seconds(w.Now.Sub(*b))
			st.Backup.AgeSeconds = &age
		}
		st.Backup.Overdue = st.Backup.Last == nil || w.Now.Sub(*st.Backup.Last) > 2*BackupEvery
	}
	return st
}

// seconds rounds a duration to tenths of a second for JSON.
func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*10) / 10 }

// ManagersTable is the table of the swarm's managers.
func (st *SwarmStatus) ManagersTable() Table {
	t := Table{Header: []string{"INSTANCE", "ADDRESS", "STATUS", "STATE", "AVAILABILITY", "NODE"}}
	for _, m := range st.Managers {
		t.Rows = append(t.Rows, []string{dash(m.InstanceID), dash(m.Address), dash(m.Status), dash(m.State), dash(m.Availability), m.NodeID})
	}
	return t
}
