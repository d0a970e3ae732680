package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/iostreams"
	"github.com/clusterctl/clusterctl/internal/motoserver"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// motoService starts a moto server for the test and returns a Service on it
// whose streams are buffers.
func motoService(t *testing.T) (*Service, *iostreams.IO) {
	t.Helper()
	srv, err := motoserver.Start(nil)
	if err != nil {
		t.Fatal(err) // never a skip: without moto this test says nothing
	}
	t.Cleanup(srv.Close)
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("testing", "testing", "")),
		config.WithBaseEndpoint(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	ios, _, _, _ := iostreams.Test()
	cfn := cloudformation.NewFromConfig(cfg)
	return &Service{
		Stacks: stacks.NewManager(cfn, stacks.Options{}), CFN: cfn,
		EC2: ec2.NewFromConfig(cfg), ASG: autoscaling.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg),
		S3: s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }),
		IO: ios, Version: "test",
	}, ios
}

// The delete-core prompt names the bucket that will be emptied and how many
// object versions it holds; declining changes nothing.
func TestDeleteCorePromptNamesBucketAndCount(t *testing.T) {
	svc, ios := motoService(t)
	ctx := context.Background()
	core, err := svc.CreateCore(ctx, CoreOptions{Name: "core", InstanceType: "t3.medium"})
	if err != nil {
		t.Fatal(err)
	}
	bucket := core.Outputs["BucketName"]
	for _, key := range []string{"join/swarm/worker-token", "join/swarm/ca.pem", "join/groups/g/node-1.sh"} {
		if _, err := svc.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	errOut := &strings.Builder{}
	ios.In, ios.ErrOut, ios.InTTY = strings.NewReader("n\n"), errOut, true

	err = svc.DeleteCore(ctx, DeleteCoreOptions{Name: "core"})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("DeleteCore declined = %v", err)
	}
	want := `Really delete cluster "core", emptying its bucket ` + bucket + ` (3 object versions)? [y/N]`
	if !strings.Contains(errOut.String(), want) {
		t.Errorf("prompt:\n%s\nwant %q", errOut, want)
	}
	if n, err := svc.countVersions(ctx, bucket); err != nil || n != 3 {
		t.Errorf("bucket holds %d versions after declining (%v), want 3", n, err)
	}
	if _, err := svc.Stacks.Get(ctx, "core"); err != nil {
		t.Errorf("core after declining: %v", err)
	}
}
