package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
)

// RestoreDetail is what a restore request asks: restore the swarm of
// cluster from its backup Backup (a key under the backups' prefix).
// FromCluster names the cluster whose managers took it when it is not
// cluster: without it such a backup is refused.
type RestoreDetail struct {
	RequestID   string `json:"request-id"`
	Time        string `json:"time"`
	Cluster     string `json:"cluster"`
	Backup      string `json:"backup"`
	FromCluster string `json:"from-cluster,omitempty"`
	RequestedBy string `json:"requested-by,omitempty"`
}

// NewRestoreRequest builds the restore request d (its time is at), made
// by caller in region. The body is what is sent.
func NewRestoreRequest(d RestoreDetail, at time.Time, caller, region string) (string, error) {
	if !ValidRequestID(d.RequestID) {
		return "", fmt.Errorf("invalid request id %q", d.RequestID)
	}
	if _, ok := BackupKeyTime(d.Backup); !ok {
		return "", fmt.Errorf("invalid backup key %q", d.Backup)
	}
	account := ""
	if f := strings.Split(caller, ":"); len(f) >= 6 && f[0] == "arn" {
		account = f[4]
	}
	d.Time, d.RequestedBy = at.UTC().Format(time.RFC3339), caller
	detail, _ := json.Marshal(d) // strings only
	b, _ := json.Marshal(Event{Version: "0", ID: d.RequestID, DetailType: names.RequestRestore, Source: names.RequestSource,
		Account: account, Time: d.Time, Region: region, Resources: []string{}, Detail: detail})
	return string(b), nil
}

// RestoreRequest reads the restore request in e for cluster: an error
// when it is of another shape, source or cluster, or names no backup.
func (e Event) RestoreRequest(cluster string) (RestoreDetail, error) {
	var d RestoreDetail
	if err := e.readRequest(names.RequestRestore, "restore", cluster, &d); err != nil {
		return d, err
	}
	if _, ok := BackupKeyTime(d.Backup); !ok {
		return d, fmt.Errorf("a restore request of backup %q", oneLine(d.Backup))
	}
	return d, nil
}

// Restore outcomes, as the status snapshot says them.
const (
	RestoreRefused   = "refused"
	RestoreRestoring = "restoring"
	RestoreRestored  = "restored"
	RestoreFailed    = "failed"
)

// RestoreStatus is the last restore request the leader acted on, in the
// status snapshot: clusterctl restore --wait reads its outcome there.
type RestoreStatus struct {
	RequestID string    `json:"requestId"`
	Backup    string    `json:"backup"`
	Outcome   string    `json:"outcome"` // Restore*
	Reason    string    `json:"reason,omitempty"`
	Time      time.Time `json:"time"`
}

// RestoreMarker is the leader's word on a restore of the live swarm
// (names.Restore): the managers it demoted (Demoted, their node ids
// then) leave and join the swarm again once Done, whatever the outcome.
type RestoreMarker struct {
	RequestID string   `json:"requestId"`
	Leader    string   `json:"leader"` // its instance
	Backup    string   `json:"backup"`
	Demoted   []string `json:"demoted"`
	// Restorer is the instance that restores the backup when it is not
	// the leader: the one that took it, whose address the backup's swarm
	// knows its manager by; it restores once it has left.
	Restorer string `json:"restorer,omitempty"`
	// LeaderLeft: the leader left the swarm as it was (the restorer
	// restores only then: never beside a swarm that still has a manager).
	LeaderLeft bool `json:"leaderLeft,omitempty"`
	// Rotate: the backup is another cluster's (the join tokens are
	// rotated after the restore).
	Rotate bool      `json:"rotate,omitempty"`
	Time   time.Time `json:"time"`
	Done   bool      `json:"done"`
}

// Marshal is the marker's JSON.
func (r RestoreMarker) Marshal() []byte {
	b, _ := json.Marshal(r) // plain fields only
	return b
}

// ParseRestoreMarker reads a marker; one without a request id is refused.
func ParseRestoreMarker(b []byte) (RestoreMarker, error) {
	var r RestoreMarker
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("the restore marker: %s", oneLine(err.Error()))
	}
	if !ValidRequestID(r.RequestID) {
		return r, fmt.Errorf("the restore marker names request %q", r.RequestID)
	}
	return r, nil
}
