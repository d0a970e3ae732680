package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SnapshotVersion is the version of the status snapshot's format.
const SnapshotVersion = 1

// Timing of the snapshot and of the lone manager's backup, which the
// leader keeps and the CLI judges by.
const (
	// PublishEvery is how often the leader publishes the snapshot at least.
	PublishEvery = 15 * time.Second
	// StaleAfter is the age beyond which a snapshot says nothing about the
	// swarm now: one this old means no leader is publishing.
	StaleAfter = 2 * time.Minute
	// BackupEvery is how often the swarm state is backed up at least; a
	// backup older than twice that is overdue.
	BackupEvery = 15 * time.Minute
)

// MaxSnapshot bounds what is read of a snapshot: a thousand nodes take
// about half a megabyte.
const MaxSnapshot = 16 << 20

// Snapshot is the swarm's status as its leader publishes it to the cluster
// bucket (names.StatusKey).
type Snapshot struct {
	Version   int       `json:"version"`
	Cluster   string    `json:"cluster"`
	Time      time.Time `json:"time"`
	Publisher string    `json:"publisher"` // the leader's instance id
	CADigest  string    `json:"caDigest"`  // SHA-256 (hex) of the swarm's CA certificate
	// LastBackup is when the newest backup of the swarm was taken (by a
	// lone leader or a follower); nil before the first.
	LastBackup *time.Time  `json:"lastBackup"`
	Nodes      []SwarmNode `json:"nodes"`
	// Services are the swarm's services, and Tasks their tasks; Services
	// is nil when the managers that published the snapshot do not publish
	// them (an older clusterctl).
	Services []SnapshotService `json:"services"`
	Tasks    []SnapshotTask    `json:"tasks"`
	// Autoscale are the autoscaler's last decisions (at most
	// MaxDecisions, oldest first), and Unplaceable the pending tasks no
	// group of the cluster can ever hold; both absent when there are none.
	Autoscale   []ScalingDecision `json:"autoscale,omitempty"`
	Unplaceable []Unplaceable     `json:"unplaceable,omitempty"`
	// Secrets are the declared secrets as the leader last synced them
	// (names, sources and versions: never a value); absent when none.
	Secrets []SecretStatus `json:"secrets,omitempty"`
	// QuorumLoss is set by a manager without a quorum on the last
	// snapshot (no leader publishes meanwhile): why the swarm is stuck.
	QuorumLoss *QuorumLoss `json:"quorumLoss,omitempty"`
	// Backups are the swarm's backups in the bucket, oldest first, with
	// what they say of themselves (the bucket lets only the managers read
	// them); absent before the first.
	Backups []BackupInfo `json:"backups,omitempty"`
	// Restore is the last restore request the leader acted on, and how
	// it ended; absent before the first.
	Restore *RestoreStatus `json:"restore,omitempty"`
}

// MaxDecisions is how many of the autoscaler's decisions the snapshot
// keeps.
const MaxDecisions = 20

// ScalingDecision is one change of a group's desired capacity by the
// autoscaler.
type ScalingDecision struct {
	Time  time.Time `json:"time"`
	Group string    `json:"group"` // the clusterctl group
	From  int       `json:"from"`
	To    int       `json:"to"`
	// Instance is the node's instance a scale-in terminated.
	Instance string `json:"instance,omitempty"`
	Reason   string `json:"reason"`
}

// String is the decision as the leader logs it: "group g: desired 1 → 2:
// 4 tasks of api pending: insufficient memory".
func (d ScalingDecision) String() string {
	return fmt.Sprintf("group %s: desired %d → %d: %s", d.Group, d.From, d.To, d.Reason)
}

// Unplaceable is a service's pending tasks that no group can hold.
type Unplaceable struct {
	Service string `json:"service"` // its name
	Tasks   int    `json:"tasks"`
	Reason  string `json:"reason"`
}

