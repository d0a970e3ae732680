package render

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// secretsPolicy renders the core with the secrets and returns the
// managers' secrets policy statements by Sid, and the declaration.
func secretsPolicy(t *testing.T, s spec.Secrets) (map[string]map[string]any, string) {
	t.Helper()
	r, err := Core("prod", spec.Core{Secrets: s}, build("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Type       string
			Properties json.RawMessage
		}
	}
	if err := json.Unmarshal(r.Template, &tmpl); err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Roles          []map[string]string
		PolicyDocument struct{ Statement []map[string]any }
	}
	p := tmpl.Resources[names.ResourceSecretsPolicy]
	if p.Type != "AWS::IAM::Policy" || json.Unmarshal(p.Properties, &policy) != nil {
		t.Fatalf("no secrets policy: %+v", p)
	}
	if len(policy.Roles) != 1 || policy.Roles[0]["Ref"] != "ControlRole" {
		t.Errorf("policy attached to %v, want the managers' role", policy.Roles)
	}
	out := map[string]map[string]any{}
	for _, st := range policy.PolicyDocument.Statement {
		out[st["Sid"].(string)] = st
	}
	var decl struct{ Name, Value string }
	if err := json.Unmarshal(tmpl.Resources[names.ResourceSecretsDeclaration].Properties, &decl); err != nil || decl.Name != "/clusterctl/prod/secrets" {
		t.Fatalf("declaration %+v: %v", decl, err)
	}
	// Nothing else in the template grants these services to a role (a
	// key's own policy, which lets CloudWatch use the alarms' topic key,
	// grants no role anything).
	rest := strings.ReplaceAll(string(r.Template), string(p.Properties), "")
	for _, res := range tmpl.Resources {
		if res.Type == "AWS::KMS::Key" {
			rest = strings.ReplaceAll(rest, string(res.Properties), "")
		}
	}
	for _, action := range []string{`"secretsmanager:`, "kms:Decrypt", `"ssm:GetParameter`} {
		if strings.Contains(rest, action) {
			t.Errorf("%s granted outside the secrets policy", action)
		}
	}
	return out, decl.Value
}

func TestSecretsPolicyNoneDeclared(t *testing.T) {
	st, decl := secretsPolicy(t, nil)
	if len(st) != 1 || st["ReadTheSecretsDeclaration"] == nil {
		t.Errorf("statements %v, want only the declaration's read", st)
	}
	if got := st["ReadTheSecretsDeclaration"]["Resource"]; !reflect.DeepEqual(got, map[string]any{"Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/clusterctl/prod/secrets"}) {
		t.Errorf("declaration read on %v", got)
	}
	if decl != "[]" {
		t.Errorf("declaration %q, want []", decl)
	}
}

func TestSecretsPolicyListsTheDeclaredSources(t *testing.T) {
	const arn1 = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbC123"
	const arn2 = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/api-XyZ789"
	s := spec.Secrets{
		{Name: "db_password", From: arn1, Key: "password"},
		{Name: "db_user", From: arn1, Key: "user"}, // the same source twice: listed once
		{Name: "api", From: arn2},
		{Name: "token", From: "ssm:/prod/token"},
	}
	st, decl := secretsPolicy(t, s)
	arns := []any{arn1, arn2}
	if got := st["ReadTheDeclaredSecrets"]["Resource"]; !reflect.DeepEqual(got, arns) {
		t.Errorf("secrets readable: %v, want %v", got, arns)
	}
	if got := st["ReadTheDeclaredSecrets"]["Action"]; !reflect.DeepEqual(got, []any{"secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"}) {
		t.Errorf("secret actions %v", got)
	}
	param := []any{map[string]any{"Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/prod/token"}}
	if got := st["ReadTheDeclaredParameters"]["Resource"]; !reflect.DeepEqual(got, param) {
		t.Errorf("parameters readable: %v, want %v", got, param)
	}
	cond := func(sid string) map[string]any {
		c, _ := st[sid]["Condition"].(map[string]any)
		eq, _ := c["StringEquals"].(map[string]any)
		return eq
	}
	if c := cond("DecryptTheDeclaredSecrets"); !reflect.DeepEqual(c["kms:EncryptionContext:SecretARN"], arns) ||
		!reflect.DeepEqual(c["kms:ViaService"], map[string]any{"Fn::Sub": "secretsmanager.${AWS::Region}.amazonaws.com"}) {
		t.Errorf("secrets decrypt condition %v", c)
	}
	if c := cond("DecryptTheDeclaredParameters"); !reflect.DeepEqual(c["kms:EncryptionContext:PARAMETER_ARN"], param) ||
		!reflect.DeepEqual(c["kms:ViaService"], map[string]any{"Fn::Sub": "ssm.${AWS::Region}.amazonaws.com"}) {
		t.Errorf("parameters decrypt condition %v", c)
	}
	back, err := ReadSecretsDeclaration(decl)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Errorf("declaration reads back as %v, %v", back, err)
	}
	// Only parameters: no Secrets Manager statement.
	st, _ = secretsPolicy(t, spec.Secrets{{Name: "token", From: "ssm:/prod/token"}})
	if st["ReadTheDeclaredSecrets"] != nil || st["DecryptTheDeclaredSecrets"] != nil || st["ReadTheDeclaredParameters"] == nil {
		t.Errorf("statements %v", st)
	}
}

// The declared secrets are intent: a deployed core reads them back.
func TestSecretsReadBack(t *testing.T) {
	s := spec.Secrets{{Name: "db", From: "ssm:/prod/db"}}
	r, err := Core("prod", spec.Core{Secrets: s}, build("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReadCore(Deployed{Template: r.Template, Parameters: r.Parameters})
	if err != nil || !reflect.DeepEqual(c.Secrets, s) {
		t.Errorf("read back %v, %v", c.Secrets, err)
	}
}

// The most secrets a declaration takes fit the template and IAM's limit
// on a role's inline policies (10,240 characters without whitespace, all
// of them together).
func TestSecretsAtTheLimit(t *testing.T) {
	var s spec.Secrets
	for i := range spec.MaxSecrets {
		from := "ssm:/" + strings.Repeat("p", 60) + string(rune('a'+i))
		if i%2 == 0 {
			from = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:" + strings.Repeat("s", 60) + string(rune('a'+i)) + "-AbC123"
		}
		s = append(s, spec.Secret{Name: strings.Repeat("n", 50) + string(rune('a'+i)), From: from, Key: "password"})
	}
	c := spec.Core{Secrets: s}
	if err := c.Complete(); err != nil {
		t.Fatal(err)
	}
	r, err := Core("prod", c, build("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Properties struct {
				PolicyDocument json.RawMessage
				Policies       []struct{ PolicyDocument json.RawMessage }
			}
		}
	}
	if err := json.Unmarshal(r.Template, &tmpl); err != nil {
		t.Fatal(err)
	}
	n := len(tmpl.Resources[names.ResourceSecretsPolicy].Properties.PolicyDocument)
	for _, p := range tmpl.Resources["ControlRole"].Properties.Policies {
		n += len(p.PolicyDocument)
	}
	t.Logf("the managers' inline policies: %d characters", n)
	if n > 10240 {
		t.Errorf("the managers' inline policies take %d characters, over IAM's 10,240", n)
	}
}
