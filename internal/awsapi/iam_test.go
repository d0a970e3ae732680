package awsapi

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/clusterctl/clusterctl/internal/motoserver"
)

// RoleARN, signed and sent without the SDK's IAM client, reads the ARN of
// a role with its path as the SDK's client would, and says IAM's error.
func TestRoleARN(t *testing.T) {
	srv, err := motoserver.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("eu-west-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("testing", "testing", "")))
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseEndpoint = aws.String(srv.URL)
	out, err := iam.NewFromConfig(cfg).CreateRole(t.Context(), &iam.CreateRoleInput{
		RoleName: aws.String("deployer"), Path: aws.String("/ops/"),
		AssumeRolePolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	arn, err := NewIAM(cfg).RoleARN(t.Context(), "deployer")
	if err != nil || arn != aws.ToString(out.Role.Arn) || !strings.Contains(arn, ":role/ops/deployer") {
		t.Errorf("RoleARN = %q, %v; want %q", arn, err, aws.ToString(out.Role.Arn))
	}
	if _, err := NewIAM(cfg).RoleARN(t.Context(), "nobody"); err == nil || !strings.Contains(err.Error(), "NoSuchEntity") {
		t.Errorf("RoleARN of no role: %v", err)
	}
}

func TestIAMEndpoint(t *testing.T) {
	for region, want := range map[string]string{
		"eu-west-1":      "https://iam.amazonaws.com us-east-1",
		"cn-northwest-1": "https://iam.cn-north-1.amazonaws.com.cn cn-north-1",
		"us-gov-east-1":  "https://iam.us-gov.amazonaws.com us-gov-west-1",
	} {
		e, r := iamEndpoint(aws.Config{Region: region})
		if e+" "+r != want {
			t.Errorf("%s: %s %s, want %s", region, e, r, want)
		}
	}
}
