package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/clusterctl/clusterctl/internal/names"
)

// secretSources creates, on moto, the sources the tests declare: a JSON
// secret (its ARN returned: Secrets Manager adds six characters to the
// name) and the parameters named.
func secretSources(t *testing.T, params ...string) (secretARN string) {
	t.Helper()
	ctx := context.Background()
	cfg := motoConfig(t)
	out, err := secretsmanager.NewFromConfig(cfg).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String("core/db"), SecretString: aws.String(`{"password":"p"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range params {
		// Overwrite, so that setting up is idempotent: the SDK sends a put
		// again when its answer is lost after moto carried it out.
		if _, err := ssm.NewFromConfig(cfg).PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(p), Value: aws.String("v"), Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	return aws.ToString(out.ARN)
}

// secretsGrants reads, from the deployed core's template, the sources
// the managers may read: the declared secrets' ARNs and the parameters'.
func secretsGrants(t *testing.T, c clients) (secrets []string, params []string) {
	t.Helper()
	out, err := c.cfn.GetTemplate(context.Background(), &cloudformation.GetTemplateInput{StackName: aws.String("core")})
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Properties struct {
				PolicyDocument struct {
					Statement []struct {
						Sid      string
						Resource json.RawMessage
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.TemplateBody)), &tmpl); err != nil {
		t.Fatal(err)
	}
	for _, st := range tmpl.Resources[names.ResourceSecretsPolicy].Properties.PolicyDocument.Statement {
		switch st.Sid {
		case "ReadTheDeclaredSecrets":
			_ = json.Unmarshal(st.Resource, &secrets)
		case "ReadTheDeclaredParameters":
			params = append(params, string(st.Resource))
		}
	}
	return secrets, params
}

func declaration(t *testing.T) string {
	t.Helper()
	out, err := ssm.NewFromConfig(motoConfig(t)).GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String("/clusterctl/core/secrets")})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.Parameter.Value)
}

// syncRequests counts the secrets sync requests on the core's queue.
func syncRequests(t *testing.T) int {
	t.Helper()
	q := sqs.NewFromConfig(motoConfig(t))
	l, err := q.ListQueues(context.Background(), &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, url := range l.QueueUrls {
		out, err := q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if strings.Contains(aws.ToString(m.Body), names.RequestSecretsSync) && strings.Contains(aws.ToString(m.Body), `"cluster":"core"`) {
				n++
			}
		}
	}
	return n
}

func TestSecretsAddRemoveAndRoundTrip(t *testing.T) {
	parallel(t)
	c, _ := newCluster(t)
	e2eSecretARN := secretSources(t, "/core/api/token", "/core/api/token2")
	if s, p := secretsGrants(t, c); s != nil || p != nil {
		t.Fatalf("a new core grants secrets %v, parameters %v", s, p)
	}

	// Refused before anything changes.
	for _, args := range [][]string{
		{"secrets", "add", "-j", "core", "db password", "--from", e2eSecretARN, "--yes"},
		{"secrets", "add", "-j", "core", "db", "--from", "arn:aws:secretsmanager:us-east-1:123456789012:secret:core/db", "--yes"},
		{"secrets", "add", "-j", "core", "db", "--from", "vault:/x", "--yes"},
		{"secrets", "remove", "-j", "core", "nosuch", "--yes"},
	} {
		r := clusterctl(t, args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: %s", args, r)
		}
	}
	if d := declaration(t); d != "[]" {
		t.Fatalf("declaration %s after refusals", d)
	}

	r := must(t, "secrets", "add", "-j", "core", "db_password", "--from", e2eSecretARN, "--key", "password", "--yes")
	if !strings.Contains(r.stdout, "secrets") || !strings.Contains(r.stderr, "Updated core") {
		t.Errorf("add: %s", r)
	}
	must(t, "secrets", "add", "-j", "core", "api_token", "--from", "ssm:/core/api/token", "--yes")
	s, p := secretsGrants(t, c)
	if len(s) != 1 || s[0] != e2eSecretARN || len(p) != 1 || !strings.Contains(p[0], ":parameter/core/api/token") {
		t.Errorf("grants: secrets %v, parameters %v", s, p)
	}
	if d := declaration(t); !strings.Contains(d, `"name":"db_password"`) || !strings.Contains(d, `"name":"api_token"`) {
		t.Errorf("declaration %s", d)
	}
	if n := syncRequests(t); n != 2 {
		t.Errorf("%d sync requests on the queue, want one per change", n)
	}

	// Listed, not synced yet (no manager runs here).
	r = must(t, "secrets", "-j", "core", "-o", "json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 2 || list[0]["name"] != "db_password" || list[0]["key"] != "password" ||
		!strings.Contains(list[1]["problem"].(string), "not synced yet") {
		t.Errorf("list: %v %s", err, r)
	}
	r = must(t, "secrets", "-j", "core")
	if !strings.Contains(r.stdout, "NAME") || !strings.Contains(r.stdout, "AWS VERSION") || !strings.Contains(r.stdout, "db_password") {
		t.Errorf("table: %s", r)
	}

	// The same again: no change.
	r = must(t, "secrets", "add", "-j", "core", "api_token", "--from", "ssm:/core/api/token", "--yes")
	if !strings.Contains(r.stderr, "No changes") {
		t.Errorf("add again: %s", r)
	}

	// export | apply: no changes; the file carries them.
	dir := t.TempDir()
	file := filepath.Join(dir, "core.yaml")
	r = must(t, "export", "core")
	if !strings.Contains(r.stdout, "secrets:") || !strings.Contains(r.stdout, e2eSecretARN) {
		t.Errorf("export lacks the secrets:\n%s", r.stdout)
	}
	if err := os.WriteFile(file, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("bash", "-c", "clusterctl apply -f "+file)
	sh.Env = append(envOf(t), "PATH="+filepath.Dir(binary)+":"+pathEnv())
	if r := runCommand(t, sh); r.code != 0 || !strings.Contains(r.stderr, "No changes") {
		t.Errorf("export | apply: %s", r)
	}

	// A file without one of them: apply removes it.
	edited := strings.Replace(r.stdout, "ssm:/core/api/token", "ssm:/core/api/token2", 1)
	if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, "apply", "-f", file, "--yes", "-q")
	if _, p := secretsGrants(t, c); len(p) != 1 || !strings.Contains(p[0], ":parameter/core/api/token2") {
		t.Errorf("after apply, parameters %v", p)
	}

	must(t, "secrets", "remove", "-j", "core", "api_token", "--yes")
	must(t, "secrets", "remove", "-j", "core", "db_password", "--yes")
	if s, p := secretsGrants(t, c); s != nil || p != nil {
		t.Errorf("after removal, secrets %v, parameters %v", s, p)
	}
	if d := declaration(t); d != "[]" {
		t.Errorf("declaration %s after removal", d)
	}
}

// A source that is not there, or not of a kind the managers read, is
// refused before the core is touched: exit 2, one line naming it, nothing
// declared, no sync requested. Only what is added is checked.
func TestSecretsSourcePreflight(t *testing.T) {
	parallel(t)
	newCluster(t)
	ctx := context.Background()
	secretARN := secretSources(t, "/core/api/token")
	if _, err := ssm.NewFromConfig(motoConfig(t)).PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/core/list"), Value: aws.String("a,b"), Type: ssmtypes.ParameterTypeStringList}); err != nil {
		t.Fatal(err)
	}
	missing := strings.Replace(secretARN, "core/db-", "core/nope-", 1)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"api", "--from", "ssm:/nope/missing"}, "parameter ssm:/nope/missing does not exist in us-east-1"},
		{[]string{"api", "--from", "ssm:/core/list"}, "parameter ssm:/core/list is a StringList"},
		{[]string{"db", "--from", missing, "--key", "password"}, "Secrets Manager has no secret " + missing},
		{[]string{"db", "--from", strings.Replace(secretARN, "us-east-1", "eu-west-1", 1)}, "not in the cluster's region us-east-1"},
	} {
		r := clusterctl(t, append([]string{"secrets", "add", "-j", "core"}, append(tt.args, "--yes")...)...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("secrets add %v: %s; want exit 2 and one line saying %q", tt.args, r, tt.want)
		}
	}
	if d := declaration(t); d != "[]" {
		t.Fatalf("declaration %s after refusals", d)
	}
	if n := syncRequests(t); n != 0 {
		t.Errorf("%d sync requests after refusals", n)
	}
	must(t, "secrets", "add", "-j", "core", "api", "--from", "ssm:/core/api/token", "--yes")
	// Deleted since it was declared: the next change is not refused for
	// it (`secrets` says what is wrong with it).
	if _, err := ssm.NewFromConfig(motoConfig(t)).DeleteParameter(ctx, &ssm.DeleteParameterInput{Name: aws.String("/core/api/token")}); err != nil {
		t.Fatal(err)
	}
	must(t, "secrets", "add", "-j", "core", "db", "--from", secretARN, "--key", "password", "--yes")
}
