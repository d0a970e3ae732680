package e2e

import (
	"strings"
	"testing"
)

// wait with nothing in progress says so and what each stack is, not the
// result "after 0s" of an operation that never was; -o json keeps the
// result object.
func TestWaitWithNothingInProgress(t *testing.T) {
	parallel(t)
	newCluster(t, "a")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"wait", "core"}, "Nothing in progress on cluster core: core is CREATE_COMPLETE\n"},
		{[]string{"wait", "core", "-n", "a"}, "Nothing in progress on group a of cluster core: core-a is CREATE_COMPLETE\n"},
	} {
		if r := must(t, tt.args...); r.stdout != tt.want {
			t.Errorf("%s: stdout %q, want %q", strings.Join(tt.args, " "), r.stdout, tt.want)
		}
	}
	if r := must(t, "wait", "core", "-n", "a", "-o", "json", "--query", ".status"); strings.TrimSpace(r.stdout) != `"CREATE_COMPLETE"` {
		t.Errorf("wait -o json: %s", r)
	}
}
