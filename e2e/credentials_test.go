package e2e

import (
	"slices"
	"strings"
	"testing"
)

// Without AWS credentials a command says so in one line, with where they
// come from, and exits 1: no SDK warning, no wrapped SDK error.
func TestNoCredentials(t *testing.T) {
	parallel(t)
	base := slices.DeleteFunc(envOf(t), func(v string) bool {
		return strings.HasPrefix(v, "AWS_ACCESS_KEY_ID=") || strings.HasPrefix(v, "AWS_SECRET_ACCESS_KEY=") || strings.HasPrefix(v, "AWS_SESSION_TOKEN=")
	})
	home := t.TempDir() // no ~/.aws
	for _, tt := range []struct {
		name string
		env  []string
	}{
		// What a laptop meets: nothing answers at the instance metadata
		// address.
		{"no instance metadata service", []string{"AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:9"}},
		{"instance metadata disabled", []string{"AWS_EC2_METADATA_DISABLED=true"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			environ := append(slices.Clone(base), "HOME="+home)
			environ = append(environ, tt.env...)
			for _, args := range [][]string{
				{"list-nodes", "-j", "core"},
				{"create-core", "core"},
			} {
				r := clusterctlEnv(t, environ, args...)
				lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
				if r.code != 1 || len(lines) != 1 || !strings.HasPrefix(r.stderr, "clusterctl: no AWS credentials found") {
					t.Errorf("%s: want one line saying no credentials were found, exit 1:\n%s", args[0], r)
				}
				for _, how := range []string{"--profile", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "aws sso login"} {
					if !strings.Contains(r.stderr, how) {
						t.Errorf("%s: the message does not say %s:\n%s", args[0], how, r)
					}
				}
				if strings.Contains(r.stderr, "SDK") || strings.Contains(r.stderr, "operation error") {
					t.Errorf("%s: the SDK speaks:\n%s", args[0], r)
				}
			}
		})
	}
}
