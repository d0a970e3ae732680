package cluster

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/render"
)

// ObjectPutter stores objects in the cluster bucket.
type ObjectPutter interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// UploadArtifacts puts a rendered stack's artifacts (a group's node
// configuration) into the cluster bucket, server-side encrypted. It must
// run before the stack is created or updated: new nodes fetch them at boot.
// Keys are content-addressed and never deleted here, so a rollback to the
// previous launch template finds its configuration too; putting an object
// again is harmless.
func UploadArtifacts(ctx context.Context, api ObjectPutter, bucket string, arts []render.Artifact) error {
	if len(arts) == 0 {
		return nil
	}
	if bucket == "" {
		return fmt.Errorf("uploading node configuration: the core has no bucket")
	}
	for _, a := range arts {
		_, err := api.PutObject(ctx, &s3.PutObjectInput{
			Bucket:               aws.String(bucket),
			Key:                  aws.String(a.Key),
			Body:                 bytes.NewReader(a.Body),
			ContentLength:        aws.Int64(int64(len(a.Body))),
			ContentType:          aws.String("text/x-shellscript"),
			ServerSideEncryption: s3types.ServerSideEncryptionAes256,
		})
		if err != nil {
			return fmt.Errorf("uploading node configuration s3://%s/%s: %w", bucket, a.Key, err)
		}
	}
	return nil
}

// uploadArtifacts is UploadArtifacts with the service's S3 client, saying
// what it does.
func (s *Service) uploadArtifacts(ctx context.Context, bucket string, r *render.Rendered) error {
	for _, a := range r.Artifacts {
		s.printf("Uploading node configuration s3://%s/%s\n", bucket, a.Key)
	}
	return UploadArtifacts(ctx, s.S3, bucket, r.Artifacts)
}
