package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// Every command that changes a cluster holds the lease of what it changes
// (internal/lease) in the cluster bucket while it reads, plans and
// changes: the lease of its group for add-agents, update-group and
// remove-group, the cluster's for delete-core. A second run that wants a
// conflicting lease fails fast, naming the run in the way. create-core
// takes none: there is no bucket yet, and CloudFormation refuses a second
// stack of the name.

// leased is what a command works with while it holds a lease.
type leased struct {
	core   *stacks.Stack  // read after the lease was taken
	bucket string         // the core's own bucket, where the lease is
	leases *lease.Manager // for the leases of other groups (nil when unleased)
}

// Leases takes a cluster's or a group's lease for one run.
type Leases struct {
	find      *Finder
	say       *Say
	STS       lease.STSAPI
	S3        S3API
	Run       Run
	callerARN *callerOnce  // from STS, once per run
	IAM       IAMAPI       // the caller's role, for the operators
	Stacks    StackManager // the core's queue, handed to its operators only
}

// withLease runs fn holding the lease on scope of cluster. fn is given the
// core as read after the lease was taken: what it decides from must be
// read under the lease (a delete-core that has released its lease leaves
// the core DELETE_IN_PROGRESS, which groups refuse). fn's context is
// cancelled when the lease is lost, and withLease then returns the
// *lease.LostError (exit 1). Commands that change the core take
// lease.Core().
func (s *Leases) withLease(ctx context.Context, cluster string, scope lease.Scope, fn func(ctx context.Context, in leased) error) error {
	bucket, err := s.find.Bucket(ctx, cluster)
	if err != nil {
		return err
	}
	leases, err := s.leasesIn(ctx, cluster, bucket)
	if err != nil {
		return err
	}
	return leases.Hold(ctx, scope, func(ctx context.Context) error {
		core, err := s.find.getCore(ctx, cluster)
		if err != nil {
			return err
		}
		return fn(ctx, leased{core: core, bucket: bucket, leases: leases})
	})
}

// unleased is what a command that changes nothing works with.
func (s *Leases) unleased(ctx context.Context, cluster string) (leased, error) {
	core, err := s.find.getCore(ctx, cluster)
	if err != nil {
		return leased{}, err
	}
	bucket, err := s.find.coreBucket(ctx, core)
	return leased{core: core, bucket: bucket}, err
}

// leasesIn returns the lease manager of the bucket given (the core's own).
func (s *Leases) leasesIn(ctx context.Context, cluster, bucket string) (*lease.Manager, error) {
	caller, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	return lease.New(s.S3, bucket, lease.Options{
		Cluster: cluster, Command: s.Run.Command, RunID: s.Run.ID, Caller: caller, TTL: s.Run.TTL,
	}), nil
}

// caller is the AWS principal this run acts as, asked of STS once (the
// groups apply changes at once ask together).
func (s *Leases) caller(ctx context.Context) (string, error) {
	s.callerARN.mu.Lock()
	defer s.callerARN.mu.Unlock()
	if s.STS == nil || s.callerARN.arn != "" {
		return s.callerARN.arn, nil
	}
	arn, err := lease.CallerARN(ctx, s.STS)
	if err != nil {
		return "", err
	}
	s.callerARN.arn = arn
	return arn, nil
}

// callerOnce is who a run acts as, once known.
type callerOnce struct {
	mu  sync.Mutex
	arn string
}

// isNoBucket recognises an S3 error about a bucket that does not exist.
func isNoBucket(err error) bool {
	var nsb *s3types.NoSuchBucket
	return errors.As(err, &nsb) || errorCode(err) == "NoSuchBucket"
}

// errorCode is the AWS error code in err, or "".
func errorCode(err error) string {
	var ae interface{ ErrorCode() string }
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// releaseAfterStart releases a lease once a deletion is under way (see
// DeleteCore). A bucket that is already gone took the lease with it.
func (s *Leases) releaseAfterStart(ctx context.Context, l *lease.Lease) {
	if err := l.Release(context.WithoutCancel(ctx)); err != nil && !isNoBucket(err) {
		s.say.printf("Note: %v; the deletion of the bucket may fail on the lease object left in it (run delete-core again then)\n", fmt.Errorf("releasing the lease: %w", err))
	}
}

// queueOf is the URL of the core's queue, which the managers' housekeeping
// reads, once the caller is known to be one of the core's operators.
func (s *Leases) queueOf(ctx context.Context, core *stacks.Stack) (string, error) {
	if err := s.checkOperator(ctx, core); err != nil {
		return "", err
	}
	r, err := s.Stacks.Resource(ctx, core.Name, names.ResourceLifecycleQueue)
	if errors.Is(err, stacks.ErrNoResource) || err == nil && r.PhysicalID == "" {
		return "", refused("the core of cluster %q has no queue for its managers (%s): update it with this clusterctl first (clusterctl update-core %s)",
			core.Name, names.ResourceLifecycleQueue, core.Name)
	}
	if err != nil {
		return "", err
	}
	return r.PhysicalID, nil
}
