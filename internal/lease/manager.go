package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/clusterctl/clusterctl/internal/wire"
)

// S3API is what leases need of S3; *s3.Client satisfies it.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	ListObjectVersions(ctx context.Context, in *s3.ListObjectVersionsInput, opts ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// STSAPI identifies the caller.
type STSAPI interface {
	GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, opts ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// CallerARN is the AWS principal the run acts as, for Options.Caller.
func CallerARN(ctx context.Context, api STSAPI) (string, error) {
	out, err := api.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", fmt.Errorf("identifying the caller: %w", err)
	}
	return aws.ToString(out.Arn), nil
}

// Manager takes, inspects and breaks the leases of one cluster bucket.
type Manager struct {
	api    S3API
	bucket string
	o      Options
}

// New returns a Manager for the cluster bucket.
func New(api S3API, bucket string, o Options) *Manager {
	if o.Holder == "" {
		o.Holder = DefaultHolder()
	}
	if o.Host == "" {
		o.Host = hostname()
	}
	if o.PID == 0 {
		self := thisProcess()
		o.PID, o.BootID, o.PIDNamespace, o.ProcessStart = self.PID, self.BootID, self.PIDNamespace, self.Start
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	o.TTL = o.TTL.Round(time.Second)
	if o.TTL < time.Second {
		o.TTL = time.Second
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	return &Manager{api: api, bucket: bucket, o: o}
}

// Status is a lease as found in the bucket.
type Status struct {
	Record
	Expired bool
	// ETag and VersionID identify the object read; LastModified and
	// ServerTime (the response's Date) are S3's clock.
	ETag, VersionID          string
	LastModified, ServerTime time.Time
}

// errNone: no lease object at the key.
var errNone = errors.New("no lease")

// Current reads the lease on the scope's key; nil, nil when there is none.
// Note that Core() and Cluster() share a key: the record's Kind says which.
func (m *Manager) Current(ctx context.Context, s Scope) (*Status, error) {
	st, err := m.read(ctx, s.Key())
	if errors.Is(err, errNone) {
		return nil, nil
	}
	return st, err
}

func (m *Manager) read(ctx context.Context, key string) (*Status, error) {
	out, err := m.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(m.bucket), Key: aws.String(key)}, quietChecksums)
	if err != nil {
		if wire.IsMissing(err) {
			return nil, errNone
		}
		return nil, fmt.Errorf("reading lease s3://%s/%s: %w", m.bucket, key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("reading lease s3://%s/%s: %w", m.bucket, key, err)
	}
	st := &Status{ETag: aws.ToString(out.ETag), VersionID: wire.VersionID(out.VersionId), LastModified: aws.ToTime(out.LastModified)}
	if err := json.Unmarshal(body, &st.Record); err != nil {
		// Not a lease we wrote: held by someone unknown, until it expires.
		st.Record = Record{Command: "", Holder: "unknown (unreadable lease object)", Started: st.LastModified}
	}
	if raw, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok {
		if t, err := http.ParseTime(raw.Header.Get("Date")); err == nil {
			st.ServerTime = t
		}
	}
	switch {
	case m.holderGone(st.Record):
		st.Expired = true
	case !st.ServerTime.IsZero() && !st.LastModified.IsZero():
		// Both have a resolution of a second: one more second of grace.
		st.Expired = st.ServerTime.Sub(st.LastModified) > st.ttl()+time.Second
	default:
		st.Expired = m.o.Clock.Now().After(st.Expires)
	}
	return st, nil
}

// holderGone tells whether the lease was taken by a process of this host
// that no longer runs: it will never renew or release it. Only a holder
// whose whole identity is checkable from here can be judged so: the same
// host name, boot and PID namespace as this process, and a start time.
func (m *Manager) holderGone(r Record) bool {
	checkable := r.Host != "" && r.Host == m.o.Host &&
		r.BootID != "" && r.BootID == m.o.BootID &&
		r.PIDNamespace != "" && r.PIDNamespace == m.o.PIDNamespace &&
		r.PID > 0 && r.ProcessStart != 0
	if !checkable || r.PID == m.o.PID && r.ProcessStart == m.o.ProcessStart {
		return false
	}
	return processGone(r.PID, r.ProcessStart)
}

// quietChecksums: a lease object is small JSON whose ETag is checked; an
// endpoint that sends no checksum (moto) must not make S3 log about it.
func quietChecksums(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true }

// write puts a record: create-only (ifMatch "") or replacing the ETag
// given, as every conditional claim is made (wire.PutConditional).
func (m *Manager) write(ctx context.Context, key string, rec Record, ifMatch string) (etag, ver string, err error) {
	body, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return "", "", err
	}
	return wire.PutConditional(ctx, m.api, m.bucket, key, body, ifMatch)
}

