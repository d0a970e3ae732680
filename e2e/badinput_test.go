package e2e

import (
	"strings"
	"testing"
)

// Bad input gets one clear line and exit 2, and creates nothing.
func TestBadInput(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"cluster name", []string{"create-core", "9core"}, "invalid cluster name"},
		{"long cluster name", []string{"create-core", "a" + strings.Repeat("b", 128)}, "over the 128 allowed"},
		{"ssh cidr", []string{"create-core", "core", "--ssh-cidr", "10.0.0.1/8"}, "host bits set"},
		{"ssh cidr garbage", []string{"create-core", "core", "--ssh-cidr", "everywhere"}, "invalid CIDR"},
		{"ssh from anywhere", []string{"create-core", "core", "--ssh-cidr", "0.0.0.0/0"}, "--ssh-cidr: SSH from anywhere (0.0.0.0/0) is refused"},
		{"ssh from anywhere, IPv6", []string{"create-core", "core", "--ssh-cidr", "::/0"}, "SSH from anywhere (::/0) is refused"},
		{"group ssh from anywhere", []string{"add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "--ssh-cidr", "0.0.0.0/0"}, "--allow-ssh-from-anywhere"},
		{"render ssh from anywhere", []string{"render", "group", "-n", "g", "-t", "r3.large", "--ssh-cidr", "0.0.0.0/0"}, "SSH from anywhere"},
		{"core type", []string{"create-core", "core", "--instance-type", "large"}, "invalid instance type"},
		{"image", []string{"create-core", "core", "--image-id", "ubuntu"}, "invalid image id"},
		{"output format", []string{"list-nodes", "-o", "xml"}, "invalid output format"},
		{"jq", []string{"list-nodes", "--query", ".[] |"}, "invalid --query"},
		{"group name", []string{"add-agents", "-n", "r3_agents", "-t", "r3.large", "-j", "core"}, "invalid group name"},
		{"group type", []string{"add-agents", "-n", "g", "-t", "r3large", "-j", "core"}, "invalid instance type"},
		{"count above max", []string{"add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "-c", "5", "--max", "3"}, "count 5 is above max 3"},
		{"min above count", []string{"add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "-c", "1", "--min", "2"}, "min 2 is above count 1"},
		{"negative count", []string{"add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "--count=-1"}, "negative"},
		{"huge count", []string{"add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "-c", "99999999999", "--dry-run"}, "-c/--count: invalid capacity: count 99999999999 is above 10000"},
		{"huge max", []string{"update-group", "-n", "g", "-j", "core", "--max", "20000", "--dry-run"}, "--max: invalid capacity: max 20000 is above 10000"},
		{"label injection", []string{"add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "-m", "role=$(reboot)"}, "invalid label value"},
		{"label quotes", []string{"add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "-m", "role='x'"}, "invalid label value"},
		{"label shape", []string{"add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "-m", "role"}, "expected key=value"},
		{"publish sshd", []string{"add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "--publish", "2222:22"}, "node port 22 is the nodes' sshd"},
		{"publish port 22", []string{"add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "--publish", "80,22"}, "node port 22 is the nodes' sshd"},
		{"publish engine API", []string{"add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "--publish", "443:2376/tls"}, "node port 2376 is the engine's API"},
		{"volume", []string{"add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "--volume-size", "2"}, "invalid volume size"},
		{"missing flag", []string{"add-agents", "-n", "g", "-j", "core"}, "missing flags"},
		{"unknown command", []string{"launch"}, "unexpected argument"},
		{"update type", []string{"update-group", "-n", "g", "-j", "core", "-t", "big"}, "invalid instance type"},
		{"update labels", []string{"update-group", "-n", "g", "-j", "core", "-m", "a b=c"}, "invalid label key"},
		{"render labels", []string{"render", "group", "-n", "g", "-t", "r3.large", "-m", "x=`id`"}, "invalid label value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := clusterctl(t, tt.args...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2\n%s", r.code, r)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if !strings.Contains(lines[0], tt.want) || !strings.HasPrefix(lines[0], "clusterctl: ") {
				t.Errorf("stderr first line %q does not contain %q", lines[0], tt.want)
			}
			if strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "panic") {
				t.Errorf("a panic reached the user:\n%s", r)
			}
		})
	}
	if names := c.stackNames(t); len(names) != 0 {
		t.Errorf("bad input created stacks: %v", names)
	}
}

// Refusals that depend on what exists: exit 1, nothing changed.
func TestRefusals(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	r := clusterctl(t, "add-agents", "-n", "g", "-t", "r3.large", "-j", "nosuch", "-q")
	if r.code != 1 || !strings.Contains(r.stderr, `cluster "nosuch" not found`) {
		t.Errorf("add-agents to an unknown cluster:\n%s", r)
	}
	must(t, "create-core", "core", "-q")
	r = clusterctl(t, "create-core", "core", "-q")
	if r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("second create-core:\n%s", r)
	}
	must(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-q")
	r = clusterctl(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-q")
	if r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("duplicate group:\n%s", r)
	}
	// An unknown group is refused (1) before any question is asked.
	r = clusterctl(t, "remove-group", "-n", "nosuch", "-j", "core")
	if r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("remove of an unknown group:\n%s", r)
	}
	r = clusterctl(t, "update-group", "-n", "nosuch", "-j", "core", "-c", "2", "-q")
	if r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("update of an unknown group:\n%s", r)
	}
	// Capacity checked against the merged values: still exit 2.
	r = clusterctl(t, "update-group", "-n", "g", "-j", "core", "--min", "5", "-q")
	if r.code != 2 || !strings.Contains(r.stderr, "min 5 is above count 1") {
		t.Errorf("update with min above count:\n%s", r)
	}
	// Destructive commands need --yes without a terminal.
	r = clusterctl(t, "remove-group", "-n", "g", "-j", "core")
	if r.code != 2 || !strings.Contains(r.stderr, "--yes") {
		t.Errorf("remove-group without --yes:\n%s", r)
	}
	if names := c.stackNames(t); !sameSet(names, []string{"core", "core-g"}) {
		t.Errorf("stacks = %v", names)
	}
	// Render needs no AWS at all.
	r = clusterctl(t, "render", "group", "-n", "g", "-t", "m7g.large", "--endpoint-url", "http://127.0.0.1:1")
	if r.code != 0 || !strings.Contains(r.stdout, "AWSTemplateFormatVersion") {
		t.Errorf("render group:\n%s", r)
	}
	must(t, "delete-core", "core", "--cascade", "--yes", "-q")
}