// SwarmNode is one node of the swarm as the snapshot gives it.
type SwarmNode struct {
	NodeID       string `json:"nodeId"`
	InstanceID   string `json:"instanceId"` // from its engine label; "" when it has none
	Hostname     string `json:"hostname"`
	Address      string `json:"address"`
	Role         string `json:"role"`         // manager or worker
	State        string `json:"state"`        // ready, down, unknown, disconnected
	Availability string `json:"availability"` // active, pause, drain
	// ManagerStatus is leader, reachable or unreachable for a manager, ""
	// for a worker.
	ManagerStatus string            `json:"managerStatus"`
	EngineLabels  map[string]string `json:"engineLabels"`
	EngineVersion string            `json:"engineVersion"`
	// RunningTasks counts the node's tasks that are running, by their
	// actual state.
	RunningTasks int `json:"runningTasks"`
	// IdentityProblem says why the managers do not believe the node is
	// the instance its label names (its address is not that instance's
	// private IP, as EC2 describes it): they leave such a node alone.
	IdentityProblem string `json:"identityProblem,omitempty"`
	// Unproven says why the managers cannot prove the node to be an
	// instance (omitted when they can): such a node is drained, and
	// removed when it stays unproven.
	Unproven string `json:"unproven,omitempty"`
	// NodeLabels are the node's labels in the swarm (node.labels), which
	// only the managers set: its placement labels, when proven.
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
}

// ErrUntrusted marks a snapshot that is not the cluster's own, or not one
// this program can read: it is not used.
var ErrUntrusted = errors.New("untrusted swarm status")

// ParseSnapshot reads the snapshot in body, found at where (for messages),
// as the status of cluster. A snapshot of another cluster, of an unknown
// version or malformed is refused (errors.Is(err, ErrUntrusted)): anyone
// who may write to the bucket could have put it there, and a snapshot
// copied from another cluster would show that cluster's swarm as this
// one's.
func ParseSnapshot(where string, body []byte, cluster string) (*Snapshot, error) {
	if len(body) > MaxSnapshot {
		return nil, fmt.Errorf("%w: %s is larger than %d MiB", ErrUntrusted, where, MaxSnapshot>>20)
	}
	var snap Snapshot
	if err := json.Unmarshal(body, &snap); err != nil {
		return nil, fmt.Errorf("%w: %s is not a status snapshot: %s", ErrUntrusted, where, oneLine(err.Error()))
	}
	switch {
	case snap.Cluster != cluster:
		return nil, fmt.Errorf("%w: %s is the status of cluster %q, not of %q", ErrUntrusted, where, snap.Cluster, cluster)
	case snap.Version != SnapshotVersion:
		return nil, fmt.Errorf("%w: %s has format version %d; this clusterctl reads version %d", ErrUntrusted, where, snap.Version, SnapshotVersion)
	case snap.Time.IsZero():
		return nil, fmt.Errorf("%w: %s has no time", ErrUntrusted, where)
	}
	for _, n := range snap.Nodes {
		if n.NodeID == "" {
			return nil, fmt.Errorf("%w: %s lists a node without an id", ErrUntrusted, where)
		}
	}
	for _, sv := range snap.Services {
		if sv.ID == "" || sv.Name == "" {
			return nil, fmt.Errorf("%w: %s lists a service without an id or name", ErrUntrusted, where)
		}
	}
	snap.Time = snap.Time.UTC()
	if snap.LastBackup != nil {
		t := snap.LastBackup.UTC()
		snap.LastBackup = &t
	}
	return &snap, nil
}

// Marshal is the snapshot as the leader publishes it: times to the second,
// in UTC, and an empty node list as [] rather than null.
func (s Snapshot) Marshal() ([]byte, error) {
	s.Time = s.Time.UTC().Truncate(time.Second)
	s.Autoscale = append([]ScalingDecision(nil), s.Autoscale...)
	for i := range s.Autoscale {
		s.Autoscale[i].Time = s.Autoscale[i].Time.UTC().Truncate(time.Second)
	}
	if s.LastBackup != nil {
		t := s.LastBackup.UTC().Truncate(time.Second)
		s.LastBackup = &t
	}
	if s.Nodes == nil {
		s.Nodes = []SwarmNode{}
	}
	for i := range s.Nodes {
		if s.Nodes[i].EngineLabels == nil {
			s.Nodes[i].EngineLabels = map[string]string{}
		}
	}
	return json.Marshal(s)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
