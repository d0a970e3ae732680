package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readmeExample is one command of a documentation file: a line of a
// fenced block that starts with `clusterctl `, a line of a fenced block
// opened as "```sh setup" (shown to the reader, run as a prerequisite), or
// a setup command from a comment `<!-- setup: COMMAND -->` before a block.
type readmeExample struct {
	line    int // in its file
	command string
	exit    int  // from a trailing comment saying "exit N"; 0 otherwise
	realAWS bool // a trailing comment says "needs real AWS"
	setup   bool
}

var (
	exitNote  = regexp.MustCompile(`\bexit (\d+)\b`)
	setupNote = regexp.MustCompile(`^<!--\s*setup:\s*(.+?)\s*-->$`)
	setupOpen = regexp.MustCompile("^```(sh|bash) setup$")
)

// readmeExamples extracts the examples of a documentation file in order.
// See docs/design.md, "README examples are executed", for the annotations.
func readmeExamples(path string) ([]readmeExample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []readmeExample
	inFence, inSetup := false, false
	var cont strings.Builder // a command continued with a trailing backslash
	contLine := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "```") {
			inFence = !inFence
			inSetup = inFence && setupOpen.MatchString(text)
			continue
		}
		if !inFence {
			if m := setupNote.FindStringSubmatch(text); m != nil {
				out = append(out, readmeExample{line: n, command: m[1], setup: true})
			}
			continue
		}
		if cont.Len() > 0 || strings.HasPrefix(text, "clusterctl ") || (inSetup && text != "" && !strings.HasPrefix(text, "#")) {
			if cont.Len() == 0 {
				contLine = n
			}
			if body, ok := strings.CutSuffix(text, `\`); ok {
				cont.WriteString(body + " ")
				continue
			}
			cont.WriteString(text)
			if inSetup {
				out = append(out, readmeExample{line: contLine, command: cont.String(), setup: true})
			} else {
				out = append(out, example(contLine, cont.String()))
			}
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

// docFiles lists the files whose examples are run: README.md,
// CONTRIBUTING.md and every docs/*.md, from the repository's root.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(docs)
	files := []string{"../README.md"}
	if _, err := os.Stat("../CONTRIBUTING.md"); err == nil {
		files = append(files, "../CONTRIBUTING.md")
	}
	return append(files, docs...)
}

// The examples of the README and of every documentation file run as a
// reader would type them into bash: file by file, each file's in order
// against a fresh moto account, each exiting as documented. An example
// that needs resources only real AWS has must be refused by what it meets
// there (exit 1), never as bad input (exit 2). A file without examples is
// passed over.
func TestReadmeExamples(t *testing.T) {
	parallel(t)
	examples := map[string][]readmeExample{}
	files := docFiles(t)
	total := 0
	for _, file := range files {
		exs, err := readmeExamples(file)
		if err != nil {
			t.Fatal(err)
		}
		examples[file] = exs
		total += len(exs)
	}
	// Every command of the CLI has an example (commands from the binary's
	// own completion of an empty command line), here or in a document of
	// docs/ whose own test runs its examples (docsRun).
	for _, cmd := range commandsOfCLI(t) {
		found := false
		for _, exs := range examples {
			for _, ex := range exs {
				found = found || strings.HasPrefix(ex.command, "clusterctl "+cmd+" ") || ex.command == "clusterctl "+cmd
			}
		}
		if !found {
			t.Errorf("neither README.md nor docs/ has an example of clusterctl %s", cmd)
		}
	}
	if len(examples["../README.md"]) < 10 {
		t.Errorf("only %d examples found in README.md: has the format changed?", len(examples["../README.md"]))
	}
	if total < 100 {
		t.Errorf("only %d examples found in README.md and docs/: has the format changed?", total)
	}
	for _, file := range files {
		if len(examples[file]) == 0 || slices.Contains(docsRun, file) {
			continue
		}
		name := strings.TrimPrefix(file, "../")
		t.Run(name, func(t *testing.T) { runExamples(t, name, examples[file]) })
	}
}

// runExamples runs one file's examples in order in a fresh account and a
// directory of their own, stopping at the first that does not exit as
// documented: later examples build on it.
func runExamples(t *testing.T, name string, examples []readmeExample) {
	resetMoto(t)
	dir := t.TempDir()
	// Examples refer to examples/ as a reader in a checkout would.
	if err := os.CopyFS(filepath.Join(dir, "examples"), os.DirFS("../examples")); err != nil {
		t.Fatal(err)
	}
	// No AWS_PROFILE at all: the AWS CLI of the setups takes an empty one
	// for a profile named "".
	shellEnv := slices.DeleteFunc(append(envOf(t), "PATH="+filepath.Dir(binary)+":"+pathEnv(), "HOME="+dir), func(v string) bool {
		return strings.HasPrefix(v, "AWS_PROFILE=")
	})
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
		t.Logf("%s:%d: exit %d: %s", name, ex.line, code, ex.command)
		if !ok {
			t.Fatalf("%s:%d: %s\nwant %s, got %s", name, ex.line, ex.command, want, r)
		}
	}
}

// docsRun are the documents of docs/ whose examples a test of their own
// runs, in order (TestDefaultClusterDocExamples): they count as examples
// here but are not run twice.
var docsRun = []string{"../docs/default-cluster.md"}

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

// A block opened as "```sh setup" is shown and run: each of its lines is a
// setup, a continued line one command; other blocks give only their
// clusterctl lines, and a comment line <!-- setup: ... --> is a setup too.
func TestReadmeExampleSetups(t *testing.T) {
	doc := "Text\n\n```sh setup\naws sns create-topic --name pager > /dev/null\n# a comment\naws ssm put-parameter \\\n  --name /p --value v\n```\n\n" +
		"```\nclusterctl list-nodes   # exit 3\naws s3 ls\n```\n\n<!-- setup: mkdir -p x -->\n```sh\nclusterctl version\n```\n"
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readmeExamples(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []readmeExample{
		{line: 4, command: "aws sns create-topic --name pager > /dev/null", setup: true},
		{line: 6, command: "aws ssm put-parameter  --name /p --value v", setup: true}, // the space before the backslash kept,
		{line: 11, command: "clusterctl list-nodes   # exit 3", exit: 3},
		{line: 15, command: "mkdir -p x", setup: true},
		{line: 17, command: "clusterctl version"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("examples:\n%+v\nwant\n%+v", got, want)
	}
}
