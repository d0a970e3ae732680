package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// The delete-core prompt names the bucket that will be emptied and how many
// object versions it holds, and the log group that goes with the stack and
// how many bytes it stores; declining changes nothing.
func TestDeleteCorePromptNamesBucketAndCount(t *testing.T) {
	svc := motoService(t)
	ios := svc.IO
	ctx := context.Background()
	core, err := NewCore(svc).CreateCore(ctx, "core", spec.Core{}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bucket := core.Outputs[names.OutputBucketName]
	for _, key := range []string{"join/swarm/worker-token", "join/swarm/ca.pem", "join/groups/g/node-1.sh"} {
		if _, err := svc.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	// 2000 bytes of events in the log group, as the nodes would write them.
	group := core.Outputs[names.OutputLogGroupName]
	if _, err := svc.CWLogs.(*cloudwatchlogs.Client).CreateLogStream(ctx, &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(group), LogStreamName: aws.String("node/i-0123456789abcdef0")}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CWLogs.(*cloudwatchlogs.Client).PutLogEvents(ctx, &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String("node/i-0123456789abcdef0"),
		LogEvents: []cwtypes.InputLogEvent{{Message: aws.String(strings.Repeat("x", 2000)), Timestamp: aws.Int64(time.Now().UnixMilli())}}}); err != nil {
		t.Fatal(err)
	}
	errOut := &strings.Builder{}
	ios.In, ios.ErrOut, ios.InTTY = strings.NewReader("n\n"), errOut, true

	_, err = NewCore(svc).DeleteCore(ctx, DeleteCoreOptions{Name: "core"})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("DeleteCore declined = %v", err)
	}
	// The three objects, and the node agents create-core uploaded.
	want := `Really delete cluster "core", emptying its bucket ` + bucket + ` (5 object versions), and its log group /clusterctl/core (2000 bytes, 2.0 KiB stored)? [y/N]`
	if !strings.Contains(errOut.String(), want) {
		t.Errorf("prompt:\n%s\nwant %q", errOut, want)
	}
	if n, err := NewCore(svc).countVersions(ctx, bucket, ""); err != nil || n != 5 {
		t.Errorf("bucket holds %d versions after declining (%v), want 5", n, err)
	}
	if _, err := svc.Stacks.Get(ctx, "core"); err != nil {
		t.Errorf("core after declining: %v", err)
	}
}

// policyS3 plays the core's bucket policy, which moto does not enforce:
// while the core stack stands, a delete under the managers' prefixes by
// anyone but the managers (here: the operator) is refused, key by key as
// S3 refuses DeleteObjects.
type policyS3 struct {
	S3API
	standing func() bool
	refused  []string
}

func (p *policyS3) DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	if !p.standing() {
		return p.S3API.DeleteObjects(ctx, in, opts...)
	}
	out := &s3.DeleteObjectsOutput{}
	allowed := *in.Delete
	allowed.Objects = nil
	for _, id := range in.Delete.Objects {
		if slices.ContainsFunc(names.ManagerWrittenPrefixes(), func(pre string) bool { return strings.HasPrefix(aws.ToString(id.Key), pre) }) {
			p.refused = append(p.refused, aws.ToString(id.Key))
			out.Errors = append(out.Errors, s3types.Error{Key: id.Key, VersionId: id.VersionId, Code: aws.String("AccessDenied"), Message: aws.String("Access Denied")})
			continue
		}
		allowed.Objects = append(allowed.Objects, id)
	}
	if len(allowed.Objects) > 0 {
		in2 := *in
		in2.Delete = &allowed
		if _, err := p.S3API.DeleteObjects(ctx, &in2, opts...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// delete-core empties the bucket although its policy keeps everyone but
// the managers from deleting the swarm's objects: what only the managers
// may delete goes once the stack, and the policy with it, is gone.
func TestDeleteCoreUnderTheBucketPolicy(t *testing.T) {
	svc := motoService(t)
	ctx := context.Background()
	core, err := NewCore(svc).CreateCore(ctx, "core", spec.Core{}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bucket := core.Outputs[names.OutputBucketName]
	for _, key := range []string{names.ManagersKey, names.ControlKey(names.Backup), names.StatusKey, names.NodeConfigKey("g", "1")} {
		if _, err := svc.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	p := &policyS3{S3API: svc.S3, standing: func() bool {
		st, err := svc.Stacks.Get(ctx, "core")
		return err == nil && !strings.HasPrefix(string(st.Status), "DELETE_COMPLETE")
	}}
	svc.S3 = p
	if _, err := NewCore(svc).DeleteCore(ctx, DeleteCoreOptions{Name: "core", Yes: true}); err != nil {
		t.Fatalf("DeleteCore: %v (refused %v)", err, p.refused)
	}
	if ok, err := NewCore(svc).bucketExists(ctx, bucket); err != nil || ok {
		t.Errorf("bucket left after delete-core: %v %v", ok, err)
	}
}
