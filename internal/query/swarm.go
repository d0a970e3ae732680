package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/names"
)

// The swarm's leader publishes a status snapshot of the swarm to the
// cluster bucket (names.StatusKey) every 15 seconds; inventory reads it
// with one GetObject and merges it with what EC2 and CloudFormation say.

// StaleAfter is the age beyond which a snapshot says nothing about the
// swarm now: the leader publishes every 15 s, so one this old means no
// leader is publishing.
const StaleAfter = 2 * time.Minute

// SnapshotVersion is the version of the snapshot's format this clusterctl
// reads.
const SnapshotVersion = 1

// maxSnapshot bounds what is read of the object: a thousand nodes take
// about half a megabyte.
const maxSnapshot = 16 << 20

// Snapshot is the swarm's status as its leader published it (the JSON of
// publish_status in templates/core/control.sh.tmpl).
type Snapshot struct {
	Version   int       `json:"version"`
	Cluster   string    `json:"cluster"`
	Time      time.Time `json:"time"`
	Publisher string    `json:"publisher"` // the leader's instance id
	CADigest  string    `json:"caDigest"`
	// LastBackup is when a lone manager last backed the swarm state up;
	// nil with several managers, which keep the state themselves.
	LastBackup *time.Time  `json:"lastBackup"`
	Nodes      []SwarmNode `json:"nodes"`
	// Services are the swarm's services, and Tasks their tasks; Services
	// is nil when the managers that published the snapshot do not publish
	// them (an older clusterctl).
	Services []SnapshotService `json:"services"`
	Tasks    []SnapshotTask    `json:"tasks"`
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
	RunningTasks  int               `json:"runningTasks"`
}

// S3API is what reading the snapshot needs from S3.
type S3API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// ErrUntrusted marks a snapshot that is not the cluster's own, or not one
// this clusterctl can read: it is not used.
var ErrUntrusted = errors.New("untrusted swarm status")

// ReadSnapshot reads the swarm's status snapshot of cluster from its
// bucket, in one GetObject. No snapshot yet is (nil, nil), not an error. A
// snapshot of another cluster, of an unknown version or malformed is
// refused (errors.Is(err, ErrUntrusted)): anyone who may write to the
// bucket could have put it there, and a snapshot copied from another
// cluster would show that cluster's swarm as this one's.
func ReadSnapshot(ctx context.Context, api S3API, bucket, cluster string) (*Snapshot, error) {
	where := fmt.Sprintf("s3://%s/%s", bucket, names.StatusKey)
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(names.StatusKey)},
		func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true }) // published by the managers' aws s3 cp, with no checksum to check
	if err != nil {
		if noSuchKey(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the swarm status %s: %w", where, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, maxSnapshot+1))
	if err != nil {
		return nil, fmt.Errorf("reading the swarm status %s: %w", where, err)
	}
	if len(body) > maxSnapshot {
		return nil, fmt.Errorf("%w: %s is larger than %d MiB", ErrUntrusted, where, maxSnapshot>>20)
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

func noSuchKey(err error) bool {
	var nk *s3types.NoSuchKey
	var ae interface{ ErrorCode() string }
	return errors.As(err, &nk) || errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")
}

// Swarm is what inventory knows of one cluster's swarm: the snapshot when
// a trusted one was read, else why there is none; and the moment it is
// judged against.
type Swarm struct {
	Cluster string
	// Where the snapshot is (s3://bucket/key), "" when the cluster's bucket
	// could not be found.
	Where    string
	Snapshot *Snapshot
	// Missing says why there is no snapshot (Snapshot nil): none yet, no
	// bucket to read it from, refused or unreadable.
	Missing string
	Now     time.Time
}

// Age is how old the snapshot is; negative when it is dated after Now.
func (w Swarm) Age() time.Duration {
	if w.Snapshot == nil {
		return 0
	}
	return w.Now.Sub(w.Snapshot.Time)
}

// Stale tells whether the snapshot is too old to say anything of the swarm
// now — or dated too far ahead: a publisher whose clock is wrong would
// otherwise stay fresh for ever.
func (w Swarm) Stale() bool {
	age := w.Age()
	return w.Snapshot != nil && (age > StaleAfter || age < -StaleAfter)
}

// Fresh tells whether there is a snapshot that says what the swarm is now.
func (w Swarm) Fresh() bool { return w.Snapshot != nil && !w.Stale() }

// Problem says, in one sentence, why the swarm's state is unknown: no
// snapshot, or a stale one; "" when the snapshot is fresh.
func (w Swarm) Problem() string {
	switch {
	case w.Snapshot == nil:
		return fmt.Sprintf("the swarm's state is unknown: %s", w.Missing)
	case w.Age() < -StaleAfter:
		return fmt.Sprintf("the swarm's status snapshot %s is dated %s ahead of this machine's clock: stale, its publisher's clock is wrong", w.Where, FormatAge(-w.Age()))
	case w.Stale():
		return fmt.Sprintf("the swarm's status snapshot %s is %s old (stale after %s): no leader has published it since", w.Where, FormatAge(w.Age()), FormatAge(StaleAfter))
	}
	return ""
}

// NoSnapshotYet is Swarm.Missing when the bucket has no snapshot.
func NoSnapshotYet(where string) string {
	return fmt.Sprintf("no status snapshot in %s yet (the swarm's leader publishes it every 15 s)", where)
}

// FormatAge prints a duration as a person reads an age: 42s, 7m3s, 15m,
// 2h5m, 3d4h.
func FormatAge(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	two := func(n1 int, u1 string, n2 int, u2 string) string {
		if n2 == 0 {
			return fmt.Sprintf("%d%s", n1, u1)
		}
		return fmt.Sprintf("%d%s%d%s", n1, u1, n2, u2)
	}
	if d = d.Round(time.Second); d < time.Minute {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	if d < time.Hour {
		return two(int(d/time.Minute), "m", int(d%time.Minute/time.Second), "s")
	}
	if d = d.Round(time.Minute); d < 48*time.Hour {
		return two(int(d/time.Hour), "h", int(d%time.Hour/time.Minute), "m")
	}
	d = d.Round(time.Hour)
	return two(int(d/(24*time.Hour)), "d", int(d%(24*time.Hour)/time.Hour), "h")
}
