package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// ledgerTemplate is another team's stack: a versioned bucket it retains
// when the stack is deleted, under the logical ID our core uses.
const ledgerTemplate = `{"Resources":{"Bucket":{"Type":"AWS::S3::Bucket","DeletionPolicy":"Retain",
"Properties":{"BucketName":"payments-ledger-data","VersioningConfiguration":{"Status":"Enabled"}%s}}}}`

// deleteStackAndWait deletes a stack and waits until it is DELETE_COMPLETE.
func deleteStackAndWait(t *testing.T, c clients, stack string) {
	t.Helper()
	if _, err := c.cfn.DeleteStack(t.Context(), &cloudformation.DeleteStackInput{StackName: aws.String(stack)}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(250 * time.Millisecond) {
		out, err := c.cfn.DescribeStacks(t.Context(), &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
		if err != nil || len(out.Stacks) == 0 || out.Stacks[0].StackStatus == "DELETE_COMPLETE" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stack %s is %s a minute after DeleteStack", stack, out.Stacks[0].StackStatus)
		}
	}
}

// A deleted stack of another team named like the cluster, whose retained
// bucket holds data: delete-core leaves the bucket and says so, whether
// the stack, the bucket or neither carries clusterctl's tags for that
// cluster. Only both together make a left-over bucket ours.
func TestDeleteCoreLeavesForeignRetainedBucket(t *testing.T) {
	parallel(t)
	ourTags := []cfntypes.Tag{
		{Key: aws.String("clusterctl:cluster"), Value: aws.String("payments")},
		{Key: aws.String("clusterctl:role"), Value: aws.String("core")},
	}
	bucketTags := `,"Tags":[{"Key":"clusterctl:cluster","Value":"payments"},{"Key":"clusterctl:role","Value":"core"}]`
	for _, tc := range []struct {
		name       string
		stackTags  []cfntypes.Tag
		bucketTags string
		why        string
	}{
		{"neither tagged", nil, "", "stack payments was not clusterctl's"},
		{"stack tagged, bucket not", ourTags, "", "bucket payments-ledger-data carries no clusterctl:cluster=payments tag"},
		{"bucket tagged, stack not", nil, bucketTags, "stack payments was not clusterctl's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resetMoto(t)
			c := newClients(t)
			if _, err := c.cfn.CreateStack(t.Context(), &cloudformation.CreateStackInput{
				StackName:    aws.String("payments"),
				TemplateBody: aws.String(strings.Replace(ledgerTemplate, "%s", tc.bucketTags, 1)),
				Tags:         tc.stackTags,
			}); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"2026/11/ledger.csv", "2026/11/ledger.csv", "2026/10/ledger.csv"} {
				if _, err := c.s3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("payments-ledger-data"), Key: aws.String(key), Body: strings.NewReader("amount")}); err != nil {
					t.Fatal(err)
				}
			}
			versions := versionCount(t, c, "payments-ledger-data")
			deleteStackAndWait(t, c, "payments")

			r := clusterctl(t, "delete-core", "payments", "--yes")
			if r.code != 1 {
				t.Errorf("delete-core payments: exit %d, want 1\n%s", r.code, r)
			}
			if out := r.stdout + r.stderr; !strings.Contains(out, "bucket payments-ledger-data") || !strings.Contains(out, "left") || !strings.Contains(out, tc.why) {
				t.Errorf("delete-core does not say it left the bucket and why (%q):\n%s", tc.why, r)
			}
			if strings.Contains(r.stdout+r.stderr, "deleted its bucket") {
				t.Errorf("delete-core claims it deleted the bucket:\n%s", r)
			}
			if n := versionCount(t, c, "payments-ledger-data"); n != versions {
				t.Errorf("payments-ledger-data holds %d object versions after delete-core, want the %d it held", n, versions)
			}
		})
	}
}

// A retained bucket of our own deleted core (both carry our tags) is
// deleted only when confirmed: on a terminal the question names the
// bucket and its object versions; without one --yes is needed.
func TestDeleteCoreConfirmsLeftBucket(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	bucket := outputs(describeStack(t, c, "core"))["BucketName"]
	tags, err := c.s3.GetBucketTagging(t.Context(), &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("the core's bucket carries no tags: %v", err)
	}
	if !hasTag(tags.TagSet, "clusterctl:cluster", "core") || !hasTag(tags.TagSet, "clusterctl:role", "core") {
		t.Errorf("the core's bucket tags: %v", tags.TagSet)
	}
	for _, key := range []string{"status/swarm.json", "control/managers/i-1"} {
		if _, err := c.s3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	versions := versionCount(t, c, bucket)
	deleteStackAndWait(t, c, "core")

	if r := clusterctl(t, "delete-core", "core"); r.code != 2 || !strings.Contains(r.stderr, "--yes") {
		t.Errorf("delete-core of a left bucket without --yes off a terminal:\n%s", r)
	}
	term := startTerminal(t, envOf(t), binary, "delete-core", "core")
	term.expect("[y/N]: ")
	if want := fmt.Sprintf("Really delete bucket %s (%d object versions), left by the deleted core of cluster \"core\"?", bucket, versions); !strings.Contains(term.screen(), want) {
		t.Errorf("the question does not name the bucket and its versions (%q):\n%s", want, term.screen())
	}
	term.typeText("n\n")
	if code := term.exit(); code != 1 {
		t.Errorf("declined: exit %d, want 1\n%s", code, term.screen())
	}
	if n := versionCount(t, c, bucket); n != versions {
		t.Fatalf("the bucket holds %d object versions after declining, want %d", n, versions)
	}
	r := must(t, "delete-core", "core", "--yes")
	if !strings.Contains(r.stdout, "deleted its bucket "+bucket) {
		t.Errorf("delete-core --yes:\n%s", r)
	}
	if _, err := c.s3.HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		t.Errorf("bucket %s left", bucket)
	}
}

func hasTag(tags []s3types.Tag, key, value string) bool {
	for _, tg := range tags {
		if aws.ToString(tg.Key) == key && aws.ToString(tg.Value) == value {
			return true
		}
	}
	return false
}
