package spec

import (
	"fmt"
	"strings"
	"testing"
)

const testSecretARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbC123"

func TestSecretsValid(t *testing.T) {
	c := New("prod")
	c.Core.Secrets = Secrets{
		{Name: "db_password", From: testSecretARN, Key: "password"},
		{Name: "api.token", From: "ssm:/prod/api/token"},
		{Name: "x", From: "arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:a-b_c/d+e=f.g@h-zzzzzz"},
	}
	if err := c.Complete(); err != nil {
		t.Fatalf("valid secrets refused: %v", err)
	}
	// A key's bound is in characters, not bytes.
	longest := New("prod")
	longest.Core.Secrets = Secrets{{Name: "a", From: testSecretARN, Key: strings.Repeat("é", 256)}}
	if err := longest.Complete(); err != nil {
		t.Fatalf("a key of 256 characters refused: %v", err)
	}
	if got := c.Core.Secrets.String(); got != "db_password<-"+testSecretARN+"#password,api.token<-ssm:/prod/api/token,x<-arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:a-b_c/d+e=f.g@h-zzzzzz" {
		t.Errorf("String: %s", got)
	}
	if !c.Core.Secrets[0].SecretsManager() || c.Core.Secrets[1].SecretsManager() || c.Core.Secrets[1].Parameter() != "/prod/api/token" || c.Core.Secrets[0].Parameter() != "" {
		t.Error("source kinds")
	}
	if Args(c.Core) == nil || strings.Contains(strings.Join(Args(c.Core), " "), "secret") {
		t.Errorf("Args gives the secrets as a flag: %v", Args(c.Core))
	}
}

func TestSecretsInvalid(t *testing.T) {
	many := Secrets{}
	for i := range MaxSecrets + 1 {
		many = append(many, Secret{Name: fmt.Sprintf("s%d", i), From: "ssm:/p"})
	}
	long := Secrets{}
	for i := range MaxSecrets {
		long = append(long, Secret{Name: fmt.Sprintf("s%d", i), From: "ssm:/" + strings.Repeat("p", 250)})
	}
	for _, tt := range []struct {
		name    string
		secrets Secrets
		path    string
		want    string
	}{
		{"no name", Secrets{{From: "ssm:/a"}}, "core.secrets[0].name", "missing"},
		{"no source", Secrets{{Name: "a"}}, "core.secrets[0].from", "missing"},
		{"name with a space", Secrets{{Name: "db password", From: "ssm:/a"}}, "core.secrets[0].name", "invalid secret name"},
		{"name starting with a dot", Secrets{{Name: ".db", From: "ssm:/a"}}, "core.secrets[0].name", "invalid secret name"},
		{"name ending with a hyphen", Secrets{{Name: "db-", From: "ssm:/a"}}, "core.secrets[0].name", "invalid secret name"},
		{"name of a version", Secrets{{Name: "db.v2", From: "ssm:/a"}}, "core.secrets[0].name", "rotated version"},
		{"name too long", Secrets{{Name: strings.Repeat("a", MaxSecretName+1), From: "ssm:/a"}}, "core.secrets[0].name", "over the 58"},
		{"twice", Secrets{{Name: "a", From: "ssm:/a"}, {Name: "a", From: "ssm:/b"}}, "core.secrets[1].name", "given twice"},
		{"other scheme", Secrets{{Name: "a", From: "vault:/a"}}, "core.secrets[0].from", "invalid source"},
		{"parameter without a slash", Secrets{{Name: "a", From: "ssm:a"}}, "core.secrets[0].from", "invalid parameter"},
		{"parameter ending with a slash", Secrets{{Name: "a", From: "ssm:/a/"}}, "core.secrets[0].from", "invalid parameter"},
		{"parameter with a space", Secrets{{Name: "a", From: "ssm:/a b"}}, "core.secrets[0].from", "invalid parameter"},
		{"parameter of AWS", Secrets{{Name: "a", From: "ssm:/aws/service/ami"}}, "core.secrets[0].from", "AWS's own"},
		{"partial ARN", Secrets{{Name: "a", From: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:db"}}, "core.secrets[0].from", "full ARN"},
		{"ARN of another service", Secrets{{Name: "a", From: "arn:aws:ssm:eu-west-1:123456789012:parameter/db"}}, "core.secrets[0].from", "full ARN"},
		{"ARN with a short account", Secrets{{Name: "a", From: "arn:aws:secretsmanager:eu-west-1:1234:secret:db-AbC123"}}, "core.secrets[0].from", "full ARN"},
		{"key with a space", Secrets{{Name: "a", From: testSecretARN, Key: "pass word"}}, "core.secrets[0].key", "invalid key"},
		{"key of 257 characters", Secrets{{Name: "a", From: testSecretARN, Key: strings.Repeat("é", 257)}}, "core.secrets[0].key", "invalid key"},
		{"too many", many, "core.secrets", "17 secrets"},
		{"declaration too long", long, "core.secrets", "over the 4096"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := New("prod")
			c.Core.Secrets = tt.secrets
			checkFieldError(t, c.Complete(), tt.path, tt.want)
		})
	}
}
