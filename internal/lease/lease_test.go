package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/clusterctl/clusterctl/internal/motoserver"
)

var (
	s3c     *s3.Client
	stsc    *sts.Client
	buckets atomic.Int32
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	srv, err := motoserver.Start(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lease: FAIL:", err) // never a skip
		return 1
	}
	defer srv.Close()
	// moto checks a condition and writes in two steps, and serves requests
	// in parallel: two conditional writes can both pass. S3 applies them
	// atomically; one request at a time gives moto that property, while
	// the runs' request sequences still interleave freely.
	target, _ := url.Parse(srv.URL)
	var mu sync.Mutex
	rp := httputil.NewSingleHostReverseProxy(target)
	atomicS3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	defer atomicS3.Close()
	cfg, err := motoserver.Config(context.Background(), atomicS3.URL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lease:", err)
		return 1
	}
	s3c = s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	stsc = sts.NewFromConfig(cfg)
	return m.Run()
}

// newBucket makes a fresh bucket, versioned as the cluster bucket is, or not.
func newBucket(t *testing.T, versioned bool) string {
	t.Helper()
	name := fmt.Sprintf("lease-test-%d", buckets.Add(1))
	if _, err := s3c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	if versioned {
		if _, err := s3c.PutBucketVersioning(t.Context(), &s3.PutBucketVersioningInput{Bucket: aws.String(name),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

func manager(bucket, command string, mod ...func(*Options)) *Manager {
	o := Options{Cluster: "core", Holder: "alice@laptop (pid 42)", Command: command, RunID: "run-" + command, Caller: "arn:aws:iam::123456789012:user/alice"}
	for _, f := range mod {
		f(&o)
	}
	return New(s3c, bucket, o)
}

func withTTL(d time.Duration) func(*Options) { return func(o *Options) { o.TTL = d } }

// leftovers lists every object version and delete marker under locks/.
func leftovers(t *testing.T, bucket string) []string {
	t.Helper()
	out, err := s3c.ListObjectVersions(t.Context(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(Prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, v := range out.Versions {
		keys = append(keys, aws.ToString(v.Key)+"@"+aws.ToString(v.VersionId))
	}
	for _, d := range out.DeleteMarkers {
		keys = append(keys, aws.ToString(d.Key)+"@marker")
	}
	return keys
}

// waitExpired polls until S3's clock says the lease on s has expired.
func waitExpired(t *testing.T, m *Manager, s Scope) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		st, err := m.Current(t.Context(), s)
		if err != nil {
			t.Fatal(err)
		}
		if st == nil || st.Expired {
			return
		}
	}
	t.Fatalf("the lease on %s never expired", s)
}

// crash stops a lease's renewals without releasing it: the run died.
func crash(l *Lease) {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
}

func TestAcquireHeldRelease(t *testing.T) {
	for _, versioned := range []bool{true, false} {
		t.Run(fmt.Sprintf("versioned=%v", versioned), func(t *testing.T) {
			bucket := newBucket(t, versioned)
			a := manager(bucket, "update-group -n g -j core -t r5.large")
			l, err := a.Acquire(t.Context(), Group("g"))
			if err != nil {
				t.Fatal(err)
			}
			st, err := a.Current(t.Context(), Group("g"))
			if err != nil || st == nil {
				t.Fatalf("Current = %+v, %v", st, err)
			}
			rec := st.Record
			if rec.ID != l.Record().ID || rec.Kind != KindGroup || rec.Group != "g" || rec.Holder != "alice@laptop (pid 42)" ||
				rec.Command != "update-group -n g -j core -t r5.large" || rec.RunID == "" || rec.Caller == "" ||
				rec.Started.IsZero() || !rec.Expires.After(rec.Started) || rec.TTLSeconds != 90 || st.Expired {
				t.Errorf("record in the bucket = %+v", st)
			}
			if st.ServerTime.IsZero() {
				t.Error("no server time read: expiry would depend on the local clock")
			}

			b := manager(bucket, "update-group -n g -j core -c 3")
			_, err = b.Acquire(t.Context(), Group("g"))
			var held *HeldError
			if !errors.As(err, &held) || !errors.Is(err, ErrHeld) || held.Holder.ID != rec.ID {
				t.Fatalf("second Acquire = %v, want a *HeldError", err)
			}
			msg := err.Error()
			for _, want := range []string{`group "g" of cluster "core" is locked by`, "`update-group -n g -j core -t r5.large`", "alice@laptop (pid 42)",
				rec.Started.UTC().Format(time.DateTime), "clusterctl unlock core --group g --id " + rec.ID} {
				if !strings.Contains(msg, want) {
					t.Errorf("message does not say %q:\n%s", want, msg)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("message is not one line: %q", msg)
			}
			// Other groups and the core are not in the way.
			other, err := b.Acquire(t.Context(), Group("h"))
			if err != nil {
				t.Fatalf("lease on another group: %v", err)
			}
			core, err := b.Acquire(t.Context(), Core())
			if err != nil {
				t.Fatalf("core lease beside a group lease: %v", err)
			}

			ver := st.VersionID
			if !l.Owns("locks/groups/g", ver) || l.Owns("locks/groups/h", ver) || other.Owns("locks/groups/g", ver) {
				t.Errorf("Owns(locks/groups/g, %q) is wrong", ver)
			}
			if versioned && l.Owns("locks/groups/g", "some-other-version") {
				t.Error("Owns a version it did not write")
			}
			for _, x := range []*Lease{l, other, core} {
				if err := x.Release(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Release(t.Context()); err != nil {
				t.Errorf("second Release: %v", err)
			}
			if left := leftovers(t, bucket); len(left) != 0 {
				t.Errorf("released leases left %v in the bucket", left)
			}
			l2, err := b.Acquire(t.Context(), Group("g"))
			if err != nil {
				t.Fatalf("Acquire after release: %v", err)
			}
			l2.Release(t.Context())
		})
	}
}

// Two runs acquiring at once: exactly one wins, every time.
func TestRaceTwoAcquirers(t *testing.T) {
	bucket := newBucket(t, true)
	for round := range 20 {
		var wg sync.WaitGroup
		leases := make([]*Lease, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				leases[i], errs[i] = manager(bucket, fmt.Sprintf("run-%d", i)).Acquire(context.Background(), Group("g"))
			}()
		}
		wg.Wait()
		won := 0
		for i := range 2 {
			switch {
			case errs[i] == nil:
				won++
			case !errors.Is(errs[i], ErrHeld):
				t.Fatalf("round %d: run %d: %v", round, i, errs[i])
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d runs took the lease, want exactly 1", round, won)
		}
		for _, l := range leases {
			if l != nil {
				l.Release(context.Background())
			}
		}
	}
	if left := leftovers(t, bucket); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// A lease whose run died expires and is taken over; of several runs taking
// over at once exactly one wins; the dead run, were it to wake up, finds
// its lease lost.
func TestExpiredLeaseTakenOverOnce(t *testing.T) {
	bucket := newBucket(t, true)
	dead := manager(bucket, "update-group -n g -j core", withTTL(time.Second))
	const groups = 4
	var deadLeases []*Lease
	for i := range groups {
		l, err := dead.Acquire(t.Context(), Group(fmt.Sprintf("g%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		crash(l)
		deadLeases = append(deadLeases, l)
	}
	for i := range groups {
		waitExpired(t, dead, Group(fmt.Sprintf("g%d", i)))
	}

	for i := range groups {
		scope := Group(fmt.Sprintf("g%d", i))
		var wg sync.WaitGroup
		leases := make([]*Lease, 3)
		errs := make([]error, 3)
		for j := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				leases[j], errs[j] = manager(bucket, fmt.Sprintf("taker-%d", j)).Acquire(context.Background(), scope)
			}()
		}
		wg.Wait()
		var winner *Lease
		for j := range 3 {
			if errs[j] == nil {
				if winner != nil {
					t.Fatalf("%s: two runs took over the expired lease", scope)
				}
				winner = leases[j]
			} else if !errors.Is(errs[j], ErrHeld) {
				t.Fatalf("%s: %v", scope, errs[j])
			}
		}
		if winner == nil {
			t.Fatalf("%s: nobody took over the expired lease: %v", scope, errs)
		}
		// The dead run wakes up: its renewal fails, it has lost the lease.
		if err := deadLeases[i].Renew(t.Context()); !errors.Is(err, ErrLost) {
			t.Errorf("%s: renewal of the taken-over lease = %v, want ErrLost", scope, err)
		}
		select {
		case <-deadLeases[i].Lost():
		default:
			t.Errorf("%s: Lost() not closed", scope)
		}
		// Its release leaves the winner's lease alone.
		deadLeases[i].Release(t.Context())
		if st, _ := dead.Current(t.Context(), scope); st == nil || st.ID != winner.Record().ID {
			t.Errorf("%s: after the dead run's release the lease is %+v, want the winner's", scope, st)
		}
		winner.Release(t.Context())
	}
	if left := leftovers(t, bucket); len(left) != 0 {
		t.Errorf("left %v (the dead runs' versions must go with the takeover)", left)
	}
}

func TestBreakByID(t *testing.T) {
	for _, versioned := range []bool{true, false} {
		t.Run(fmt.Sprintf("versioned=%v", versioned), func(t *testing.T) {
			bucket := newBucket(t, versioned)
			m := manager(bucket, "remove-group -n g -j core")
			l, err := m.Acquire(t.Context(), Group("g"))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Renew(t.Context()); err != nil { // a version more to break
				t.Fatal(err)
			}
			ops := manager(bucket, "unlock")
			if _, err := ops.Break(t.Context(), Group("g"), "000000000000"); !errors.Is(err, ErrNotHeld) || !strings.Contains(err.Error(), l.Record().ID) {
				t.Errorf("Break with the wrong id = %v", err)
			}
			if _, err := ops.Break(t.Context(), Group("h"), l.Record().ID); !errors.Is(err, ErrNotHeld) {
				t.Errorf("Break of a group without a lease = %v", err)
			}
			gctx, cancel := l.Guard(t.Context())
			defer cancel()
			rec, err := ops.Break(t.Context(), Group("g"), l.Record().ID)
			if err != nil || rec.Command != "remove-group -n g -j core" {
				t.Fatalf("Break = %+v, %v", rec, err)
			}
			if st, err := ops.Current(t.Context(), Group("g")); st != nil || err != nil {
				t.Errorf("lease after Break = %+v, %v", st, err)
			}
			// The holder finds out at its next renewal, and its context ends
			// with the reason.
			if err := l.Renew(t.Context()); !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "broken or taken over") {
				t.Errorf("Renew after Break = %v", err)
			}
			<-gctx.Done()
			if cause := context.Cause(gctx); !errors.Is(cause, ErrLost) {
				t.Errorf("guarded context's cause = %v", cause)
			}
			l.Release(t.Context())
			if left := leftovers(t, bucket); versioned && len(left) != 0 {
				t.Errorf("left %v", left)
			}
			// The group can be locked again.
			l2, err := manager(bucket, "add-agents").Acquire(t.Context(), Group("g"))
			if err != nil {
				t.Fatal(err)
			}
			l2.Release(t.Context())
		})
	}
}

// The cluster-wide lease (delete-core) and group leases exclude each other;
// the core lease and group leases do not.
func TestClusterAndGroupConflicts(t *testing.T) {
	bucket := newBucket(t, true)
	g, err := manager(bucket, "add-agents -n g -j core").Acquire(t.Context(), Group("g"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = manager(bucket, "delete-core core --cascade").Acquire(t.Context(), Cluster())
	var held *HeldError
	if !errors.As(err, &held) || held.Holder.ID != g.Record().ID {
		t.Fatalf("cluster lease beside a group lease = %v", err)
	}
	for _, want := range []string{`cannot lock cluster "core": group "g" is locked by`, "`add-agents -n g -j core`", "--group g --id " + g.Record().ID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message does not say %q:\n%s", want, err)
		}
	}
	if st, _ := manager(bucket, "x").Current(t.Context(), Cluster()); st != nil {
		t.Errorf("the refused cluster lease was left behind: %+v", st)
	}
	g.Release(t.Context())

	c, err := manager(bucket, "delete-core core --cascade").Acquire(t.Context(), Cluster())
	if err != nil {
		t.Fatal(err)
	}
	_, err = manager(bucket, "add-agents -n h -j core").Acquire(t.Context(), Group("h"))
	if !errors.As(err, &held) || held.Holder.Kind != KindCluster || !strings.Contains(err.Error(), "cannot lock group \"h\" of cluster \"core\": the whole cluster is locked by `delete-core core --cascade`") ||
		!strings.Contains(err.Error(), "clusterctl unlock core --id "+c.Record().ID) {
		t.Errorf("group lease during delete-core = %v", err)
	}
	if _, err := manager(bucket, "update-core").Acquire(t.Context(), Core()); !errors.Is(err, ErrHeld) {
		t.Errorf("core lease during delete-core = %v", err)
	}
	c.Release(t.Context())

	core, err := manager(bucket, "update-core").Acquire(t.Context(), Core())
	if err != nil {
		t.Fatal(err)
	}
	h, err := manager(bucket, "update-group -n h -j core").Acquire(t.Context(), Group("h"))
	if err != nil {
		t.Errorf("group lease beside the core lease: %v", err)
	} else {
		h.Release(t.Context())
	}
	core.Release(t.Context())

	// An expired group lease does not hold up delete-core.
	dead, err := manager(bucket, "update-group -n g -j core", withTTL(time.Second)).Acquire(t.Context(), Group("g"))
	if err != nil {
		t.Fatal(err)
	}
	crash(dead)
	waitExpired(t, manager(bucket, "x"), Group("g"))
	c, err = manager(bucket, "delete-core core").Acquire(t.Context(), Cluster())
	if err != nil {
		t.Fatalf("cluster lease beside an expired group lease: %v", err)
	}
	c.Release(t.Context())
}

// delete-core and a group command racing: never both proceed.
func TestRaceClusterAndGroup(t *testing.T) {
	bucket := newBucket(t, true)
	both, neither := 0, 0
	for round := range 20 {
		var wg sync.WaitGroup
		var cl, gl *Lease
		var cerr, gerr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			cl, cerr = manager(bucket, "delete-core").Acquire(context.Background(), Cluster())
		}()
		go func() {
			defer wg.Done()
			gl, gerr = manager(bucket, "add-agents").Acquire(context.Background(), Group(fmt.Sprintf("g%d", round%3)))
		}()
		wg.Wait()
		for _, err := range []error{cerr, gerr} {
			if err != nil && !errors.Is(err, ErrHeld) {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		switch {
		case cerr == nil && gerr == nil:
			both++
		case cerr != nil && gerr != nil:
			neither++
		}
		for _, l := range []*Lease{cl, gl} {
			if l != nil {
				l.Release(context.Background())
			}
		}
	}
	if both > 0 {
		t.Errorf("in %d of 20 rounds delete-core and a group command both proceeded", both)
	}
	t.Logf("rounds where both backed off: %d", neither)
	if left := leftovers(t, bucket); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// tickClock fires renewals when the test says so.
type tickClock struct{ ticks chan time.Time }

func (c *tickClock) Now() time.Time                       { return time.Now() }
func (c *tickClock) After(time.Duration) <-chan time.Time { return c.ticks }

// The lease is renewed in the background while the command runs; Hold
// releases it at the end and reports a lost lease as such, not as an
// interruption.
func TestHoldRenewsAndReleases(t *testing.T) {
	bucket := newBucket(t, true)
	clock := &tickClock{ticks: make(chan time.Time)}
	m := manager(bucket, "update-group -n g -j core", func(o *Options) { o.Clock = clock })
	err := m.Hold(t.Context(), Group("g"), func(ctx context.Context) error {
		before, _ := m.Current(ctx, Group("g"))
		clock.ticks <- time.Now()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			now, err := m.Current(ctx, Group("g"))
			if err != nil {
				return err
			}
			if now.ETag != before.ETag {
				if now.ID != before.ID || now.Started != before.Started {
					return fmt.Errorf("renewal changed the lease's identity: %+v → %+v", before.Record, now.Record)
				}
				return nil
			}
		}
		return errors.New("the lease was not renewed after a tick")
	})
	if err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, bucket); len(left) != 0 {
		t.Errorf("Hold left %v", left)
	}

	err = m.Hold(t.Context(), Group("g"), func(ctx context.Context) error {
		st, _ := m.Current(ctx, Group("g"))
		if _, err := manager(bucket, "unlock").Break(ctx, Group("g"), st.ID); err != nil {
			return err
		}
		clock.ticks <- time.Now() // the next renewal finds it broken
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, ErrLost) || errors.Is(err, context.Canceled) {
		t.Errorf("Hold with a broken lease = %v, want ErrLost and not an interruption", err)
	}
}

func TestCallerARN(t *testing.T) {
	arn, err := CallerARN(t.Context(), stsc)
	if err != nil || !strings.HasPrefix(arn, "arn:aws:") {
		t.Errorf("CallerARN = %q, %v", arn, err)
	}
}

func TestScopes(t *testing.T) {
	for _, tt := range []struct {
		s         Scope
		key, name string
	}{
		{Core(), "locks/core", "the core"},
		{Cluster(), "locks/core", "the whole cluster"},
		{Group("r3-agents"), "locks/groups/r3-agents", `group "r3-agents"`},
	} {
		if tt.s.Key() != tt.key || tt.s.String() != tt.name || tt.s.validate() != nil {
			t.Errorf("%+v: key %q, name %q", tt.s, tt.s.Key(), tt.s.String())
		}
	}
	for _, bad := range []Scope{Group(""), Group("../core"), Group("a/b"), {Kind: "node"}} {
		if bad.validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// A lease object of an older clusterctl (host and pid, nothing more) is
// read, and its holder is not judged gone: it expires.
func TestOldLeaseRecordNotCheckable(t *testing.T) {
	var r Record
	if err := json.Unmarshal([]byte(`{"id":"ab12","kind":"group","group":"g","holder":"alice@laptop (pid 1)","host":"laptop","pid":999999,"command":"remove-group","ttlSeconds":90}`), &r); err != nil {
		t.Fatal(err)
	}
	m := New(s3c, "b", Options{Host: "laptop", PID: 5})
	if m.holderGone(r) {
		t.Error("a lease without the holder's boot, namespace and start time was judged gone")
	}
}
