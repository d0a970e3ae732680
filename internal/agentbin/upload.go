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
func (b *Binary) Key() string { return names.AgentKey(b.Arch, b.SHA256) }

// MetaSHA256 is the object metadata that records the hash of the binary
// the object holds compressed.
const MetaSHA256 = "sha256"

// Present tells whether the bucket holds the binary at its key: an object
// recorded as this very binary, of the length of its gzip.
func Present(ctx context.Context, api S3API, bucket string, b *Binary) (bool, error) {
	key := b.Key()
	head, err := api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	switch {
	case err != nil && wire.IsMissing(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading s3://%s/%s: %w", bucket, key, err)
	}
	return head.Metadata[MetaSHA256] == b.SHA256 && aws.ToInt64(head.ContentLength) == int64(len(b.Gzip())), nil
}

// Put puts the binary's gzip at its key, recording its hash.
func Put(ctx context.Context, api S3API, bucket string, b *Binary) error {
	gz := b.Gzip()
	_, err := api.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(b.Key()), Body: bytes.NewReader(gz),
		ContentLength: aws.Int64(int64(len(gz))), ContentType: aws.String("application/gzip"),
		ServerSideEncryption: s3types.ServerSideEncryptionAes256, Metadata: map[string]string{MetaSHA256: b.SHA256},
	})
	if err != nil {
		return fmt.Errorf("uploading the node agent s3://%s/%s: %w", bucket, b.Key(), err)
	}
	return nil
}

// Upload puts each agent of set into the cluster bucket under its key,
// unless an object recorded as that very binary is there already: a
// re-run (or a resumed create-core) uploads nothing twice. Nodes check
// the hash themselves; the record only spares the upload. say, when set,
// is told which architectures are about to be uploaded (none: not
// called). It returns them.
func Upload(ctx context.Context, api S3API, bucket string, set Set, say func(what string)) ([]string, error) {
	var missing []*Binary
	for _, b := range set.Sorted() {
		ok, err := Present(ctx, api, bucket, b)
		if err != nil {
			return nil, err
		}
		if !ok {
			missing = append(missing, b)
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	var archs []string
	for _, b := range missing {
		archs = append(archs, b.Arch)
	}
	if say != nil {
		say(fmt.Sprintf("Uploading the node agent (%s) to s3://%s/%s/\n", archList(archs), bucket, names.AgentPrefix))
	}
	for _, b := range missing {
		if err := Put(ctx, api, bucket, b); err != nil {
			return nil, err
		}
	}
	return archs, nil
}
