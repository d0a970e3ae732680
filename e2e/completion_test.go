package e2e

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// shellEnv runs shells with the binary under test first on PATH, a home of
// their own (no rc files) and the moto endpoint. Reading the names is given
// 20 s, not 2, so that a loaded machine's slow answer still completes.
func shellEnv(t *testing.T) []string {
	t.Helper()
	return append(envOf(t), "PATH="+filepath.Dir(binary)+":"+pathEnv(), "HOME="+t.TempDir(), "PS1=$ ", "PROMPT=$ ", "CLUSTERCTL_COMPLETION_TIMEOUT=20s")
}

func pathEnv() string {
	for _, kv := range env() {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			return v
		}
	}
	return "/usr/bin:/bin"
}

func needShell(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is needed to test its completion: apt-get install %s", name, name)
	}
}

// The completion scripts load in bash and zsh, and pressing Tab there
// completes commands, and cluster and group names read from the account.
func TestCompletionInBashAndZsh(t *testing.T) {
	parallel(t)
	resetMoto(t)
	must(t, "create-core", "core", "-q")
	must(t, "add-agents", "-n", "r3-agents", "-t", "t3.small", "-j", "core", "-q")
	shells := map[string][]string{"bash": {"--norc", "--noprofile", "-i"}, "zsh": {"-f", "-i"}}
	for _, sh := range []string{"bash", "zsh"} {
		t.Run(sh, func(t *testing.T) {
			needShell(t, sh)
			term := startTerminal(t, shellEnv(t), sh, shells[sh]...)
			// Each line is typed at a prompt, as an operator does: keys
			// typed ahead reach the terminal's echo before the shell.
			term.expect("$ ")
			// The quotes keep the echo of the line from reading as its
			// output.
			term.typeText("source <(clusterctl completion " + sh + ") && echo LOAD''ED\n")
			term.expect("LOADED\r\n")
			term.expect("$ ")
			// One match: the shell completes the word in place (none of
			// the words expected below is typed).
			term.typeText("clusterctl list-n\t")
			term.expect("list-nodes ")
			term.typeText("-j \t")
			term.expect("core ")
			term.typeText("-n r3\t")
			term.expect("r3-agents ")
			if sh == "zsh" {
				// zsh lists the choices with what each is.
				term.typeText("\x15clusterctl list-\t\t")
				term.expect("-- List the nodes of a cluster")
			}
			// Ctrl-U drops the line; the shell then ends.
			term.typeText("\x15exit\n")
			term.exit()
		})
	}
}

// fish loads its script, and `complete -C` shows what Tab would offer.
func TestCompletionInFish(t *testing.T) {
	parallel(t)
	needShell(t, "fish")
	resetMoto(t)
	must(t, "create-core", "core", "-q")
	must(t, "add-agents", "-n", "r3-agents", "-t", "t3.small", "-j", "core", "-q")
	script := `clusterctl completion fish | source
complete -C "clusterctl list-n"
echo SEP
complete -C "clusterctl describe "
echo SEP
complete -C "clusterctl list-nodes -j core -n "`
	cmd := exec.Command("fish", "--no-config", "-c", script)
	cmd.Env = shellEnv(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, out)
	}
	parts := strings.Split(string(out), "SEP\n")
	if len(parts) != 3 {
		t.Fatalf("fish output:\n%s", out)
	}
	for i, want := range [][]string{{"list-nodes"}, {"core"}, {"control", "r3-agents"}} {
		if got := strings.Fields(parts[i]); !slices.Equal(got, want) {
			t.Errorf("completion %d = %q, want %q", i, got, want)
		}
	}
}

// Without a reachable endpoint, name completion offers nothing and says
// nothing: commands and flags still complete.
func TestCompletionWithoutAWS(t *testing.T) {
	parallel(t)
	for _, tt := range []struct{ line, want string }{
		{"clusterctl describe --endpoint-url http://127.0.0.1:1 ", ""},
		{"clusterctl list-nodes --endpoint-url http://127.0.0.1:1 -n ", "control\n"},
		{"clusterctl --endpoint-url http://127.0.0.1:1 list-g", "list-groups\n"},
	} {
		cmd := exec.Command(binary)
		cmd.Env = append(envOf(t), "COMP_LINE="+tt.line)
		if r := runCommand(t, cmd); r.code != 0 || r.stdout != tt.want || r.stderr != "" {
			t.Errorf("%q: want exit 0, %q and nothing on stderr; got %s", tt.line, tt.want, r)
		}
	}
}
