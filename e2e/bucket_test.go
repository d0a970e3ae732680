package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// repointOutput updates the core stack so that its BucketName output names
// another bucket, as `aws cloudformation update-stack` with an edited
// template would; the stack's own bucket stays.
func repointOutput(t *testing.T, c clients, stack, bucket string) {
	t.Helper()
	editOutputs(t, c, stack, func(outs map[string]any) { outs["BucketName"].(map[string]any)["Value"] = bucket })
	if out := outputs(describeStack(t, c, stack)); out["BucketName"] != bucket {
		t.Fatalf("BucketName output is %q after the update, want %q", out["BucketName"], bucket)
	}
}

// editOutputs updates a stack with its template's outputs edited by edit,
// its parameters and everything else as they are: a change made outside
// clusterctl.
func editOutputs(t *testing.T, c clients, stack string, edit func(outputs map[string]any)) {
	t.Helper()
	ctx := context.Background()
	got, err := c.cfn.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String(stack)})
	if err != nil {
		t.Fatal(err)
	}
	var tpl map[string]any
	if err := json.Unmarshal([]byte(aws.ToString(got.TemplateBody)), &tpl); err != nil {
		t.Fatal(err)
	}
	edit(tpl["Outputs"].(map[string]any))
	body, _ := json.Marshal(tpl)
	st := describeStack(t, c, stack)
	in := &cloudformation.UpdateStackInput{
		StackName: aws.String(stack), TemplateBody: aws.String(string(body)),
		Capabilities: st.Capabilities, Tags: st.Tags,
	}
	for _, p := range st.Parameters {
		in.Parameters = append(in.Parameters, cfntypes.Parameter{ParameterKey: p.ParameterKey, UsePreviousValue: aws.Bool(true)})
	}
	if _, err := c.cfn.UpdateStack(ctx, in); err != nil {
		t.Fatalf("editing the outputs of %s: %v", stack, err)
	}
}

func versionCount(t *testing.T, c clients, bucket string) int {
	t.Helper()
	out, err := c.s3.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("listing %s: %v", bucket, err)
	}
	return len(out.Versions) + len(out.DeleteMarkers)
}

// delete-core empties the bucket the core stack owns (its Bucket resource),
// not whatever its BucketName output names: an output pointing at another
// bucket is refused, and neither bucket nor the stack is touched.
func TestDeleteCoreRefusesRepointedBucketOutput(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()
	must(t, "create-core", "core", "-q")
	own := outputs(describeStack(t, c, "core"))["BucketName"]

	const other = "payments-prod-archive"
	if _, err := c.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(other)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(other),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"ledger/2024.csv", "ledger/2024.csv", "ledger/2025.csv"} {
		if _, err := c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(other), Key: aws.String(key), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(own), Key: aws.String("join/swarm/worker-token"), Body: strings.NewReader("t")}); err != nil {
		t.Fatal(err)
	}
	repointOutput(t, c, "core", other)

	r := clusterctl(t, "delete-core", "core", "--yes", "-q")
	if r.code != 1 {
		t.Errorf("exit %d, want 1\n%s", r.code, r)
	}
	first := strings.SplitN(r.stderr, "\n", 2)[0]
	for _, want := range []string{"clusterctl: ", "BucketName output names bucket " + other, "owns bucket " + own, "refusing"} {
		if !strings.Contains(first, want) {
			t.Errorf("message does not say %q:\n%s", want, r.stderr)
		}
	}
	if n := versionCount(t, c, other); n != 3 {
		t.Errorf("the other bucket holds %d object versions after delete-core, want 3 (untouched)", n)
	}
	// The worker token and the two node agents create-core uploaded.
	if n := versionCount(t, c, own); n != 3 {
		t.Errorf("the core's bucket holds %d object versions, want 3 (untouched)", n)
	}
	if names := c.stackNames(t); !sameSet(names, []string{"core"}) {
		t.Errorf("stacks = %v, want the core kept", names)
	}

	// With the output restored, delete-core goes through and empties the
	// core's own bucket only.
	repointOutput(t, c, "core", own)
	must(t, "delete-core", "core", "--yes", "-q")
	if names := c.stackNames(t); len(names) != 0 {
		t.Errorf("stacks after delete-core = %v", names)
	}
	if n := versionCount(t, c, other); n != 3 {
		t.Errorf("the other bucket holds %d object versions, want 3", n)
	}
}
