package e2e

import (
	"strings"
	"testing"
)

// COLUMNS narrows the default table by cutting its readable columns;
// identifiers, -o wide and a pipe without COLUMNS keep every value whole.
func TestColumnsFitTables(t *testing.T) {
	newCluster(t, "web")
	whole := must(t, "list-groups", "-j", "core")
	if !strings.Contains(whole.stdout, "CREATE_COMPLETE") {
		t.Fatalf("list-groups without COLUMNS:\n%s", whole)
	}
	narrow := clusterctlEnv(t, append(env(), "COLUMNS=60"), "list-groups", "-j", "core")
	if narrow.code != 0 || !strings.Contains(narrow.stdout, "CREATE_… ") || !strings.Contains(narrow.stdout, "web ") {
		t.Errorf("list-groups with COLUMNS=60: want STATUS cut, the group whole:\n%s", narrow)
	}
	if len(narrow.stdout) >= len(whole.stdout) {
		t.Errorf("COLUMNS=60 made nothing narrower:\n%s\nwithout:\n%s", narrow.stdout, whole.stdout)
	}
	wide := clusterctlEnv(t, append(env(), "COLUMNS=60"), "list-groups", "-j", "core", "-o", "wide")
	if want := must(t, "list-groups", "-j", "core", "-o", "wide"); wide.stdout != want.stdout {
		t.Errorf("-o wide with COLUMNS=60:\n%s\nwant it whole:\n%s", wide.stdout, want.stdout)
	}
	// Only the table: JSON is whole.
	js := clusterctlEnv(t, append(env(), "COLUMNS=20"), "list-groups", "-j", "core", "-o", "json")
	if !strings.Contains(js.stdout, `"CREATE_COMPLETE"`) {
		t.Errorf("-o json with COLUMNS=20:\n%s", js)
	}
}
