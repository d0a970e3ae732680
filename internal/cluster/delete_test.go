package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
	core, err := svc.CreateCore(ctx, "core", spec.Core{}, CreateOptions{})
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

	_, err = svc.DeleteCore(ctx, DeleteCoreOptions{Name: "core"})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("DeleteCore declined = %v", err)
	}
	// The three objects, and the node agents create-core uploaded.
	want := `Really delete cluster "core", emptying its bucket ` + bucket + ` (5 object versions), and its log group /clusterctl/core (2000 bytes, 2.0 KiB stored)? [y/N]`
	if !strings.Contains(errOut.String(), want) {
		t.Errorf("prompt:\n%s\nwant %q", errOut, want)
	}
	if n, err := svc.countVersions(ctx, bucket, ""); err != nil || n != 5 {
		t.Errorf("bucket holds %d versions after declining (%v), want 5", n, err)
	}
	if _, err := svc.Stacks.Get(ctx, "core"); err != nil {
		t.Errorf("core after declining: %v", err)
	}
}
