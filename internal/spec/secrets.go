package spec

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Secret is a swarm secret the managers keep in step with its source in
// AWS: a Secrets Manager secret (by its full ARN) or a Systems Manager
// parameter (ssm:/path). Key picks one field of a JSON secret. The value
// never passes through clusterctl: the leader reads it and creates the
// swarm secret.
type Secret struct {
	Name string `json:"name" yaml:"name"`
	From string `json:"from" yaml:"from"`
	Key  string `json:"key,omitempty" yaml:"key,omitempty"`
}

// Secrets are the core's declared secrets, in the order given.
type Secrets []Secret

// String says them for a plan: name<-source[#key], comma-separated.
func (s Secrets) String() string {
	var out []string
	for _, x := range s {
		out = append(out, x.String())
	}
	return strings.Join(out, ",")
}

// String says one for a plan or a log: name<-source[#key].
func (s Secret) String() string {
	out := s.Name + "<-" + s.From
	if s.Key != "" {
		out += "#" + s.Key
	}
	return out
}

// Find returns the index of the secret called name, or -1.
func (s Secrets) Find(name string) int {
	return slices.IndexFunc(s, func(x Secret) bool { return x.Name == name })
}

// SSMPrefix starts a Systems Manager parameter source.
const SSMPrefix = "ssm:"

// Limits of the declaration.
const (
	// MaxSecretName leaves room in Docker's 64 characters for the
	// version suffix of a rotated secret (.v999).
	MaxSecretName = 58
	// MaxSecrets keeps the managers' secrets policy within IAM's 6,144
	// characters of a managed policy and the declaration within a
	// Systems Manager standard parameter (4 KB).
	MaxSecrets = 16
	// MaxSecretsJSON is what a standard parameter holds.
	MaxSecretsJSON = 4096
)

var (
	// Docker's rule for secret names; a name ending in .vN is refused,
	// since that is how a rotated secret's versions are named.
	secretNameRE     = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9_.-]*[a-zA-Z0-9])?$`)
	secretVersionRE  = regexp.MustCompile(`\.v[0-9]+$`)
	secretsManagerRE = regexp.MustCompile(`^arn:aws[a-z-]*:secretsmanager:[a-z]{2}(-[a-z]+)+-[0-9]+:[0-9]{12}:secret:[a-zA-Z0-9/_+=.@-]+-[a-zA-Z0-9]{6}$`)
	ssmParamRE       = regexp.MustCompile(`^/[a-zA-Z0-9_.\-/]+$`)
	jsonKeyRE        = regexp.MustCompile(`^[^\s]+$`)
)

// maxJSONKey bounds a key's length in characters apart from its shape: a
// counted repetition ({1,256}) compiles to a state per count, which every
// start of clusterctl paid.
const maxJSONKey = 256

// SecretsManager tells whether the source is a Secrets Manager ARN (else
// it is a parameter).
func (s Secret) SecretsManager() bool { return strings.HasPrefix(s.From, "arn:") }

// Parameter is the name of the source's parameter ("/path/param"), ""
// for a Secrets Manager source.
func (s Secret) Parameter() string {
	if p, ok := strings.CutPrefix(s.From, SSMPrefix); ok {
		return p
	}
	return ""
}

// CheckSecretName checks a swarm secret name as declared.
func CheckSecretName(path, name string) error {
	switch {
	case name == "":
		return missing(path)
	case len(name) > MaxSecretName:
		return invalid(path, "invalid secret name %q: %d characters, over the %d allowed (the swarm's 64 less room for .vN)", name, len(name), MaxSecretName)
	case !secretNameRE.MatchString(name):
		return invalid(path, "invalid secret name %q: letters, digits, '_', '-' and '.', starting and ending with a letter or digit", name)
	case secretVersionRE.MatchString(name):
		return invalid(path, "invalid secret name %q: a name ending in .vN is a rotated version's", name)
	}
	return nil
}

// CheckSecretSource checks a source: a Secrets Manager secret's full ARN
// or ssm:/path/param.
func CheckSecretSource(path, from string) error {
	switch {
	case from == "":
		return missing(path)
	case strings.HasPrefix(from, SSMPrefix):
		p := strings.TrimPrefix(from, SSMPrefix)
		if !ssmParamRE.MatchString(p) || len(p) > 1011 || strings.Contains(p, "//") || strings.HasSuffix(p, "/") {
			return invalid(path, "invalid parameter %q: expected ssm:/path/name (letters, digits, _ . - /)", from)
		}
		if strings.HasPrefix(strings.ToLower(p), "/aws/") || strings.HasPrefix(strings.ToLower(p), "/ssm/") {
			return invalid(path, "invalid parameter %q: /aws and /ssm are AWS's own", from)
		}
	case strings.HasPrefix(from, "arn:"):
		if !secretsManagerRE.MatchString(from) {
			return invalid(path, "invalid secret ARN %q: expected the full ARN, arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-XXXXXX (with the 6 characters Secrets Manager adds)", from)
		}
	default:
		return invalid(path, "invalid source %q: expected a Secrets Manager ARN (arn:aws:secretsmanager:...) or ssm:/path/name", from)
	}
	return nil
}

func checkSecrets(path string, s Secrets) error {
	if len(s) > MaxSecrets {
		return invalid(path, "%d secrets, over the %d allowed", len(s), MaxSecrets)
	}
	seen := map[string]bool{}
	for i, x := range s {
		at := fmt.Sprintf("%s[%d].", path, i)
		if err := CheckSecretName(at+"name", x.Name); err != nil {
			return err
		}
		if seen[x.Name] {
			return invalid(at+"name", "secret %q given twice", x.Name)
		}
		seen[x.Name] = true
		if err := CheckSecretSource(at+"from", x.From); err != nil {
			return err
		}
		if x.Key != "" && (utf8.RuneCountInString(x.Key) > maxJSONKey || !jsonKeyRE.MatchString(x.Key)) {
			return invalid(at+"key", "invalid key %q: a JSON field name without spaces, up to %d characters", x.Key, maxJSONKey)
		}
	}
	if b, _ := json.Marshal(s); len(b) > MaxSecretsJSON {
		return invalid(path, "the declaration takes %d characters, over the %d a parameter holds", len(b), MaxSecretsJSON)
	}
	return nil
}
