package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The confirmation prompt on a real terminal: Ctrl-C ends it at once (exit
// 130, nothing deleted), end of input (Ctrl-D) is "not confirmed" on a line
// of its own (exit 1), and "y" goes ahead.
func TestConfirmationPrompt(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	must(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-q")
	run := func(args ...string) *terminal {
		t.Helper()
		term := startTerminal(t, envOf(t), binary, args...)
		term.expect("[y/N]: ")
		return term
	}

	for _, args := range [][]string{
		{"remove-group", "-n", "g", "-j", "core", "-q"},
		{"delete-core", "core", "--cascade", "-q"},
	} {
		term := run(args...)
		term.typeText("\x03") // Ctrl-C: the terminal sends SIGINT
		if code := term.exit(); code != 130 {
			t.Errorf("%s, Ctrl-C at the prompt: exit %d, want 130\n%s", args[0], code, term.screen())
		}
		if !strings.Contains(term.screen(), "\r\nclusterctl: not confirmed: interrupted\r\n") {
			t.Errorf("%s, Ctrl-C: the message is not on a line of its own:\n%q", args[0], term.screen())
		}
	}

	term := run("remove-group", "-n", "g", "-j", "core", "-q")
	term.typeText("\x04") // Ctrl-D: end of input
	if code := term.exit(); code != 1 {
		t.Errorf("Ctrl-D at the prompt: exit %d, want 1\n%s", code, term.screen())
	}
	if !strings.Contains(term.screen(), "[y/N]: \r\nclusterctl: not confirmed\r\n") {
		t.Errorf("end of input: \"not confirmed\" is not on a line of its own:\n%q", term.screen())
	}
	if names := c.stackNames(t); !sameSet(names, []string{"core", "core-g"}) {
		t.Fatalf("a refused prompt changed the stacks: %v", names)
	}

	term = run("remove-group", "-n", "g", "-j", "core", "-q")
	term.typeText("y\n")
	if code := term.exit(); code != 0 {
		t.Errorf("answer y: exit %d\n%s", code, term.screen())
	}
	if names := c.stackNames(t); !slices.Equal(names, []string{"core"}) {
		t.Errorf("after answering y, stacks = %v", names)
	}
}

// A plan that replaces nodes is applied only once confirmed, as
// update-core's: asked on a terminal (the plan shown first), refused
// without --yes off one (exit 2, nothing changed); a plan that replaces
// none goes ahead without asking.
func TestReplacingNodesAsks(t *testing.T) {
	parallel(t)
	c, _ := newCluster(t, "g")
	typeOf := func() string {
		t.Helper()
		return deployedStack(t, c, "core-g").params["InstanceType"]
	}
	file := filepath.Join(t.TempDir(), "core.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: clusterctl/v1\nkind: Cluster\nname: core\ngroups:\n  - name: g\n    instanceType: t3.large\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"update-group", "-n", "g", "-j", "core", "-t", "t3.medium", "-q"},
		{"apply", "-f", file, "-q"},
	} {
		r := clusterctl(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "replace 1 node of") || !strings.Contains(r.stderr, "--yes") {
			t.Errorf("%s off a terminal without --yes: want exit 2 naming --yes:\n%s", args[0], r)
		}
		if typ := typeOf(); typ != "t3.small" {
			t.Fatalf("%s without --yes changed the group to %s", args[0], typ)
		}
		term := startTerminal(t, envOf(t), binary, args...)
		term.expect("[y/N]: ")
		if !strings.Contains(term.screen(), "1 node will be replaced") {
			t.Errorf("%s: the plan is not shown before the question:\n%s", args[0], term.screen())
		}
		term.typeText("n\n")
		if code := term.exit(); code != 1 || !strings.Contains(term.screen(), "not confirmed") {
			t.Errorf("%s, answer n: exit %d\n%s", args[0], code, term.screen())
		}
		if typ := typeOf(); typ != "t3.small" {
			t.Fatalf("%s answered n changed the group to %s", args[0], typ)
		}
	}
	term := startTerminal(t, envOf(t), binary, "update-group", "-n", "g", "-j", "core", "-t", "t3.medium", "-q", "-o", "json")
	term.expect("[y/N]: ")
	term.typeText("y\n")
	if code := term.exit(); code != 0 || typeOf() != "t3.medium" {
		t.Errorf("answer y: exit %d, type %s\n%s", code, typeOf(), term.screen())
	}
	must(t, "apply", "-f", file, "-q", "--yes")
	if typ := typeOf(); typ != "t3.large" {
		t.Errorf("apply --yes: type %s", typ)
	}
	// Nothing replaced, nothing asked.
	if r := must(t, "update-group", "-n", "g", "-j", "core", "-c", "2", "-q"); strings.Contains(r.stderr, "--yes") {
		t.Errorf("a count change asks:\n%s", r)
	}
}

// A group that loses nodes asks first, in update-group and in apply
// alike (exit 2 naming --yes off a terminal, nothing changed); turning
// autoscaling on plans no count change (the group keeps its capacity,
// as its stack then sets none) and asks nothing.
func TestShrinkingAsks(t *testing.T) {
	parallel(t)
	c, _ := newCluster(t)
	must(t, "add-agents", "-n", "web", "-t", "t3.small", "-j", "core", "-c", "2", "-q")
	desired := func() int32 {
		t.Helper()
		return *groupASG(t, c, "core", "web").DesiredCapacity
	}
	file := filepath.Join(t.TempDir(), "core.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: clusterctl/v1\nkind: Cluster\nname: core\ngroups:\n  - name: web\n    instanceType: t3.small\n    count: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"update-group", "-n", "web", "-j", "core", "-c", "1", "-q"},
		{"apply", "-f", file, "-q"},
	} {
		r := clusterctl(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, `refusing to terminate 1 node of group "web" of cluster "core" (2 → 1) without confirmation: pass --yes`) {
			t.Errorf("%s shrinking off a terminal without --yes:\n%s", args[0], r)
		}
		if d := desired(); d != 2 {
			t.Fatalf("%s without --yes set the capacity to %d", args[0], d)
		}
	}

	// The plan counts the nodes the question names.
	if r := must(t, "update-group", "-n", "web", "-j", "core", "-c", "1", "--dry-run"); !strings.Contains(r.stdout, "1 node will be terminated") || strings.Contains(r.stdout, "0 nodes will be replaced") {
		t.Errorf("the plan of 2 → 1 does not say a node is terminated:\n%s", r)
	}
	r := must(t, "update-group", "-n", "web", "-j", "core", "--autoscale", "--dry-run", "-q")
	if strings.Contains(r.stdout, "count") || !strings.Contains(r.stdout, "The group keeps its 2 nodes") {
		t.Errorf("turning autoscaling on plans a count change:\n%s", r.stdout)
	}
	if r := must(t, "update-group", "-n", "web", "-j", "core", "--autoscale", "-q"); strings.Contains(r.stderr, "--yes") {
		t.Errorf("turning autoscaling on asks:\n%s", r)
	}
}
