package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
)

// BackupKeep is how many backups of the swarm the managers keep: the
// newest, older ones removed as new ones are taken.
const BackupKeep = 8

// Metadata of a backup object (S3 user metadata, lower case as S3 returns
// it): what the CLI lists and a restore judges it by.
const (
	MetaTaken    = "taken"    // Unix seconds
	MetaSwarm    = "swarm"    // the swarm's id
	MetaManagers = "managers" // the swarm's number of managers then
	MetaTakenBy  = "taken-by" // the instance that took it
	MetaCluster  = "cluster"  // the cluster whose managers took it
)

// BackupMeta is what a backup says of itself.
type BackupMeta struct {
	Taken    time.Time `json:"time"`
	SwarmID  string    `json:"swarm"`
	Managers int       `json:"managers"`
	TakenBy  string    `json:"takenBy"`
	Cluster  string    `json:"cluster,omitempty"`
}

// Metadata is m as the object's user metadata.
func (m BackupMeta) Metadata() map[string]string {
	return map[string]string{
		MetaTaken: strconv.FormatInt(m.Taken.Unix(), 10), MetaSwarm: m.SwarmID,
		MetaManagers: strconv.Itoa(m.Managers), MetaTakenBy: m.TakenBy, MetaCluster: m.Cluster,
	}
}

// ParseBackupMeta reads a backup's user metadata; what it lacks is left
// zero (a lone manager's backup of before said only when it was taken).
func ParseBackupMeta(meta map[string]string) (BackupMeta, error) {
	var m BackupMeta
	if s := meta[MetaTaken]; s != "" {
		t, err := strconv.ParseInt(s, 10, 64)
		if err != nil || t < 0 {
			return m, fmt.Errorf("its time %q is not Unix seconds", s)
		}
		m.Taken = time.Unix(t, 0).UTC()
	}
	if s := meta[MetaManagers]; s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return m, fmt.Errorf("its manager count %q is not a number", s)
		}
		m.Managers = n
	}
	m.SwarmID, m.TakenBy, m.Cluster = meta[MetaSwarm], meta[MetaTakenBy], meta[MetaCluster]
	return m, nil
}

