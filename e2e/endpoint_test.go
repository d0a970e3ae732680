package e2e

import (
	"net"
	"strings"
	"testing"
)

// A dead endpoint fails at once with one line naming it, after a bounded
// number of connection attempts (throttling and 5xx keep the full retry
// policy: TestLifecycleUnderFaults).
func TestDeadEndpoint(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()

	r := clusterctlAt(t, dead, "list-nodes", "-v")
	if r.code != 1 {
		t.Errorf("exit %d, want 1\n%s", r.code, r)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	want := "clusterctl: cannot reach AWS endpoint " + dead + ": connection refused (EC2.DescribeInstances, 3 attempts)"
	if last := lines[len(lines)-1]; last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
	if !strings.Contains(r.stderr, "aws calls: 1 (EC2.DescribeInstances=1)") {
		t.Errorf("call log:\n%s", r.stderr)
	}

	// Without -v: exactly one line.
	r = clusterctlAt(t, dead, "list-groups")
	if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "clusterctl: cannot reach AWS endpoint "+dead+": connection refused") {
		t.Errorf("list-groups on a dead endpoint:\n%s", r)
	}

	// A host name that does not resolve (.invalid never does).
	r = clusterctlAt(t, "http://clusterctl-test.invalid", "list-nodes")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "clusterctl: cannot reach AWS endpoint http://clusterctl-test.invalid: ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("list-nodes on an unknown host:\n%s", r)
	}
}
