package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// Bucket is the cluster bucket: the one the core stack owns (see
// coreBucket). It holds node configurations and the leases; a core without
// one (rolled back) is refused with what to do about it.
func (s *Service) Bucket(ctx context.Context, cluster string) (string, error) {
	core, err := s.getCore(ctx, cluster)
	if err != nil {
		return "", err
	}
	return s.bucketOf(ctx, core)
}

// bucketOf is Bucket of a core already read.
func (s *Service) bucketOf(ctx context.Context, core *stacks.Stack) (string, error) {
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
func (s *Service) provenBucket(ctx context.Context, bucket, cluster string) error {
	switch missing, err := s.missingCoreTag(ctx, bucket, cluster); {
	case isNoBucket(err):
	case err != nil:
		return err
	case missing != "":
		return refused("core %q: its bucket %s carries no %s tag, which clusterctl gives the bucket of a core it creates: refusing to read or write it; inspect the stack with the AWS CLI", cluster, bucket, missing)
	}
	return nil
}

// countVersions counts the object versions and delete markers under
// prefix ("" for the whole bucket): what emptying it deletes.
func (s *Service) countVersions(ctx context.Context, bucket, prefix string) (int, error) {
	n := 0
	err := s.eachVersionPage(ctx, bucket, prefix, func(ids []s3types.ObjectIdentifier) error {
		n += len(ids)
		return nil
	})
	return n, err
}

// objectExists tells whether the bucket holds key.
func (s *Service) objectExists(ctx context.Context, bucket, key string) (bool, error) {
	_, err := s.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	switch code := errorCode(err); {
	case err == nil:
		return true, nil
	case code == "NotFound" || code == "NoSuchKey" || isNoBucket(err):
		return false, nil
	}
	return false, fmt.Errorf("looking for s3://%s/%s: %w", bucket, key, err)
}

// emptyBucket deletes every object version and delete marker under prefix
// ("" for the whole bucket).
func (s *Service) emptyBucket(ctx context.Context, bucket, prefix string) (int, error) {
	n, _, err := s.deleteVersions(ctx, bucket, prefix, nil)
	return n, err
}

// deleteVersions deletes the object versions and delete markers under
// prefix except those keep says to keep (nil: none). It returns how many
// it deleted and their keys, each once.
func (s *Service) deleteVersions(ctx context.Context, bucket, prefix string, keep func(key, version string) bool) (int, []string, error) {
	deleted := 0
	var keys []string
	err := s.eachVersionPage(ctx, bucket, prefix, func(ids []s3types.ObjectIdentifier) error {
		if keep != nil {
			ids = slices.DeleteFunc(ids, func(id s3types.ObjectIdentifier) bool { return keep(aws.ToString(id.Key), aws.ToString(id.VersionId)) })
		}
		for _, k := range distinctKeys(ids) {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		deleted += len(ids)
		return s.deleteIdentifiers(ctx, bucket, ids)
	})
	return deleted, keys, err
}

// deleteIdentifiers deletes object versions, 1000 a call.
func (s *Service) deleteIdentifiers(ctx context.Context, bucket string, ids []s3types.ObjectIdentifier) error {
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		// The key and version alone: S3 reads the other fields as
		// conditions, which general purpose buckets refuse.
		objs := make([]s3types.ObjectIdentifier, n)
		for i, id := range ids[:n] {
			objs[i] = s3types.ObjectIdentifier{Key: id.Key, VersionId: id.VersionId}
		}
		out, err := s.S3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: objs, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("emptying bucket %q: %w", bucket, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("emptying bucket %q: %s: %s", bucket, aws.ToString(e.Key), aws.ToString(e.Message))
		}
		ids = ids[n:]
	}
	return nil
}

// eachVersionPage calls fn with the object versions and delete markers of
// each page of the bucket's listing under prefix, each with its
// modification time. A bucket that is gone has none.
func (s *Service) eachVersionPage(ctx context.Context, bucket, prefix string, fn func([]s3types.ObjectIdentifier) error) error {
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	p := s3.NewListObjectVersionsPaginator(s.S3, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if isNoBucket(err) {
				return nil
			}
			return fmt.Errorf("listing bucket %q: %w", bucket, err)
		}
		var ids []s3types.ObjectIdentifier
		for _, v := range page.Versions {
			ids = append(ids, s3types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId, LastModifiedTime: v.LastModified})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, s3types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId, LastModifiedTime: m.LastModified})
		}
		if err := fn(ids); err != nil {
			return err
		}
	}
	return nil
}
