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
	puts    []string
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
	f.puts = append(f.puts, aws.ToString(in.Key))
	return &s3.PutObjectOutput{}, nil
}

// Both agents are put, gzip-compressed, under their hash once; a re-run
// uploads nothing; a truncated or foreign object at a key is replaced;
// an object that cannot be read is not overwritten blindly.
func TestUpload(t *testing.T) {
	f := &fakeS3{objects: map[string]object{}}
	set := Set{"amd64": New("amd64", []byte("agent for amd64")), "arm64": New("arm64", []byte("agent for arm64"))}
	ctx := context.Background()
	b := set["arm64"]
	if !strings.HasPrefix(b.Key(), "join/agent/clusterctl-node-linux-arm64-") || !strings.HasSuffix(b.Key(), b.SHA256+".gz") {
		t.Errorf("key %s", b.Key())
	}
	var said []string
	say := func(s string) { said = append(said, s) }
	archs, err := Upload(ctx, f, "bkt", set, say)
	if err != nil || strings.Join(archs, ",") != "amd64,arm64" || len(said) != 1 ||
		!strings.Contains(said[0], "Uploading the node agent (linux/amd64, linux/arm64) to s3://bkt/join/agent/") {
		t.Fatalf("first upload: %v %v %q", archs, err, said)
	}
	for arch, b := range set {
		o := f.objects[b.Key()]
		body, err := Decompress(o.body)
		if err != nil || string(body) != "agent for "+arch || o.meta["sha256"] != b.SHA256 {
			t.Errorf("%s: object %q (%v), metadata %v", arch, body, err, o.meta)
		}
	}
	said = nil
	if archs, err := Upload(ctx, f, "bkt", set, say); err != nil || archs != nil || said != nil || len(f.puts) != 2 {
		t.Errorf("a re-run uploaded %v (%v), said %q", archs, err, said)
	}
	f.objects[b.Key()] = object{body: b.Gzip()[:10], meta: map[string]string{"sha256": b.SHA256}}
	f.objects[set["amd64"].Key()] = object{body: set["amd64"].Gzip(), meta: map[string]string{"sha256": "another"}}
	if archs, _ := Upload(ctx, f, "bkt", set, nil); strings.Join(archs, ",") != "amd64,arm64" || len(f.objects[b.Key()].body) != len(b.Gzip()) {
		t.Errorf("a truncated or foreign object kept: %v", archs)
	}
	f.headErr = &smithy.GenericAPIError{Code: "AccessDenied"}
	if _, err := Upload(ctx, f, "bkt", set, nil); err == nil || len(f.puts) != 4 {
		t.Errorf("uploaded without knowing what is there: %v", err)
	}
}