// maxRounds bounds the create / read / take over loop: each round that
// does not settle saw another run move first.
const maxRounds = 5

// Acquire takes the lease on the scope, or fails fast with a *HeldError
// naming the run in the way. The lease is renewed in the background every
// TTL/3 until Release; when it is lost, Lost() is closed (see Guard).
func (m *Manager) Acquire(ctx context.Context, s Scope) (*Lease, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	// Full precision: every write's body, hence its ETag, is unique, so a
	// renewal always defeats a takeover based on what it replaced.
	now := m.o.Clock.Now().UTC()
	rec := Record{
		ID: newID(), Kind: s.Kind, Group: s.Group, Holder: m.o.Holder, Host: m.o.Host, PID: m.o.PID,
		BootID: m.o.BootID, PIDNamespace: m.o.PIDNamespace, ProcessStart: m.o.ProcessStart,
		Command: m.o.Command, RunID: m.o.RunID, Caller: m.o.Caller,
		Started: now, Renewed: now, Expires: now.Add(m.o.TTL), TTLSeconds: int(m.o.TTL / time.Second),
	}
	l := &Lease{m: m, scope: s, rec: rec, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	key := s.Key()
	for round := 0; ; round++ {
		if round == maxRounds {
			return nil, fmt.Errorf("taking the lease on %s: other runs keep taking it", s.Of(m.o.Cluster))
		}
		etag, ver, err := m.write(ctx, key, rec, "")
		if err == nil {
			l.took(etag, ver)
			break
		}
		if !wire.IsPrecondition(err) {
			return nil, fmt.Errorf("taking the lease on %s: %w", s.Of(m.o.Cluster), err)
		}
		cur, err := m.read(ctx, key)
		if errors.Is(err, errNone) {
			continue // released in between: try again
		}
		if err != nil {
			return nil, err
		}
		if !cur.Expired {
			return nil, &HeldError{Cluster: m.o.Cluster, Wanted: s, Holder: cur.Record}
		}
		etag, ver, err = m.write(ctx, key, rec, cur.ETag)
		if err == nil {
			l.took(etag, ver)
			break
		}
		if !wire.IsPrecondition(err) && !wire.IsMissing(err) {
			return nil, fmt.Errorf("taking over the expired lease on %s: %w", s.Of(m.o.Cluster), err)
		}
		// Another run took it over, or it was released: look again.
	}
	if err := m.purgeOlder(ctx, key, l.versions[0], false); err != nil {
		_ = l.Release(ctx)
		return nil, err
	}
	if err := m.conflicts(ctx, s); err != nil {
		_ = l.Release(ctx)
		return nil, err
	}
	l.renewing = true
	go l.keep()
	return l, nil
}

// conflicts looks, after taking a lease, for a live lease of another key
// that conflicts with it (see the package comment).
func (m *Manager) conflicts(ctx context.Context, s Scope) error {
	var keys []string
	switch s.Kind {
	case KindGroup:
		keys = []string{coreKey}
	case KindCluster:
		p := s3.NewListObjectsV2Paginator(m.api, &s3.ListObjectsV2Input{Bucket: aws.String(m.bucket), Prefix: aws.String(groupsPrefix)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("listing the leases of cluster %q: %w", m.o.Cluster, err)
			}
			for _, o := range page.Contents {
				keys = append(keys, aws.ToString(o.Key))
			}
		}
	}
	for _, k := range keys {
		cur, err := m.read(ctx, k)
		if errors.Is(err, errNone) {
			continue
		}
		if err != nil {
			return err
		}
		if cur.Expired || s.Kind == KindGroup && cur.Kind != KindCluster {
			continue
		}
		return &HeldError{Cluster: m.o.Cluster, Wanted: s, Holder: cur.Record}
	}
	return nil
}

// purgeOlder deletes the versions of key older than version (and version
// itself when inclusive): leases of runs that are gone. Nothing to do in
// a bucket without versioning.
func (m *Manager) purgeOlder(ctx context.Context, key, version string, inclusive bool) error {
	if version == "" {
		return nil
	}
	var stale []s3types.ObjectIdentifier
	found := false
	p := s3.NewListObjectVersionsPaginator(m.api, &s3.ListObjectVersionsInput{Bucket: aws.String(m.bucket), Prefix: aws.String(key)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing versions of s3://%s/%s: %w", m.bucket, key, err)
		}
		// Versions of a key come newest first; delete markers are listed
		// apart, so they are judged by time.
		var cut time.Time
		for _, v := range page.Versions {
			if aws.ToString(v.Key) != key {
				continue
			}
			id := aws.ToString(v.VersionId)
			if id == version {
				found, cut = true, aws.ToTime(v.LastModified)
				if inclusive {
					stale = append(stale, s3types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
				}
				continue
			}
			if found {
				stale = append(stale, s3types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
			}
		}
		for _, d := range page.DeleteMarkers {
			if aws.ToString(d.Key) == key && found && !aws.ToTime(d.LastModified).After(cut) && !aws.ToBool(d.IsLatest) {
				stale = append(stale, s3types.ObjectIdentifier{Key: d.Key, VersionId: d.VersionId})
			}
		}
	}
	return m.deleteVersions(ctx, stale)
}

func (m *Manager) deleteVersions(ctx context.Context, ids []s3types.ObjectIdentifier) error {
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		out, err := m.api.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(m.bucket), Delete: &s3types.Delete{Objects: ids[:n], Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("deleting lease versions in %s: %w", m.bucket, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("deleting lease version s3://%s/%s: %s", m.bucket, aws.ToString(e.Key), aws.ToString(e.Message))
		}
		ids = ids[n:]
	}
	return nil
}

// Break deletes the lease on the scope's key on purpose, if its ID is id,
// and returns what it was. Its holder, if still running, loses it at its
// next renewal and stops. errors.Is(err, ErrNotHeld) when there is no lease
// with that ID.
func (m *Manager) Break(ctx context.Context, s Scope, id string) (*Record, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	cur, err := m.read(ctx, s.Key())
	if errors.Is(err, errNone) {
		return nil, notHeld("%s holds no lease: nothing to break", s.Of(m.o.Cluster))
	}
	if err != nil {
		return nil, err
	}
	if cur.ID != id {
		return nil, notHeld("the lease on %s is %s, not %s: nothing broken", s.Of(m.o.Cluster), cur.describe(), id)
	}
	if cur.VersionID != "" {
		// Exactly the version read and the older ones: a lease taken since
		// (a newer version) stays.
		return &cur.Record, m.purgeOlder(ctx, s.Key(), cur.VersionID, true)
	}
	_, err = m.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(m.bucket), Key: aws.String(s.Key()), IfMatch: aws.String(cur.ETag)})
	if wire.IsPrecondition(err) {
		return nil, notHeld("the lease on %s changed while breaking it: nothing broken", s.Of(m.o.Cluster))
	}
	if err != nil && !wire.IsMissing(err) {
		return nil, fmt.Errorf("breaking the lease on %s: %w", s.Of(m.o.Cluster), err)
	}
	return &cur.Record, nil
}

// Hold runs fn holding the lease on the scope: taken first (a *HeldError
// when another run holds it), renewed while fn runs, released when fn
// returns. fn's context is cancelled when the lease is lost; Hold then
// returns a *LostError (exit 1, not an interruption) with fn's error.
func (m *Manager) Hold(ctx context.Context, s Scope, fn func(ctx context.Context) error) error {
	l, err := m.Acquire(ctx, s)
	if err != nil {
		return err
	}
	defer l.releaseDetached(ctx)
	gctx, cancel := l.Guard(ctx)
	defer cancel()
	err = fn(gctx)
	if lost := l.Err(); lost != nil {
		if err == nil {
			return lost
		}
		return fmt.Errorf("%w (%v)", lost, err)
	}
	return err
}

// Lease is a lease this run holds.
type Lease struct {
	m     *Manager
	scope Scope

	mu       sync.Mutex
	rec      Record
	etag     string
	versions []string // versions written, oldest first ("" entries: not versioned)
	renewed  time.Time
	lostErr  error
	released bool
	renewing bool // keep runs (set before it starts, read after)

	lost               chan struct{}
	stop, done         chan struct{}
	stopOnce, lostOnce sync.Once
}

func (l *Lease) took(etag, version string) {
	l.etag, l.versions, l.renewed = etag, []string{version}, l.m.o.Clock.Now()
}

// Record is the lease as last written.
func (l *Lease) Record() Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec
}

