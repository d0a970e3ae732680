package render

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// lintMatch is one finding of `cfn-lint --format json`.
type lintMatch struct {
	Level    string
	Message  string
	Filename string
	Rule     struct{ Id string }
	Location struct {
		Start struct{ LineNumber int }
	}
}

// TestCfnLint lints every rendered variant. A missing cfn-lint fails the
// test: the templates are only known good once the linter has read them.
func TestCfnLint(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, v := range variants() {
		r, err := v.render()
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		f := filepath.Join(dir, v.name+".json")
		if err := os.WriteFile(f, r.Template, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	lint(t, files)
}

// lint runs cfn-lint on files: its errors fail the test, the rest is
// logged. A missing cfn-lint fails the test.
func lint(t *testing.T, files []string) {
	t.Helper()
	bin, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Fatal("cfn-lint not found: pip install cfn-lint")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--format", "json", "--"}, files...)...)
	out, runErr := cmd.Output()
	var matches []lintMatch
	if err := json.Unmarshal(out, &matches); err != nil {
		stderr := ""
		if ee, ok := runErr.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("cfn-lint: %v: unreadable output %q %s", runErr, out, stderr)
	}
	for _, m := range matches {
		msg := fmt.Sprintf("%s:%d: %s %s", filepath.Base(m.Filename), m.Location.Start.LineNumber, m.Rule.Id, m.Message)
		if m.Level == "Error" {
			t.Error(msg)
		} else {
			t.Log(m.Level + ": " + msg)
		}
	}
	if runErr != nil && len(matches) == 0 {
		t.Fatalf("cfn-lint failed without findings: %v", runErr)
	}
}
