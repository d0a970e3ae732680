package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/preflight"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// CreateOptions shape how a stack is created.
type CreateOptions struct {
	NoRollback bool // keep a failed stack for debugging
	// ReplaceFailed deletes a dead stack of the same name (rolled back, or
	// kept failed by --no-rollback) before creating it again (groups only).
	ReplaceFailed bool
}

// CreateCore creates the core stack of cluster name from its spec, waits
// for it and returns it. The VPC and subnets left out are resolved from
// the account (its default VPC, the VPC's subnets).
func (s *Service) CreateCore(ctx context.Context, name string, core spec.Core, o CreateOptions) (*stacks.Stack, error) {
	if err := spec.CheckClusterName(name); err != nil {
		return nil, err
	}
	if err := core.Complete(); err != nil {
		return nil, err
	}
	existing, err := s.Stacks.Get(ctx, name)
	switch {
	case err == nil:
		return nil, refused("cluster %q already exists (stack status %s)", name, existing.Status)
	case !errors.Is(err, stacks.ErrNotFound):
		return nil, err
	}
	vpc, subnets, err := s.resolveNetwork(ctx, core.VpcID, core.SubnetIDs)
	if err != nil {
		return nil, err
	}
	if err := s.preflightCore(ctx, core, vpc, subnets); err != nil {
		return nil, err
	}
	core.VpcID, core.SubnetIDs = vpc, subnets
	r, err := render.Core(name, core, s.Version)
	if err != nil {
		return nil, errs.AsUsage(err)
	}
	s.printf("Creating core stack %s in %s (%s)\n", r.StackName, vpc, query.Plural(len(subnets), "subnet"))
	st, err := s.Stacks.Create(ctx, specFrom(r, o.NoRollback))
	if err != nil {
		return nil, explain(err, name, "")
	}
	return st, nil
}

// preflightCore checks the core's settings against the account before the
// stack is created. The control node runs in the first subnet, so its
// zone must offer the type; the others are for groups, which launch
// where their types are offered.
func (s *Service) preflightCore(ctx context.Context, core spec.Core, vpc string, subnets []string) error {
	rep, err := preflight.Check(ctx, s.EC2, s.SSM, preflight.Request{
		InstanceTypes: []string{core.InstanceType}, Image: core.ImageID, KeyName: core.KeyName,
		SubnetIDs: subnets, VpcID: vpc, Zones: preflight.SomeZone,
	})
	if err != nil {
		return err
	}
	for _, g := range rep.Unoffered {
		if slices.Contains(g.Subnets, subnets[0]) {
			return errs.Usage("pre-flight: instance type %s is not offered in %s, the zone of subnet %s where the control node runs: pass --subnet-ids starting with a subnet of another zone", core.InstanceType, g.Zone, subnets[0])
		}
	}
	return nil
}

// DeleteCoreOptions are the delete-core flags.
type DeleteCoreOptions struct {
	Name         string
	Cascade      bool
	Yes          bool
	RetainFailed bool // as RemoveOptions.RetainFailed, for the core stack
}

// CoreDeletion is how delete-core ended: the core stack's deletion and,
// with --cascade, each group stack's.
type CoreDeletion struct {
	stacks.Outcome
	Groups []stacks.Outcome
}

// DeleteCore deletes a cluster's core stack. It refuses while groups exist
// unless Cascade, which deletes them first (in parallel). The bucket is
// emptied first because CloudFormation cannot delete a non-empty bucket.
func (s *Service) DeleteCore(ctx context.Context, o DeleteCoreOptions) (*CoreDeletion, error) {
	if err := spec.CheckClusterName(o.Name); err != nil {
		return nil, err
	}
	core, err := s.getCore(ctx, o.Name)
	if err != nil {
		return nil, err
	}
	groups, err := s.groupStacks(ctx, o.Name)
	if err != nil {
		return nil, err
	}
	var groupNames []string
	for _, g := range groups {
		groupNames = append(groupNames, g.Group)
	}
	if len(groups) > 0 && !o.Cascade {
		return nil, refused("cluster %q still has %s: %s; remove them first or pass --cascade", o.Name, query.Plural(len(groups), "group"), strings.Join(groupNames, ", "))
	}
	bucket, err := s.coreBucket(ctx, core)
	if err != nil {
		return nil, err
	}
	question := fmt.Sprintf("delete cluster %q", o.Name)
	if len(groups) > 0 {
		question += fmt.Sprintf(" and its groups %s", strings.Join(groupNames, ", "))
	}
	if bucket != "" && !o.Yes {
		n, err := s.countVersions(ctx, bucket)
		if err != nil {
			return nil, err
		}
		question += fmt.Sprintf(", emptying its bucket %s (%s)", bucket, query.Plural(n, "object version"))
	}
	if err := s.confirm(ctx, o.Yes, question); err != nil {
		return nil, err
	}
	done := &CoreDeletion{Groups: []stacks.Outcome{}}
	if len(groups) > 0 {
		stackNames := make([]string, len(groups))
		for i, g := range groups {
			stackNames[i] = g.Stack
		}
		s.printf("Deleting %s: %s\n", query.Plural(len(stackNames), "group stack"), strings.Join(stackNames, ", "))
		outcomes, err := s.Stacks.DeleteMany(ctx, stackNames, 4)
		if err != nil {
			// The groups' deletions carry on; the core's has not started.
			return nil, explainResume(fmt.Errorf("deleting groups of %q: %w", o.Name, err), "finish with: clusterctl delete-core "+o.Name+" --cascade")
		}
		done.Groups = outcomes
	}
	start := time.Now()
	if bucket != "" {
		n, err := s.emptyBucket(ctx, bucket, "")
		if err != nil {
			return nil, err
		}
		s.printf("Emptied bucket %s (%s)\n", bucket, query.Plural(n, "object version"))
	}
	if err := s.deleteStack(ctx, o.Name, o.RetainFailed, o.Name, ""); err != nil {
		return nil, err
	}
	done.Outcome = stacks.Outcome{Stack: o.Name, Status: "DELETE_COMPLETE", Duration: time.Since(start)}
	return done, nil
}