// Scope is what the lease covers.
func (l *Lease) Scope() Scope { return l.scope }

// Owns reports whether an object version of the bucket is one this lease
// wrote (version "" or "null" in a bucket without versioning: the key).
// delete-core empties the bucket except what its lease owns, deletes the
// core stack, then releases the lease: the lease keeps other runs out
// until the core is DELETE_IN_PROGRESS, and is gone before CloudFormation
// deletes the bucket.
func (l *Lease) Owns(key, version string) bool {
	if key != l.scope.Key() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	v := version
	if v == "null" {
		v = ""
	}
	return slices.Contains(l.versions, v)
}

// Lost is closed when the lease is lost.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err is the *LostError once the lease is lost, else nil.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// Guard returns a context that is cancelled, with the *LostError as its
// cause, when the lease is lost.
func (l *Lease) Guard(ctx context.Context) (context.Context, context.CancelFunc) {
	gctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-l.lost:
			cancel(l.Err())
		case <-gctx.Done():
		}
	}()
	return gctx, func() { cancel(context.Canceled) }
}

// lose marks the lease lost; l.mu is held.
func (l *Lease) lose(reason string) {
	l.lostOnce.Do(func() {
		l.lostErr = &LostError{Cluster: l.m.o.Cluster, Scope: l.scope, ID: l.rec.ID, Reason: reason}
		close(l.lost)
	})
}

