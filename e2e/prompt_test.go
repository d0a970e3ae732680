package e2e

import (
	"slices"
	"strings"
	"testing"
)

// The confirmation prompt on a real terminal: Ctrl-C ends it at once (exit
// 130, nothing deleted), end of input (Ctrl-D) is "not confirmed" on a line
// of its own (exit 1), and "y" goes ahead.
func TestConfirmationPrompt(t *testing.T) {
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	must(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-q")
	run := func(args ...string) *terminal {
		t.Helper()
		term := startTerminal(t, env(), binary, args...)
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
