package e2e

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README's quick start names everything CI installs or requires, so a
// reader who follows it can run `make test`: its apt-get and pip lines are
// compared with what .ci/run installs and what it checks is there.
func TestQuickStartInstallsWhatCIDoes(t *testing.T) {
	parallel(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	quick := section(string(readme), "## Quick start")
	if quick == "" {
		t.Fatal("README.md has no Quick start section")
	}
	ciApt, ciPip := ciPackages(string(ci))
	readmeApt := words(regexp.MustCompile("`apt-get install ([^`]+)`"), quick)
	readmePip := words(regexp.MustCompile("`pip install ([^`]+)`"), quick)
	for _, c := range []struct {
		what           string
		readme, ciList []string
	}{
		{"Debian packages", readmeApt, ciApt},
		{"Python packages", readmePip, ciPip},
	} {
		if len(c.ciList) == 0 {
			t.Fatalf("found no %s in .ci/run", c.what)
		}
		if !slices.Equal(c.readme, c.ciList) {
			t.Errorf("%s: the README's quick start installs %v, .ci/run %v", c.what, c.readme, c.ciList)
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