// Renew writes the lease again with a new expiry, on condition that it is
// still the object this run last wrote. A lease broken or taken over is
// lost: Renew returns the *LostError. The background renewal calls it
// every TTL/3; other errors are retried there until the lease expires.
func (l *Lease) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lostErr != nil {
		return l.lostErr
	}
	if l.released {
		return fmt.Errorf("lease on %s already released", l.scope)
	}
	rec := l.rec
	now := l.m.o.Clock.Now()
	rec.Renewed = now.UTC()
	rec.Expires = rec.Renewed.Add(l.m.o.TTL)
	etag, ver, err := l.m.write(ctx, l.scope.Key(), rec, l.etag)
	if wire.IsPrecondition(err) || wire.IsMissing(err) {
		l.lose("it was broken or taken over by another run")
		return l.lostErr
	}
	if err != nil {
		return fmt.Errorf("renewing the lease on %s: %w", l.scope.Of(l.m.o.Cluster), err)
	}
	l.rec, l.etag, l.renewed = rec, etag, now
	l.versions = append(l.versions, ver)
	return nil
}

// keep renews the lease until Release, or until it is lost.
func (l *Lease) keep() {
	defer close(l.done)
	every := l.m.o.TTL / 3
	for {
		select {
		case <-l.stop:
			return
		case <-l.lost:
			return
		case <-l.m.o.Clock.After(every):
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		err := l.Renew(ctx)
		cancel()
		if err == nil || errors.Is(err, ErrLost) {
			continue
		}
		l.mu.Lock()
		if l.m.o.Clock.Now().Sub(l.renewed) >= l.m.o.TTL {
			l.lose("could not renew it before it expired: " + firstLine(err.Error()))
		}
		l.mu.Unlock()
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Release stops renewing and deletes the lease: exactly the versions this
// run wrote in a versioned bucket, else the object if it is still ours. A
// lost lease is not deleted (it is someone else's now). Safe to call
// twice, and with a cancelled ctx it still tries for a few seconds.
func (l *Lease) Release(ctx context.Context) error {
	l.stopOnce.Do(func() { close(l.stop) })
	if l.renewing {
		<-l.done
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	l.released = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var ids []s3types.ObjectIdentifier
	for _, v := range l.versions {
		if v != "" {
			ids = append(ids, s3types.ObjectIdentifier{Key: aws.String(l.scope.Key()), VersionId: aws.String(v)})
		}
	}
	if len(ids) > 0 {
		return l.m.deleteVersions(ctx, ids)
	}
	if l.lostErr != nil {
		return nil
	}
	_, err := l.m.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(l.m.bucket), Key: aws.String(l.scope.Key()), IfMatch: aws.String(l.etag)})
	if err != nil && !wire.IsPrecondition(err) && !wire.IsMissing(err) {
		return fmt.Errorf("releasing the lease on %s: %w", l.scope.Of(l.m.o.Cluster), err)
	}
	return nil
}

func (l *Lease) releaseDetached(ctx context.Context) { _ = l.Release(context.WithoutCancel(ctx)) }

// notHeldError is ErrNotHeld said in full, without the sentinel's own
// words after it ("nothing to break: no such lease" said one thing twice).
type notHeldError struct{ msg string }

func (e *notHeldError) Error() string        { return e.msg }
func (e *notHeldError) Is(target error) bool { return target == ErrNotHeld }

func notHeld(format string, args ...any) error {
	return &notHeldError{msg: fmt.Sprintf(format, args...)}
}
