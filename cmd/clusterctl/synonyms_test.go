package main

import (
	"context"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/iostreams"
)

// A command other tools would name is answered with clusterctl's (exit 2,
// one line), and ls with the list commands rather than logs; a typo of a
// real command keeps kong's own suggestion, and every suggested command
// exists.
func TestCommandSynonyms(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"add-group -n web -j core", `clusterctl: unknown command "add-group", did you mean "add-agents"?`},
		{"create-group", `did you mean "add-agents"?`},
		{"delete-group -n web", `did you mean "remove-group"?`},
		{"get-nodes", `did you mean "list-nodes"?`},
		{"ls", `unknown command "ls", did you mean "list-nodes", "list-groups" or "list-clusters"?`},
		{"list-node", `unexpected argument list-node, did you mean "list-nodes"?`},
	} {
		ios, _, _, errOut := iostreams.Test()
		if code := run(context.Background(), strings.Fields(tt.args), ios); code != 2 || !strings.Contains(errOut.String(), tt.want) ||
			strings.Count(strings.TrimSpace(errOut.String()), "\n") != 0 || strings.Contains(errOut.String(), "logs") {
			t.Errorf("%s: exit %d, %q; want exit 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
	known := map[string]bool{}
	for _, cmds := range synonyms {
		for _, c := range cmds {
			known[c] = true
		}
	}
	for c := range known {
		ios, _, out, errOut := iostreams.Test()
		if code := run(context.Background(), []string{"help", c}, ios); code != 0 || !strings.Contains(out.String(), "Usage: clusterctl "+c) {
			t.Errorf("suggested command %s: exit %d, %s%s", c, code, out, errOut)
		}
	}
}
