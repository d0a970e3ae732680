package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// Finder finds a cluster: its core stack and bucket, its groups and
// queue, proven by tags; and, when one is missing, a close name.
type Finder struct {
	Stacks StackManager
	CFN    query.CFNAPI
	ASG    ASGAPI
	S3     S3API
	Region string
}

// Bucket is the cluster bucket: the one the core stack owns (see
// coreBucket). It holds node configurations and the leases; a core without
// one (rolled back) is refused with what to do about it.
func (s *Finder) Bucket(ctx context.Context, cluster string) (string, error) {
	core, err := s.getCore(ctx, cluster)
	if err != nil {
		return "", err
	}
	return s.bucketOf(ctx, core)
}

// bucketOf is Bucket of a core already read.
func (s *Finder) bucketOf(ctx context.Context, core *stacks.Stack) (string, error) {
	bucket, err := s.coreBucket(ctx, core)
	if err == nil && bucket == "" {
		msg := fmt.Sprintf("cluster %q has no bucket (core stack %s)", core.Name, core.Status)
		if a := Advice(core, Ref{Cluster: core.Name}, nil); a != "" {
			msg += "\n" + a
		}
		return "", refused("%s", msg)
	}
	return bucket, err
}

// coreBucket is the bucket the core stack owns: the physical ID of its own
// Bucket resource, never the BucketName output alone, which anyone allowed
// to update the stack can point at another bucket. An output that names
// another bucket is refused: something is wrong, and neither bucket is
// touched; so is a bucket without the cluster's tags. "" when the core
// owns no bucket (it was never created).
func (s *Finder) coreBucket(ctx context.Context, core *stacks.Stack) (string, error) {
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
	if bucket == "" {
		return "", nil
	}
	if err := s.provenBucket(ctx, bucket, core.Name); err != nil {
		return "", err
	}
	return bucket, nil
}

// provenBucket refuses a bucket that does not carry the tags of cluster's
// core. A stack's tags, and what it names its resources, can be copied:
// the bucket's own tags, which clusterctl's template gives it, prove it
// the cluster's. A bucket that is gone is the caller's to report.
func (s *Finder) provenBucket(ctx context.Context, bucket, cluster string) error {
	switch missing, err := s.missingCoreTag(ctx, bucket, cluster); {
	case isNoBucket(err):
	case err != nil:
		return err
	case missing != "":
		return refused("core %q: its bucket %s carries no %s tag, which clusterctl gives the bucket of a core it creates: refusing to read or write it; inspect the stack with the AWS CLI", cluster, bucket, missing)
	}
	return nil
}

// getCore reads the core stack and checks that it is a clusterctl core in a
// state groups can join.
func (s *Finder) getCore(ctx context.Context, cluster string) (*stacks.Stack, error) {
	core, err := s.Stacks.Get(ctx, cluster)
	if errors.Is(err, stacks.ErrNotFound) {
		return nil, clusterNotFound(errNoCore, cluster, " (create it with `clusterctl create-core "+cluster+"`)")
	}
	if err != nil {
		return nil, err
	}
	if core.Tags[names.TagRole] != names.RoleCore || core.Tags[names.TagCluster] != cluster {
		return nil, refused("stack %q is not a clusterctl core (no %s=core tag)", cluster, names.TagRole)
	}
	return core, nil
}

// groupStacks lists the groups of a cluster: the stacks whose ownership
// tags and names agree; the stacks that carry the cluster's tags under
// another name come back as conflicts, never to be touched.
func (s *Finder) groupStacks(ctx context.Context, cluster string) ([]query.Group, []query.Conflict, error) {
	return query.ListGroups(ctx, s.CFN, s.ASG, cluster)
}

// missingCoreTag is the first of the core's ownership tags for cluster
// that the bucket does not carry, as key=value ("" when it carries both).
func (s *Finder) missingCoreTag(ctx context.Context, bucket, cluster string) (string, error) {
	tags := map[string]string{}
	out, err := s.S3.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	switch {
	case errorCode(err) == "NoSuchTagSet":
	case err != nil:
		return "", fmt.Errorf("reading the tags of bucket %s: %w", bucket, err)
	default:
		for _, t := range out.TagSet {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	for _, want := range [][2]string{{names.TagCluster, cluster}, {names.TagRole, names.RoleCore}} {
		if tags[want[0]] != want[1] {
			return want[0] + "=" + want[1], nil
		}
	}
	return "", nil
}

// checkExists refuses a cluster without its core stack, and a group (other
// than the control node's) without its stack in that cluster.
func (s *Finder) checkExists(ctx context.Context, cluster, group string) error {
	if _, err := s.getCore(ctx, cluster); err != nil {
		return err
	}
	return s.checkGroup(ctx, cluster, group)
}

// checkGroup refuses a group (other than the managers') without its stack
// in cluster.
func (s *Finder) checkGroup(ctx context.Context, cluster, group string) error {
	if group == "" || group == names.GroupControl {
		return nil
	}
	st, err := s.Stacks.Get(ctx, stackName(cluster, group))
	if err != nil {
		return notFound(err, cluster, group)
	}
	if st.Tags[names.TagCluster] != cluster || st.Tags[names.TagRole] != names.RoleAgents {
		return groupNotFound(nil, cluster, group, "(stack "+st.Name+" is not one of its groups)")
	}
	return nil
}

// groupStack reads the stack of a group, refusing a stack of that name
// that is not a group of the cluster by its tags.
func (s *Finder) groupStack(ctx context.Context, cluster, group string) (*stacks.Stack, error) {
	name := names.GroupStack(cluster, group)
	st, err := s.Stacks.Get(ctx, name)
	if errors.Is(err, stacks.ErrNotFound) {
		return nil, notFound(err, cluster, group)
	}
	if err != nil {
		return nil, err
	}
	if st.Tags[names.TagCluster] != cluster || st.Tags[names.TagRole] != names.RoleAgents || st.Tags[names.TagGroup] != group {
		return nil, refused("stack %s is not an agent group of cluster %q", name, cluster)
	}
	return st, nil
}
