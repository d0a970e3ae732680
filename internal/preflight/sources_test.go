package preflight

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// The notification topic and the secret sources on moto: what exists and
// fits passes; what does not is one usage error naming every problem;
// what is deployed already is not checked again.
func TestSourcesCheckCore(t *testing.T) {
	ctx := context.Background()
	snsc, smc := sns.NewFromConfig(awsConfig), secretsmanager.NewFromConfig(awsConfig)
	topic, err := snsc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("pager")})
	if err != nil {
		t.Fatal(err)
	}
	pager := aws.ToString(topic.TopicArn)
	secret, err := smc.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("prod/db"), SecretString: aws.String(`{"password":"x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	db := aws.ToString(secret.ARN)
	gone, err := smc.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("prod/old"), SecretString: aws.String("x")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := smc.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: gone.ARN, RecoveryWindowInDays: aws.Int64(7)}); err != nil {
		t.Fatal(err)
	}
	for name, typ := range map[string]ssmtypes.ParameterType{"/prod/token": ssmtypes.ParameterTypeSecureString, "/prod/plain": ssmtypes.ParameterTypeString, "/prod/list": ssmtypes.ParameterTypeStringList} {
		if _, err := ssmc.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String("a,b"), Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	src := Sources{SNS: snsc, SecretsManager: smc, SSM: ssmc, Region: "us-east-1"}
	missingSecret := strings.Replace(db, "prod/db-", "prod/nope-", 1)
	deployed := &spec.Core{Notify: "arn:aws:sns:us-east-1:123456789012:gone", Secrets: spec.Secrets{{Name: "kept", From: "ssm:/prod/deleted-since"}}}
	for _, tt := range []struct {
		name     string
		deployed *spec.Core
		desired  spec.Core
		want     []string // in the one-line error; nil: passes
		note     string
	}{
		{"nothing", nil, spec.Core{}, nil, ""},
		{"topic", nil, spec.Core{Notify: pager}, nil, ""},
		{"e-mail", nil, spec.Core{Notify: "ops@example.com"}, nil, "ops@example.com a link to confirm"},
		{"e-mail unchanged", &spec.Core{Notify: "ops@example.com"}, spec.Core{Notify: "ops@example.com"}, nil, ""},
		{"missing topic", nil, spec.Core{Notify: "arn:aws:sns:us-east-1:123456789012:nope"},
			[]string{"SNS topic arn:aws:sns:us-east-1:123456789012:nope does not exist"}, ""},
		{"topic of another region", nil, spec.Core{Notify: "arn:aws:sns:eu-west-1:123456789012:pager"},
			[]string{"is in eu-west-1, not in the cluster's region us-east-1"}, ""},
		{"sources that fit", nil, spec.Core{Secrets: spec.Secrets{{Name: "db", From: db, Key: "password"}, {Name: "t", From: "ssm:/prod/token"}, {Name: "p", From: "ssm:/prod/plain"}}}, nil, ""},
		{"what is deployed is not checked again", deployed, spec.Core{Notify: deployed.Notify, Secrets: deployed.Secrets}, nil, ""},
		{"every problem on one line", nil, spec.Core{Notify: "arn:aws:sns:us-east-1:123456789012:nope", Secrets: spec.Secrets{
			{Name: "a", From: missingSecret},
			{Name: "b", From: aws.ToString(gone.ARN)},
			{Name: "c", From: "ssm:/prod/missing"},
			{Name: "d", From: "ssm:/prod/list"},
			{Name: "e", From: strings.Replace(db, "us-east-1", "us-west-2", 1)},
			{Name: "ok", From: "ssm:/prod/token"},
		}}, []string{
			"topic arn:aws:sns:us-east-1:123456789012:nope does not exist",
			"secret a: Secrets Manager has no secret " + missingSecret,
			"secret b: " + aws.ToString(gone.ARN) + " is scheduled for deletion",
			"secret c: parameter ssm:/prod/missing does not exist in us-east-1",
			"secret d: parameter ssm:/prod/list is a StringList",
			"secret e: arn:aws:secretsmanager:us-west-2:",
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			notes, err := src.CheckCore(ctx, tt.deployed, tt.desired)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got := strings.Join(notes, "\n"); tt.note == "" && got != "" || !strings.Contains(got, tt.note) {
					t.Errorf("notes %q, want %q", got, tt.note)
				}
				return
			}
			if errs.ExitCode(err) != 2 || strings.Contains(err.Error(), "\n") {
				t.Fatalf("want a one-line usage error, got %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret ok") {
				t.Errorf("%q names a source that fits", err)
			}
		})
	}
}
