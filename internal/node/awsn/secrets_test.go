package awsn

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

func TestSecretSources(t *testing.T) {
	var decrypted []bool
	s := SecretSources{
		Declaration: "/clusterctl/prod/secrets",
		SecretsManager: SecretsManagerCalls{
			describeSecret: func(_ context.Context, in *secretsmanager.DescribeSecretInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.DescribeSecretOutput, error) {
				return &secretsmanager.DescribeSecretOutput{VersionIdsToStages: map[string][]string{"old": {"AWSPREVIOUS"}, "new": {"AWSPENDING", "AWSCURRENT"}}}, nil
			},
			getSecretValue: func(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
				return &secretsmanager.GetSecretValueOutput{SecretString: aws.String("v"), VersionId: aws.String("new")}, nil
			},
		},
		SSM: SSMCalls{getParameter: func(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
			if aws.ToString(in.Name) == "/clusterctl/prod/secrets" {
				return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Value: aws.String(`[{"name":"db","from":"ssm:/p","key":"k"}]`)}}, nil
			}
			decrypted = append(decrypted, aws.ToBool(in.WithDecryption))
			return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Value: aws.String("pv"), Version: 7}}, nil
		}},
	}
	ctx := context.Background()
	d, err := s.Declared(ctx)
	if err != nil || len(d) != 1 || d[0].Name != "db" || d[0].From != "ssm:/p" || d[0].Key != "k" {
		t.Errorf("declared %+v, %v", d, err)
	}
	if v, err := s.Version(ctx, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:db-AbC123"); v != "new" || err != nil {
		t.Errorf("secret version %q, %v", v, err)
	}
	if b, v, err := s.Read(ctx, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:db-AbC123"); string(b) != "v" || v != "new" || err != nil {
		t.Errorf("secret read %q %q %v", b, v, err)
	}
	if v, err := s.Version(ctx, "ssm:/p"); v != "7" || err != nil {
		t.Errorf("parameter version %q, %v", v, err)
	}
	if b, v, err := s.Read(ctx, "ssm:/p"); string(b) != "pv" || v != "7" || err != nil {
		t.Errorf("parameter read %q %q %v", b, v, err)
	}
	// The version is read without decrypting, the value with.
	if len(decrypted) != 2 || decrypted[0] || !decrypted[1] {
		t.Errorf("decryption %v", decrypted)
	}
}
