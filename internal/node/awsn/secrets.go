package awsn

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/node"
)

// ssmPrefix starts a parameter source (spec.SSMPrefix).
const ssmPrefix = "ssm:"

// SecretsManagerCalls are the agent's secretsmanager calls.
type SecretsManagerCalls struct {
	describeSecret func(context.Context, *secretsmanager.DescribeSecretInput, ...func(*secretsmanager.Options)) (*secretsmanager.DescribeSecretOutput, error)
	getSecretValue func(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// NewSecretsManager returns the secretsmanager calls of cfg, with opts applied to the client.
func NewSecretsManager(cfg aws.Config, opts ...func(*secretsmanager.Options)) SecretsManagerCalls {
	c := secretsmanager.NewFromConfig(cfg, opts...)
	return SecretsManagerCalls{describeSecret: c.DescribeSecret, getSecretValue: c.GetSecretValue}
}

// SSMCalls are the agent's ssm calls.
type SSMCalls struct {
	getParameter func(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// NewSSM returns the ssm calls of cfg, with opts applied to the client.
func NewSSM(cfg aws.Config, opts ...func(*ssm.Options)) SSMCalls {
	return SSMCalls{getParameter: ssm.NewFromConfig(cfg, opts...).GetParameter}
}

// SecretSources reads the core's declared secrets and their sources; it
// satisfies node.SecretSources. Declaration is the parameter holding the
// declaration (names.SecretsParameter).
type SecretSources struct {
	SecretsManager SecretsManagerCalls
	SSM            SSMCalls
	Declaration    string
}

// Declared reads the declaration.
func (s SecretSources) Declared(ctx context.Context) ([]node.DeclaredSecret, error) {
	out, err := s.SSM.getParameter(ctx, &ssm.GetParameterInput{Name: aws.String(s.Declaration)})
	if err != nil {
		return nil, fmt.Errorf("reading parameter %s: %w", s.Declaration, err)
	}
	var d []node.DeclaredSecret
	if out.Parameter == nil || json.Unmarshal([]byte(aws.ToString(out.Parameter.Value)), &d) != nil {
		return nil, fmt.Errorf("parameter %s is not a declaration of secrets", s.Declaration)
	}
	return d, nil
}

// Version is the source's current version: a secret's AWSCURRENT
// VersionId (DescribeSecret: no value read), a parameter's version
// (GetParameter without decryption: a SecureString stays encrypted and
// is dropped).
func (s SecretSources) Version(ctx context.Context, from string) (string, error) {
	if name, ok := strings.CutPrefix(from, ssmPrefix); ok {
		out, err := s.SSM.getParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(false)})
		if err != nil {
			return "", err
		}
		if out.Parameter == nil {
			return "", fmt.Errorf("no parameter %s", name)
		}
		return strconv.FormatInt(out.Parameter.Version, 10), nil
	}
	out, err := s.SecretsManager.describeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(from)})
	if err != nil {
		return "", err
	}
	for id, stages := range out.VersionIdsToStages {
		if slices.Contains(stages, "AWSCURRENT") {
			return id, nil
		}
	}
	return "", fmt.Errorf("the secret has no current version")
}

// Read is the source's current value (decrypted) and its version.
func (s SecretSources) Read(ctx context.Context, from string) ([]byte, string, error) {
	if name, ok := strings.CutPrefix(from, ssmPrefix); ok {
		out, err := s.SSM.getParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
		if err != nil {
			return nil, "", err
		}
		if out.Parameter == nil {
			return nil, "", fmt.Errorf("no parameter %s", name)
		}
		return []byte(aws.ToString(out.Parameter.Value)), strconv.FormatInt(out.Parameter.Version, 10), nil
	}
	out, err := s.SecretsManager.getSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(from)})
	if err != nil {
		return nil, "", err
	}
	if out.SecretString != nil {
		return []byte(*out.SecretString), aws.ToString(out.VersionId), nil
	}
	return out.SecretBinary, aws.ToString(out.VersionId), nil
}
