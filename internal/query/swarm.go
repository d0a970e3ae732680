package query

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// The swarm's leader publishes a status snapshot of the swarm to the
// cluster bucket (names.StatusKey) every 15 seconds; inventory reads it
// with one GetObject and merges it with what EC2 and CloudFormation say.

// StaleAfter is the age beyond which a snapshot says nothing about the
// swarm now (wire.StaleAfter).
const StaleAfter = wire.StaleAfter

// SnapshotVersion is the version of the snapshot's format this clusterctl
// reads (wire.SnapshotVersion).
const SnapshotVersion = wire.SnapshotVersion

// Snapshot is the swarm's status as its leader published it; SwarmNode one
// node of it. The format is the node agent's and the CLI's contract
// (internal/wire).
type (
	Snapshot        = wire.Snapshot
	SwarmNode       = wire.SwarmNode
	SnapshotService = wire.SnapshotService
	SnapshotTask    = wire.SnapshotTask
	ServiceMode     = wire.ServiceMode
	DockerPort      = wire.DockerPort
)

// S3API is what reading the snapshot needs from S3.
type S3API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// ErrUntrusted marks a snapshot that is not the cluster's own, or not one
// this clusterctl can read: it is not used.
var ErrUntrusted = wire.ErrUntrusted

// ReadSnapshot reads the swarm's status snapshot of cluster from its
// bucket, in one GetObject. No snapshot yet is (nil, nil), not an error. A
// snapshot of another cluster, of an unknown version or malformed is
// refused (errors.Is(err, ErrUntrusted)): see wire.ParseSnapshot.
func ReadSnapshot(ctx context.Context, api S3API, bucket, cluster string) (*Snapshot, error) {
	where := fmt.Sprintf("s3://%s/%s", bucket, names.StatusKey)
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(names.StatusKey)},
		func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true }) // published by the managers' aws s3 cp, with no checksum to check
	if err != nil {
		if wire.IsMissing(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the swarm status %s: %w", where, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, wire.MaxSnapshot+1))
	if err != nil {
		return nil, fmt.Errorf("reading the swarm status %s: %w", where, err)
	}
	return wire.ParseSnapshot(where, body, cluster)
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