// Bucket is the cluster bucket: the one the core stack owns (see
// coreBucket). It holds node configurations and the leases.
func (s *Service) Bucket(ctx context.Context, cluster string) (string, error) {
	core, err := s.getCore(ctx, cluster)
	if err != nil {
		return "", err
	}
	bucket, err := s.coreBucket(ctx, core)
	if err == nil && bucket == "" {
		return "", refused("cluster %q has no bucket (core stack %s)", cluster, core.Status)
	}
	return bucket, err
}

// coreBucket is the bucket the core stack owns: the physical ID of its own
// Bucket resource, never the BucketName output alone, which anyone allowed
// to update the stack can point at another bucket. An output that names
// another bucket is refused: something is wrong, and neither bucket is
// touched. "" when the core owns no bucket (it was never created).
func (s *Service) coreBucket(ctx context.Context, core *stacks.Stack) (string, error) {
	bucket := ""
	r, err := s.Stacks.Resource(ctx, core.Name, names.ResourceBucket)
	switch {
	case errors.Is(err, stacks.ErrNoResource):
	case err != nil:
		return "", err
	default:
		bucket = r.PhysicalID
	}
	if out := core.Outputs[names.OutputBucketName]; out != "" && out != bucket {
		owned := "owns no bucket"
		if bucket != "" {
			owned = fmt.Sprintf("owns bucket %s", bucket)
		}
		return "", refused("core %q: its BucketName output names bucket %s, but the stack %s: refusing to touch either; restore the output or inspect the stack with the AWS CLI", core.Name, out, owned)
	}
	return bucket, nil
}

// countVersions counts the object versions and delete markers in a bucket
// (what emptying it deletes).
func (s *Service) countVersions(ctx context.Context, bucket string) (int, error) {
	n := 0
	err := s.eachVersionPage(ctx, bucket, "", func(ids []s3types.ObjectIdentifier) error {
		n += len(ids)
		return nil
	})
	return n, err
}

// emptyBucket deletes every object version and delete marker under prefix
// ("" for the whole bucket).
func (s *Service) emptyBucket(ctx context.Context, bucket, prefix string) (int, error) {
	deleted := 0
	err := s.eachVersionPage(ctx, bucket, prefix, func(ids []s3types.ObjectIdentifier) error {
		// A page holds at most 1000 entries of each kind; DeleteObjects takes 1000.
		for len(ids) > 0 {
			n := min(len(ids), 1000)
			out, err := s.S3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: ids[:n], Quiet: aws.Bool(true)}})
			if err != nil {
				return fmt.Errorf("emptying bucket %q: %w", bucket, err)
			}
			if len(out.Errors) > 0 {
				e := out.Errors[0]
				return fmt.Errorf("emptying bucket %q: %s: %s", bucket, aws.ToString(e.Key), aws.ToString(e.Message))
			}
			deleted += n
			ids = ids[n:]
		}
		return nil
	})
	return deleted, err
}

// eachVersionPage calls fn with the object versions and delete markers of
// each page of the bucket's listing under prefix. A bucket that is gone
// has none.
func (s *Service) eachVersionPage(ctx context.Context, bucket, prefix string, fn func([]s3types.ObjectIdentifier) error) error {
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	p := s3.NewListObjectVersionsPaginator(s.S3, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			var nsb *s3types.NoSuchBucket
			if errors.As(err, &nsb) {
				return nil
			}
			return fmt.Errorf("listing bucket %q: %w", bucket, err)
		}
		var ids []s3types.ObjectIdentifier
		for _, v := range page.Versions {
			ids = append(ids, s3types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, s3types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		if err := fn(ids); err != nil {
			return err
		}
	}
	return nil
}

// specFrom turns a rendered template into a stack spec.
func specFrom(r *render.Rendered, noRollback bool) stacks.Spec {
	spec := stacks.Spec{Name: r.StackName, Template: r.Template, Tags: r.Tags, Capabilities: r.Capabilities, DisableRollback: noRollback}
	for _, k := range slices.Sorted(maps.Keys(r.Parameters)) {
		spec.Parameters = append(spec.Parameters, stacks.Param{Key: k, Value: r.Parameters[k]})
	}
	return spec
}
