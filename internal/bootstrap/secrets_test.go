package bootstrap

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// A secret in Secrets Manager (one field of its JSON) and a SecureString
// in Parameter Store become swarm secrets that a service reads at
// /run/secrets/NAME; a new version of each reaches the running service
// (rolled onto NAME.v2) within two rounds of the leader; the values are
// nowhere else: not in the bucket (any object, any version), the
// cluster's log group, the status snapshot, nor the node's logs.
func TestSecretsSyncedAndRotated(t *testing.T) {
	scenario(t)
	ctx := context.Background()
	cfg := awsConfig()
	sm, ps := secretsmanager.NewFromConfig(cfg), ssm.NewFromConfig(cfg)
	stamp := fmt.Sprint(time.Now().UnixNano())
	values := []string{"pw-one-" + stamp, "pw-two-" + stamp, "param-one-" + stamp, "param-two-" + stamp}
	sec, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("secrets-" + stamp + "/db"),
		SecretString: aws.String(`{"user":"app","password":"` + values[0] + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	param := "/secrets-" + stamp + "/api"
	if _, err := ps.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(param), Type: ssmtypes.ParameterTypeSecureString, Value: aws.String(values[2])}); err != nil {
		t.Fatal(err)
	}
	tc := deployCoreSpec(t, "secrets", spec.Core{Secrets: spec.Secrets{
		{Name: "db", From: aws.ToString(sec.ARN), Key: "password"},
		{Name: "api", From: "ssm:" + param},
	}})
	const every = 2 // seconds between reads of the sources
	g := tc.deployGroup(t, "g", 1, nil)
	m := tc.bootControl(t, fmt.Sprintf("CLUSTERCTL_SECRETS_INTERVAL=%d", every))
	a := g.bootAgent(t, 0)
	g.readyAgent(t, a)

	eventually(t, time.Minute, "swarm secrets db and api", func() (bool, string) {
		out, err := docker(ctx, m, "secret", "ls", "--format", "{{.Name}}")
		return err == nil && strings.Contains(out, "db\n") && strings.Contains(out, "api\n"), out
	})
	// A reader of both on the agent (managers run no workloads), which
	// prints nothing (its output would ship to the log group): the test
	// reads what it sees.
	dockerOn(t, m, "service", "create", "--detach", "--name", "reader", "--replicas", "1", "--no-resolve-image", "--network", "host",
		"--secret", "db", "--secret", "source=api,target=api_token", "--constraint", "engine.labels.clusterctl.instance-id=="+a.Spec.InstanceID,
		enginetest.Image, "sleep", "3600")
	sees := func(file, want string) func() (bool, string) {
		return func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			id, err := docker(ctx, a, "ps", "-q", "--filter", "label=com.docker.swarm.service.name=reader", "--filter", "status=running")
			ids := strings.Fields(id)
			if err != nil || len(ids) != 1 {
				return false, fmt.Sprintf("running containers %q (%v)", id, err)
			}
			out, err := docker(ctx, a, "exec", ids[0], "cat", "/run/secrets/"+file)
			if err != nil {
				return false, err.Error()
			}
			if out != want {
				return false, "another value"
			}
			return true, ""
		}
	}
	eventually(t, time.Minute, "the reader sees the secret's password", sees("db", values[0]))
	eventually(t, 30*time.Second, "the reader sees the parameter", sees("api_token", values[2]))

	// New versions: the swarm has NAME.v2 within two rounds, and the
	// service reads them where it did.
	if _, err := sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: sec.ARN, SecretString: aws.String(`{"password":"` + values[1] + `"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(param), Type: ssmtypes.ParameterTypeSecureString, Value: aws.String(values[3]), Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	round := 5*time.Second + every*time.Second // CLUSTERCTL_POLL_WAIT + the interval
	eventually(t, 2*round, "swarm secrets db.v2 and api.v2", func() (bool, string) {
		out, err := docker(ctx, m, "secret", "ls", "--format", "{{.Name}}")
		return err == nil && strings.Contains(out, "db.v2\n") && strings.Contains(out, "api.v2\n"), out
	})
	t.Logf("new versions in the swarm %s after the change", time.Since(changed).Round(time.Second))
	eventually(t, time.Minute, "the reader sees the new password", sees("db", values[1]))
	eventually(t, time.Minute, "the reader sees the new parameter", sees("api_token", values[3]))
	t.Logf("the service reads both new values %s after the change", time.Since(changed).Round(time.Second))
	// The old versions go once no service uses them.
	eventually(t, time.Minute, "db and api removed", func() (bool, string) {
		out, err := docker(ctx, m, "secret", "ls", "--format", "{{.Name}}")
		return err == nil && !strings.Contains(out, "db\n") && !strings.Contains(out, "api\n"), out
	})
	// The snapshot says it.
	eventually(t, 30*time.Second, "the snapshot's secrets", func() (bool, string) {
		b, _ := tc.getObject(t, names.StatusKey)
		return strings.Contains(string(b), `"swarmSecret":"db.v2"`) && strings.Contains(string(b), `"swarmSecret":"api.v2"`), string(b)
	})

	// Nowhere else.
	where := map[string]string{}
	versions, err := tc.c.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(tc.bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions.Versions {
		out, err := tc.c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(tc.bucket), Key: v.Key, VersionId: v.VersionId})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(out.Body)
		out.Body.Close()
		where[fmt.Sprintf("s3://%s/%s?versionId=%s", tc.bucket, aws.ToString(v.Key), aws.ToString(v.VersionId))] = string(b)
	}
	if len(versions.Versions) == 0 {
		t.Fatal("no object in the bucket")
	}
	events, err := cloudwatchlogs.NewFromConfig(cfg).FilterLogEvents(ctx, &cloudwatchlogs.FilterLogEventsInput{LogGroupName: aws.String(names.LogGroup("secrets"))})
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	for _, e := range events.Events {
		logged.WriteString(aws.ToString(e.Message) + "\n")
	}
	if !strings.Contains(logged.String(), "created swarm secret db.v2") {
		t.Errorf("the log group lacks the leader's decisions:\n%s", logged.String())
	}
	where["log group "+names.LogGroup("secrets")] = logged.String()
	for _, n := range []*enginetest.Node{m, a} {
		logs, _ := os.ReadDir(filepath.Join(n.Dir(), "log"))
		for _, e := range logs {
			b, _ := os.ReadFile(filepath.Join(n.Dir(), "log", e.Name()))
			where[n.Spec.Name+" log "+e.Name()] = string(b)
		}
		where[n.Spec.Name+" runs"] = n.Logs()
	}
	if !strings.Contains(fmt.Sprint(where), "rolling service reader onto db.v2") {
		t.Errorf("the node's logs lack the leader's decisions")
	}
	for place, text := range where {
		for _, v := range values {
			if strings.Contains(text, v) {
				t.Errorf("a secret value is in %s", place)
			}
		}
	}
}

// A change of the declaration reaches the leader at once through the
// request clusterctl sends after the core's update, long before the
// leader's own next read of the sources. The test plays CloudFormation's
// part: it writes the declaration's parameter as the update would.
func TestSecretsDeclarationChangeSyncsAtOnce(t *testing.T) {
	scenario(t)
	ctx := context.Background()
	cfg := awsConfig()
	stamp := fmt.Sprint(time.Now().UnixNano())
	tc := deployCore(t, "secretsreq")
	m := tc.bootControl(t, "CLUSTERCTL_SECRETS_INTERVAL=600")
	eventually(t, time.Minute, "the leader's first sync (of no secret)", func() (bool, string) {
		_, err := tc.tryObject(names.StatusKey)
		return err == nil, fmt.Sprint(err)
	})
	ps := ssm.NewFromConfig(cfg)
	param := "/req-" + stamp + "/token"
	if _, err := ps.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(param), Type: ssmtypes.ParameterTypeSecureString, Value: aws.String("tok-" + stamp)}); err != nil {
		t.Fatal(err)
	}
	decl := fmt.Sprintf(`[{"name":"token","from":"ssm:%s"}]`, param)
	if _, err := ps.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(names.SecretsParameter(tc.name)), Type: ssmtypes.ParameterTypeString, Value: aws.String(decl), Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	body, err := wire.NewSecretsSyncRequest(wire.NewRequestID(), time.Now(), "arn:aws:iam::"+account+":user/ops", region, tc.name)
	if err != nil {
		t.Fatal(err)
	}
	tc.putNotice(t, body)
	sent := time.Now()
	eventually(t, 30*time.Second, "swarm secret token", func() (bool, string) {
		out, err := docker(ctx, m, "secret", "ls", "--format", "{{.Name}}")
		return err == nil && strings.Contains(out, "token\n"), out
	})
	t.Logf("swarm secret made %s after the request", time.Since(sent).Round(time.Second))
}
