package main

import (
	"context"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/iostreams"
)

// Durations and times typed wrong are told in clusterctl's words: no
// "time: missing unit" from Go's parser, no Go reference date as the
// example.
func TestDurationAndTimeMessages(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	for _, tt := range []struct{ args, want string }{
		{"--timeout 5 list-nodes", `clusterctl: --timeout: invalid duration "5": expected e.g. 10m, 90s or 1h30m`},
		{"list-nodes --timeout=abc", `--timeout: invalid duration "abc"`},
		{"logs -j core --since 5", `invalid --since "5": expected a duration ago (30s, 10m, 2h) or an RFC 3339 time (e.g. 2026-11-28T09:30:00Z)`},
	} {
		ios, _, _, errOut := iostreams.Test()
		code := run(context.Background(), strings.Fields(tt.args), ios)
		msg := errOut.String()
		if code != 2 || !strings.Contains(msg, tt.want) || strings.Contains(msg, "time: ") || strings.Contains(msg, "2006-01-02") {
			t.Errorf("%s: exit %d, %q; want exit 2 and %q", tt.args, code, msg, tt.want)
		}
	}
}
