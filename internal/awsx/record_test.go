package awsx

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestIAMActions(t *testing.T) {
	v := aws.String("3HL4kqtJlcpXroDTDmJ")
	tests := []struct {
		service, op string
		in          any
		want        []string
	}{
		{"CloudFormation", "CreateChangeSet", nil, []string{"cloudformation:CreateChangeSet"}},
		{"Auto Scaling", "DescribeAutoScalingGroups", nil, []string{"autoscaling:DescribeAutoScalingGroups"}},
		{"Elastic Load Balancing v2", "DescribeTargetHealth", nil, []string{"elasticloadbalancing:DescribeTargetHealth"}},
		{"CloudWatch Logs", "FilterLogEvents", nil, []string{"logs:FilterLogEvents"}},
		{"CloudWatch", "DescribeAlarms", nil, []string{"cloudwatch:DescribeAlarms"}},
		{"Secrets Manager", "DescribeSecret", nil, []string{"secretsmanager:DescribeSecret"}},
		{"Some New Service", "DoIt", nil, []string{"somenewservice:DoIt"}},
		{"S3", "PutObject", &s3.PutObjectInput{}, []string{"s3:PutObject"}},
		{"S3", "GetObject", &s3.GetObjectInput{}, []string{"s3:GetObject"}},
		{"S3", "GetObject", &s3.GetObjectInput{VersionId: v}, []string{"s3:GetObjectVersion"}},
		{"S3", "HeadObject", &s3.HeadObjectInput{}, []string{"s3:GetObject"}},
		{"S3", "HeadObject", &s3.HeadObjectInput{VersionId: v}, []string{"s3:GetObjectVersion"}},
		{"S3", "HeadBucket", &s3.HeadBucketInput{}, []string{"s3:ListBucket"}},
		{"S3", "ListObjectsV2", &s3.ListObjectsV2Input{}, []string{"s3:ListBucket"}},
		{"S3", "ListObjectVersions", &s3.ListObjectVersionsInput{}, []string{"s3:ListBucketVersions"}},
		{"S3", "DeleteObject", &s3.DeleteObjectInput{}, []string{"s3:DeleteObject"}},
		{"S3", "DeleteObject", &s3.DeleteObjectInput{VersionId: v}, []string{"s3:DeleteObjectVersion"}},
		{"S3", "DeleteObjects", &s3.DeleteObjectsInput{Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{{Key: aws.String("a")}}}},
			[]string{"s3:DeleteObject"}},
		{"S3", "DeleteObjects", &s3.DeleteObjectsInput{Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{{Key: aws.String("a"), VersionId: v}}}},
			[]string{"s3:DeleteObjectVersion"}},
		{"S3", "DeleteObjects", &s3.DeleteObjectsInput{Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{{Key: aws.String("a")}, {Key: aws.String("b"), VersionId: v}}}},
			[]string{"s3:DeleteObject", "s3:DeleteObjectVersion"}},
		{"S3", "GetBucketTagging", &s3.GetBucketTaggingInput{}, []string{"s3:GetBucketTagging"}},
		{"S3", "DeleteBucket", &s3.DeleteBucketInput{}, []string{"s3:DeleteBucket"}},
	}
	for _, tc := range tests {
		if got := IAMActions(tc.service, tc.op, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("IAMActions(%q, %q, %T) = %v, want %v", tc.service, tc.op, tc.in, got, tc.want)
		}
	}
}

// With EnvRecordCalls set, each call is appended as its IAM action, the
// failed ones too.
func TestRecordCalls(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "missing") {
			w.WriteHeader(404)
			return
		}
		w.Write([]byte(describeStacksOK))
	}))
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	file := filepath.Join(t.TempDir(), "calls")
	t.Setenv(EnvRecordCalls, file)
	cfg, _, err := Load(context.Background(), Options{Region: "us-east-1", EndpointURL: srv.URL, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfn := cloudformation.NewFromConfig(cfg)
	if _, err := cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{}); err != nil {
		t.Fatal(err)
	}
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := s3c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("missing")}); err == nil {
		t.Fatal("HeadObject of a missing key succeeded")
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := "cloudformation:DescribeStacks\ns3:GetObject\n"; string(got) != want {
		t.Errorf("recorded %q, want %q", got, want)
	}
}

// Recorders appending to one file at once leave whole lines.
func TestRecordAppendsWholeLines(t *testing.T) {
	file := filepath.Join(t.TempDir(), "calls")
	r := callRecorder{file}
	long := strings.Repeat("x", 200)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if err := r.append([]string{"svc:" + long + string(rune('a'+i)), "svc:Other"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 8*200*2 {
		t.Fatalf("%d lines, want %d", len(lines), 8*200*2)
	}
	for _, l := range lines {
		if l != "svc:Other" && (len(l) != len("svc:")+201 || !strings.HasPrefix(l, "svc:"+long)) {
			t.Fatalf("torn line %q", l)
		}
	}
}
