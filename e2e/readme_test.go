package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readmeExample is one command of README.md: a line of a fenced block that
// starts with `clusterctl `, or a setup command from a comment
// `<!-- setup: COMMAND -->` before a block.
type readmeExample struct {
	line    int // in README.md
	command string
	exit    int  // from a trailing comment saying "exit N"; 0 otherwise
	realAWS bool // a trailing comment says "needs real AWS"
	setup   bool
}

var (
	exitNote  = regexp.MustCompile(`\bexit (\d+)\b`)
	setupNote = regexp.MustCompile(`^<!--\s*setup:\s*(.+?)\s*-->$`)
)

// readmeExamples extracts the examples of a README in order. See
// docs/design.md, "README examples are executed", for the annotations.
func readmeExamples(path string) ([]readmeExample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []readmeExample
	inFence := false
	var cont strings.Builder // a command continued with a trailing backslash
	contLine := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			if m := setupNote.FindStringSubmatch(text); m != nil {
				out = append(out, readmeExample{line: n, command: m[1], setup: true})
			}
			continue
		}
		if cont.Len() > 0 || strings.HasPrefix(text, "clusterctl ") {
			if cont.Len() == 0 {
				contLine = n
			}
			if body, ok := strings.CutSuffix(text, `\`); ok {
				cont.WriteString(body + " ")
				continue
			}
			cont.WriteString(text)
			out = append(out, example(contLine, cont.String()))
			cont.Reset()
		}
	}
	return out, sc.Err()
}

func example(line int, command string) readmeExample {
	ex := readmeExample{line: line, command: command}
	note := trailingComment(command)
	if m := exitNote.FindStringSubmatch(note); m != nil {
		ex.exit, _ = strconv.Atoi(m[1])
	}
	ex.realAWS = strings.Contains(note, "needs real AWS")
	return ex
}

// trailingComment returns the text after an unquoted " #".
func trailingComment(command string) string {
	var quote rune
	prev := ' '
	for i, r := range command {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (prev == ' ' || prev == '\t'):
			return command[i+1:]
		}
		prev = r
	}
	return ""
}

// The README's examples run, in order, against one moto account, as a
// reader would type them into bash: each exits as documented. An example
// that needs resources only real AWS has must be refused by what it meets
// there (exit 1), never as bad input (exit 2).
func TestReadmeExamples(t *testing.T) {
	parallel(t)
	examples, err := readmeExamples("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// Every command of the CLI has an example (commands from the binary's
	// own completion of an empty command line).
	for _, cmd := range commandsOfCLI(t) {
		found := false
		for _, ex := range examples {
			found = found || strings.HasPrefix(ex.command, "clusterctl "+cmd+" ") || ex.command == "clusterctl "+cmd
		}
		if !found {
			t.Errorf("README.md has no example of clusterctl %s", cmd)
		}
	}
	resetMoto(t)
	dir := t.TempDir()
	// Examples refer to examples/ as a reader in a checkout would.
	if err := os.CopyFS(filepath.Join(dir, "examples"), os.DirFS("../examples")); err != nil {
		t.Fatal(err)
	}
	shellEnv := append(envOf(t), "PATH="+filepath.Dir(binary)+":"+pathEnv(), "HOME="+dir)
	for _, ex := range examples {
		cmd := exec.Command("bash", "-c", ex.command)
		cmd.Dir, cmd.Env = dir, shellEnv
		r := runCommand(t, cmd)
		code := r.code
		want := fmt.Sprintf("exit %d", ex.exit)
		ok := code == ex.exit
		if ex.realAWS {
			want, ok = "exit 1 (it needs real AWS)", code == 1
		}
		t.Logf("README.md:%d: exit %d: %s", ex.line, code, ex.command)
		if !ok {
			// Later examples build on this one: stop here.
			t.Fatalf("README.md:%d: %s\nwant %s, got %s", ex.line, ex.command, want, r)
		}
	}
	if len(examples) < 30 {
		t.Errorf("only %d examples found in README.md: has the format changed?", len(examples))
	}
}

// commandsOfCLI lists the top-level commands, as the binary completes them.
func commandsOfCLI(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command(binary)
	cmd.Env = append(envOf(t), "COMP_LINE=clusterctl ")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing commands: %v", err)
	}
	cmds := strings.Fields(string(out))
	if len(cmds) < 10 {
		t.Fatalf("commands of the CLI: %q", cmds)
	}
	return cmds
}

func TestReadmeExampleAnnotations(t *testing.T) {
	parallel(t)
	for _, tt := range []struct {
		command string
		exit    int
		realAWS bool
	}{
		{"clusterctl list-nodes", 0, false},
		{"clusterctl delete-core core     # refused while groups exist, naming them (exit 1)", 1, false},
		{"clusterctl remove-group -n g -j core   # asks on a terminal; without one: exit 2, pass --yes", 2, false},
		{"clusterctl create-core lab --vpc-id vpc-1   # needs real AWS: that VPC", 0, true},
		{"clusterctl list-nodes --query '.[] | \"# exit 3\"'", 0, false},
		{"clusterctl list-nodes -o json#exit 4", 0, false},
	} {
		ex := example(1, tt.command)
		if ex.exit != tt.exit || ex.realAWS != tt.realAWS {
			t.Errorf("%q: exit %d, real AWS %v; want %d, %v", tt.command, ex.exit, ex.realAWS, tt.exit, tt.realAWS)
		}
	}
}
