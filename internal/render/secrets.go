package render

import (
	"encoding/json"
	"fmt"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// secretsData is what templates/core/secrets.json.tmpl sees: the
// declaration the leader reads, and the sources the managers may read.
type secretsData struct {
	Declaration, Policy string // logical ids
	Parameter           string // the declaration's parameter name
	JSON                string // the declaration
	SecretARNs          []string
	// ParameterARNs are Fn::Sub strings: the partition, region and account
	// are the stack's.
	ParameterARNs []string
}

func secretsOf(cluster string, s spec.Secrets) (secretsData, error) {
	d := secretsData{Declaration: names.ResourceSecretsDeclaration, Policy: names.ResourceSecretsPolicy, Parameter: names.SecretsParameter(cluster)}
	if s == nil {
		s = spec.Secrets{}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return d, fmt.Errorf("encoding the secrets: %w", err)
	}
	d.JSON = string(b)
	for _, x := range s {
		if x.SecretsManager() {
			d.SecretARNs = appendNew(d.SecretARNs, x.From)
		} else {
			d.ParameterARNs = appendNew(d.ParameterARNs, "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter"+x.Parameter())
		}
	}
	return d, nil
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// ReadSecretsDeclaration reads the declaration as the parameter holds it.
func ReadSecretsDeclaration(value string) (spec.Secrets, error) {
	var s spec.Secrets
	if err := json.Unmarshal([]byte(value), &s); err != nil {
		return nil, fmt.Errorf("reading the secrets declaration: %w", err)
	}
	return s, nil
}