// BackupKeyTime is the time a backup's key (names.BackupKey) says it was
// taken; ok false for a key of another shape.
func BackupKeyTime(key string) (time.Time, bool) {
	prefix := names.ControlKey(names.BackupsPrefix) + "/"
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok || !strings.HasSuffix(rest, ".tar.gz") || len(rest) < len(names.BackupTimeFormat)+1 {
		return time.Time{}, false
	}
	t, err := time.Parse(names.BackupTimeFormat, rest[:len(names.BackupTimeFormat)])
	if err != nil || rest[len(names.BackupTimeFormat)] != '-' {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// BackupOrder is the leader's order to one follower to back the swarm
// up (names.BackupOrder): the follower whose node it names takes one
// backup, once, if the order is not older than its deadline.
type BackupOrder struct {
	ID       string    `json:"id"`
	Node     string    `json:"node"` // the follower's swarm node id
	Time     time.Time `json:"time"`
	Deadline time.Time `json:"deadline"`
	Reason   string    `json:"reason"`
}

// Marshal is the order as written.
func (o BackupOrder) Marshal() []byte {
	b, _ := json.Marshal(o) // plain fields: never fails
	return b
}

// ParseBackupOrder reads an order; one without an id or node is refused.
func ParseBackupOrder(b []byte) (BackupOrder, error) {
	var o BackupOrder
	if err := json.Unmarshal(b, &o); err != nil {
		return o, fmt.Errorf("not a backup order: %s", oneLine(err.Error()))
	}
	if o.ID == "" || o.Node == "" || o.Time.IsZero() {
		return o, fmt.Errorf("a backup order without an id, node or time")
	}
	return o, nil
}

// RecoveryClaim is the claim of the survivor that recovers a swarm that
// lost its quorum (names.QuorumRecovery). Loss identifies the loss: a
// digest of the swarm's managers as the survivors know them, the same for
// every survivor of one loss; Done is set once the new cluster is forced.
type RecoveryClaim struct {
	Instance string    `json:"instance"`
	Address  string    `json:"address"`
	Loss     string    `json:"loss"`
	Time     time.Time `json:"time"`
	Lost     []string  `json:"lost"` // the lost managers' addresses
	Done     bool      `json:"done"`
}

// Marshal is the claim as written.
func (c RecoveryClaim) Marshal() []byte {
	b, _ := json.Marshal(c) // plain fields: never fails
	return b
}

// ParseRecoveryClaim reads a claim; one without an instance or loss is
// refused.
func ParseRecoveryClaim(b []byte) (RecoveryClaim, error) {
	var c RecoveryClaim
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("not a recovery claim: %s", oneLine(err.Error()))
	}
	if !ValidInstanceID(c.Instance) || c.Loss == "" {
		return c, fmt.Errorf("a recovery claim without an instance or loss")
	}
	return c, nil
}

// QuorumLoss is what a manager without a quorum says of it in the status
// snapshot (which no leader publishes meanwhile): since when, and what it
// decided, why.
type QuorumLoss struct {
	Since    time.Time `json:"since"`
	Checked  time.Time `json:"checked"`
	Observer string    `json:"observer"` // the survivor's instance
	// Decision is "waiting" (within the grace), "stuck" (a lost manager
	// is not proven gone), "forced" or "joining" (another survivor forced).
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// BackupDetail is what a backup request asks: back the swarm of cluster up
// now.
type BackupDetail struct {
	RequestID   string `json:"request-id"`
	Time        string `json:"time"`
	Cluster     string `json:"cluster"`
	RequestedBy string `json:"requested-by,omitempty"`
}

// NewBackupRequest builds the request id, made at, by caller in region, to
// back the swarm of cluster up (the cluster name is the caller's to
// check). The body is what is sent.
func NewBackupRequest(id string, at time.Time, caller, region, cluster string) (string, error) {
	if !ValidRequestID(id) {
		return "", fmt.Errorf("invalid request id %q", id)
	}
	account := ""
	if f := strings.Split(caller, ":"); len(f) >= 6 && f[0] == "arn" {
		account = f[4]
	}
	t := at.UTC().Format(time.RFC3339)
	detail, _ := json.Marshal(BackupDetail{RequestID: id, Time: t, Cluster: cluster, RequestedBy: caller}) // strings only
	b, _ := json.Marshal(Event{Version: "0", ID: id, DetailType: names.RequestBackup, Source: names.RequestSource,
		Account: account, Time: t, Region: region, Resources: []string{}, Detail: detail})
	return string(b), nil
}

// BackupRequest reads the backup request in e for cluster: an error when
// it is of another shape, source or cluster (housekeeping drops it).
func (e Event) BackupRequest(cluster string) (BackupDetail, error) {
	var d BackupDetail
	err := e.readRequest(names.RequestBackup, "backup", cluster, &d)
	return d, err
}

// BackupInfo is a backup as the status snapshot lists it.
type BackupInfo struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
	BackupMeta
}

// readRequest reads e into detail d as a request of kind (what, in
// errors) for cluster: an error when it is of another kind, source, shape
// or cluster, or its id is not one clusterctl makes (housekeeping drops
// it). Every request's detail carries its id and cluster.
func (e Event) readRequest(kind, what, cluster string, d any) error {
	if e.DetailType != kind || e.Source != names.RequestSource {
		return fmt.Errorf("not a %s request", what)
	}
	if err := json.Unmarshal(e.Detail, d); err != nil {
		return fmt.Errorf("a %s request of another shape: %s", what, oneLine(err.Error()))
	}
	var h struct {
		RequestID string `json:"request-id"`
		Cluster   string `json:"cluster"`
	}
	_ = json.Unmarshal(e.Detail, &h) // it decoded into d already
	if h.Cluster != cluster {
		return fmt.Errorf("a %s request for cluster %q, not %q", what, h.Cluster, cluster)
	}
	if !ValidRequestID(h.RequestID) {
		return fmt.Errorf("a %s request of id %q", what, h.RequestID)
	}
	return nil
}
