package e2e

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// CONTRIBUTING.md's setup names everything CI installs or requires, so a
// contributor who follows it can run `make test`: its apt-get and pip
// lines are compared with what .ci/run installs and what it checks is
// there. The README's quick start, for users, names what the demo needs
// and sends to that setup for the tests.
func TestSetupInstallsWhatCIDoes(t *testing.T) {
	parallel(t)
	contributing, err := os.ReadFile("../CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	setup := section(string(contributing), "## Setup")
	if setup == "" {
		t.Fatal("CONTRIBUTING.md has no Setup section")
	}
	ciApt, ciPip := ciPackages(string(ci))
	docApt := words(regexp.MustCompile("`apt-get install ([^`]+)`"), setup)
	docPip := words(regexp.MustCompile("`pip install ([^`]+)`"), setup)
	for _, c := range []struct {
		what        string
		doc, ciList []string
	}{
		{"Debian packages", docApt, ciApt},
		{"Python packages", docPip, ciPip},
	} {
		if len(c.ciList) == 0 {
			t.Fatalf("found no %s in .ci/run", c.what)
		}
		if !slices.Equal(c.doc, c.ciList) {
			t.Errorf("%s: CONTRIBUTING.md's setup installs %v, .ci/run %v", c.what, c.doc, c.ciList)
		}
	}

	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	quick := section(string(readme), "## Quick start")
	for _, want := range []string{"`pip install 'moto[server]'`", "make demo", "make test", "](CONTRIBUTING.md#setup)"} {
		if !strings.Contains(quick, want) {
			t.Errorf("the README's quick start does not say %s", want)
		}
	}
}

// section returns the text of a markdown section up to the next heading
// of the same or a higher level.
func section(doc, heading string) string {
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// ciPackages returns the Debian packages .ci/run installs (the tools of
// its `for tool in ...` loop that installs "$tool", and every literal
// pkgs+=(NAME)) and the Python packages its message asks for, sorted.
func ciPackages(script string) (apt, pip []string) {
	loop := regexp.MustCompile(`(?m)^for tool in ([^;]+); do\n\s*need "\$tool" \|\| pkgs\+=\("\$tool"\)`)
	for _, m := range loop.FindAllStringSubmatch(script, -1) {
		apt = append(apt, strings.Fields(m[1])...)
	}
	for _, m := range regexp.MustCompile(`pkgs\+=\(([a-z0-9.+-]+)\)`).FindAllStringSubmatch(script, -1) {
		apt = append(apt, m[1])
	}
	pip = words(regexp.MustCompile(`pip install ([^)"]+)\)`), script)
	slices.Sort(apt)
	return slices.Compact(apt), pip
}

// words returns the words of every match of re's first group, unquoted,
// sorted and without repeats.
func words(re *regexp.Regexp, text string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		for _, w := range strings.Fields(m[1]) {
			out = append(out, strings.Trim(w, `'"`))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
