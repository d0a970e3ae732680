package agentbin

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// S3API is what an upload needs of S3.
type S3API interface {
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// Key is the binary's bucket key.
func (b Binary) Key() string { return names.AgentKey(b.Arch, b.SHA256) }

// metaSHA256 is the object metadata that records the hash of what was put.
const metaSHA256 = "sha256"

// Upload puts the binary into the cluster bucket under its key, unless an
// object recorded as this very binary is there already: a re-run (or a
// resumed create-core) uploads nothing twice. Nodes check the hash
// themselves; the record only spares the upload.
func Upload(ctx context.Context, api S3API, bucket string, b Binary) (uploaded bool, err error) {
	key := b.Key()
	head, err := api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	switch {
	case err == nil && head.Metadata[metaSHA256] == b.SHA256 && aws.ToInt64(head.ContentLength) == int64(len(b.Body)):
		return false, nil
	case err != nil && !wire.IsMissing(err):
		return false, fmt.Errorf("reading s3://%s/%s: %w", bucket, key, err)
	}
	_, err = api.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b.Body),
		ContentLength: aws.Int64(int64(len(b.Body))), ContentType: aws.String("application/octet-stream"),
		ServerSideEncryption: s3types.ServerSideEncryptionAes256, Metadata: map[string]string{metaSHA256: b.SHA256},
	})
	if err != nil {
		return false, fmt.Errorf("uploading the node agent s3://%s/%s: %w", bucket, key, err)
	}
	return true, nil
}
