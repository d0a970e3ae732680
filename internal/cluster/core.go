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
	return s.createCore(ctx, name, core, o)
}

// createCore is how create-core and apply create a core: prepare, then
// create the stack and wait.
func (s *Service) createCore(ctx context.Context, name string, core spec.Core, o CreateOptions) (*stacks.Stack, error) {
	r, err := s.prepareCore(ctx, name, core)
	if err != nil {
		return nil, err
	}
	subnets := spec.SplitList(r.Parameters[names.ParamSubnetIDs])
	s.printf("Creating core stack %s in %s (%s)\n", r.StackName, r.Parameters[names.ParamVpcID], query.Plural(len(subnets), "subnet"))
	st, err := s.Stacks.Create(ctx, specFrom(r, o.NoRollback))
	if err != nil {
		return nil, explain(err, name, "")
	}
	return st, nil
}

// prepareCore is everything create-core does before it changes anything.
func (s *Service) prepareCore(ctx context.Context, name string, core spec.Core) (*render.Rendered, error) {
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
	core.VpcID, core.SubnetIDs = vpc, subnets
	r, err := render.Core(name, core, s.Version)
	if err != nil {
		return nil, errs.AsUsage(err)
	}
	return r, nil
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
	question := fmt.Sprintf("delete cluster %q", o.Name)
	if len(groups) > 0 {
		question += fmt.Sprintf(" and its groups %s", strings.Join(groupNames, ", "))
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
			return nil, explain(fmt.Errorf("deleting groups of %q: %w", o.Name, err), o.Name, "")
		}
		done.Groups = outcomes
	}
	start := time.Now()
	if bucket := core.Outputs[names.OutputBucketName]; bucket != "" {
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

// emptyBucket deletes every object version and delete marker under prefix
// ("" for the whole bucket).
func (s *Service) emptyBucket(ctx context.Context, bucket, prefix string) (int, error) {
	deleted := 0
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
				return deleted, nil
			}
			return deleted, fmt.Errorf("listing bucket %q: %w", bucket, err)
		}
		var ids []s3types.ObjectIdentifier
		for _, v := range page.Versions {
			ids = append(ids, s3types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, s3types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		// A page holds at most 1000 entries of each kind; DeleteObjects takes 1000.
		for len(ids) > 0 {
			n := min(len(ids), 1000)
			out, err := s.S3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: ids[:n], Quiet: aws.Bool(true)}})
			if err != nil {
				return deleted, fmt.Errorf("emptying bucket %q: %w", bucket, err)
			}
			if len(out.Errors) > 0 {
				e := out.Errors[0]
				return deleted, fmt.Errorf("emptying bucket %q: %s: %s", bucket, aws.ToString(e.Key), aws.ToString(e.Message))
			}
			deleted += n
			ids = ids[n:]
		}
	}
	return deleted, nil
}

// specFrom turns a rendered template into a stack spec.
func specFrom(r *render.Rendered, noRollback bool) stacks.Spec {
	spec := stacks.Spec{Name: r.StackName, Template: r.Template, Tags: r.Tags, Capabilities: r.Capabilities, DisableRollback: noRollback}
	for _, k := range slices.Sorted(maps.Keys(r.Parameters)) {
		spec.Parameters = append(spec.Parameters, stacks.Param{Key: k, Value: r.Parameters[k]})
	}
	return spec
}
