package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/clusterctl/clusterctl/internal/iostreams"
)

// Every command's help shows its own flags before the global ones and ends
// with an Examples section; each example parses as a run of that very
// command and is an example of README.md, where the end-to-end tests run
// it. A command added without an example fails here.
func TestEveryCommandHelpHasOwnFlagsFirstAndExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// Subjects documented apart (docs/*.md) have their examples there,
	// run by the end-to-end tests too.
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		readme = append(append(readme, '\n'), b...)
	}
	seen := 0
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, c := range n.Children {
			walk(c)
		}
		if n.Hidden {
			return
		}
		seen++
		path := commandPath(n)
		t.Run("help "+path, func(t *testing.T) {
			ios, _, out, errOut := iostreams.Test()
			if code := run(context.Background(), append([]string{"help"}, strings.Fields(path)...), ios); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			help := out.String()
			global := strings.Index(help, "\nGlobal flags:\n")
			examplesAt := strings.Index(help, "\nExamples:\n")
			if global < 0 || examplesAt < global {
				t.Fatalf("want Global flags: then Examples:, got:\n%s", help)
			}
			for _, f := range n.Flags {
				if f.Hidden || f.Group != nil {
					continue
				}
				at := strings.Index(help, "--"+f.Name)
				if f.Tag.Negatable != "" {
					at = strings.Index(help, "--[no-]"+f.Name) // kong's form of a negatable flag
				}
				if at < 0 || at > global {
					t.Errorf("--%s is not among the own flags, before the global ones:\n%s", f.Name, help)
				}
			}
			lines := examples[path]
			if len(lines) == 0 {
				t.Fatalf("no examples for %q: add a line to examples (help.go), an example of README.md", path)
			}
			for _, ex := range lines {
				if !strings.Contains(help, "  "+ex+"\n") {
					t.Errorf("help does not show %q", ex)
				}
				if !readmeHas(string(readme), ex) {
					t.Errorf("%q is not an example of README.md (where it is run)", ex)
				}
				words := exampleWords(ex)
				kctx, err := testHelpParser(t).Parse(words[1:])
				if err != nil {
					t.Errorf("%q does not parse: %v", ex, err)
					continue
				}
				if got := commandPath(kctx.Selected()); got != path && path != "" && !strings.HasPrefix(got, path+" ") { // a command's subcommand (render core; secrets, whose default is list)
					t.Errorf("%q runs %q, not %q", ex, got, path)
				}
			}
		})
	}
	walk(testHelpParser(t).Model.Node)
	if seen < 20 {
		t.Fatalf("only %d commands walked", seen)
	}
}

func testHelpParser(t *testing.T) *kong.Kong {
	t.Helper()
	var cli CLI
	p, err := kong.New(&cli, append([]kong.Option{kong.Name("clusterctl"), kong.Exit(func(int) {})}, helpOptions()...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readmeHas reports whether README.md has the command of example ex (its
// comment aside) at the start of a line.
func readmeHas(readme, ex string) bool {
	cmd := strings.TrimSpace(stripComment(ex))
	for _, l := range strings.Split(readme, "\n") {
		if strings.TrimSpace(stripComment(strings.TrimSpace(l))) == cmd {
			return true
		}
	}
	return false
}

func stripComment(s string) string {
	if i := strings.Index(s, "  #"); i >= 0 {
		return s[:i]
	}
	return s
}

var substitution = regexp.MustCompile(`"\$\([^)]*\)"`)

// exampleWords splits an example as bash would for what clusterctl sees:
// the comment and redirections or pipes dropped, a command substitution
// taken as an instance id, quotes removed.
func exampleWords(ex string) []string {
	s := substitution.ReplaceAllString(stripComment(ex), "i-0123456789abcdef0")
	var words []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if i := slices.IndexFunc(words, func(w string) bool { return w == ">" || w == "|" || w == "<" }); i >= 0 {
		words = words[:i]
	}
	return words
}
