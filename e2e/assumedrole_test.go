package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// A caller in an assumed role's session (SSO, a CI role) is by default
// the core's operator as its role, with the role's path, which only IAM
// knows (the session's ARN has none): the bucket and queue policies match
// aws:PrincipalArn, the role's ARN. Its session may then send requests.
func TestOperatorsDefaultToTheAssumedRole(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	cfg := motoConfig(t)
	role, err := iam.NewFromConfig(cfg).CreateRole(ctx, &iam.CreateRoleInput{
		RoleName: aws.String("deployer"),
		Path:     aws.String("/team/"),
		AssumeRolePolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow",` +
			`"Principal":{"AWS":"arn:aws:iam::123456789012:root"},"Action":"sts:AssumeRole"}]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	session, err := sts.NewFromConfig(cfg).AssumeRole(ctx, &sts.AssumeRoleInput{
		RoleArn: role.Role.Arn, RoleSessionName: aws.String("alice"),
	})
	if err != nil {
		t.Fatal(err)
	}
	// The last value of a variable wins.
	asRole := append(envOf(t), "AWS_ACCESS_KEY_ID="+aws.ToString(session.Credentials.AccessKeyId),
		"AWS_SECRET_ACCESS_KEY="+aws.ToString(session.Credentials.SecretAccessKey),
		"AWS_SESSION_TOKEN="+aws.ToString(session.Credentials.SessionToken))
	if r := clusterctlEnv(t, asRole, "create-core", "core", "-q"); r.code != 0 {
		t.Fatalf("create-core in a role's session: %s", r)
	}
	want := "arn:aws:iam::123456789012:role/team/deployer"
	got := strings.Join(spec.SplitList(describeStackParam(t, newClients(t), "core", names.ParamOperators)), ",")
	if got != want {
		t.Errorf("default operators %q, want the session's role with its path %s", got, want)
	}
	if r := clusterctlEnv(t, asRole, "backup", "-j", "core"); r.code != 0 {
		t.Errorf("backup by the role's session: %s", r)
	}
}
