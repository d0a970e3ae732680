package agentbin

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/clusterctl/clusterctl/internal/awsapi"
)

// The CLI uploads through its S3 calls held as functions (awsapi), not an
// SDK client, which would bring every S3 operation into its binary.
var _ S3API = awsapi.S3{}

type object struct {
	body []byte
	meta map[string]string
}

type fakeS3 struct {
	objects map[string]object
	puts    int
	headErr error
}

func (f *fakeS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if f.headErr != nil {
		return nil, f.headErr
	}
	o, ok := f.objects[aws.ToString(in.Key)]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "NotFound"}
	}
	return &s3.HeadObjectOutput{Metadata: o.meta, ContentLength: aws.Int64(int64(len(o.body)))}, nil
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b, _ := io.ReadAll(in.Body)
	f.objects[aws.ToString(in.Key)] = object{body: b, meta: in.Metadata}
	f.puts++
	return &s3.PutObjectOutput{}, nil
}

// The agent is put under its hash once; a truncated or foreign object at
// its key is replaced.
func TestUpload(t *testing.T) {
	f := &fakeS3{objects: map[string]object{}}
	b := New("arm64", []byte("agent"))
	ctx := context.Background()
	if !strings.HasPrefix(b.Key(), "join/agent/clusterctl-node-linux-arm64-") || !strings.HasSuffix(b.Key(), b.SHA256) {
		t.Errorf("key %s", b.Key())
	}
	for i, want := range []bool{true, false} {
		up, err := Upload(ctx, f, "bkt", b)
		if err != nil || up != want {
			t.Errorf("upload %d: %v, %v", i, up, err)
		}
	}
	f.objects[b.Key()] = object{body: []byte("age"), meta: map[string]string{"sha256": b.SHA256}}
	if up, _ := Upload(ctx, f, "bkt", b); !up || string(f.objects[b.Key()].body) != "agent" {
		t.Errorf("a truncated object kept")
	}
	f.headErr = &smithy.GenericAPIError{Code: "AccessDenied"}
	if _, err := Upload(ctx, f, "bkt", b); err == nil || f.puts != 2 {
		t.Errorf("uploaded without knowing what is there: %v", err)
	}
}
