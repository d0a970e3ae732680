package cluster

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/iostreams"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

func TestUsable(t *testing.T) {
	for status, ok := range map[string]bool{
		"CREATE_COMPLETE": true, "UPDATE_COMPLETE": true, "UPDATE_ROLLBACK_COMPLETE": true,
		"ROLLBACK_COMPLETE": false, "CREATE_FAILED": false, "UPDATE_ROLLBACK_FAILED": false, "DELETE_FAILED": false,
		"UPDATE_IN_PROGRESS": false, "CREATE_IN_PROGRESS": false,
	} {
		st := &stacks.Stack{Name: "core-g", Status: status, Tags: map[string]string{names.TagCluster: "core", names.TagRole: names.RoleAgents, names.TagGroup: "g"}}
		err := usable(st, "group")
		if (err == nil) != ok {
			t.Errorf("%s: usable = %v, want ok=%v", status, err, ok)
		}
		if err != nil && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), status) || !strings.Contains(err.Error(), "clusterctl ")) {
			t.Errorf("%s: error %q should name the status and a command", status, err)
		}
	}
}

func TestHealth(t *testing.T) {
	tests := []struct {
		status string
		joined bool
		want   string
	}{
		{"CREATE_COMPLETE", true, "healthy"},
		{"UPDATE_COMPLETE", false, "stale"},
		{"UPDATE_IN_PROGRESS", true, "busy"},
		{"UPDATE_ROLLBACK_COMPLETE", true, "degraded"},
		{"ROLLBACK_COMPLETE", true, "dead"},
		{"DELETE_FAILED", true, "stuck"},
	}
	for _, tt := range tests {
		if got := Health(tt.status, tt.joined); got != tt.want {
			t.Errorf("Health(%s, %v) = %s, want %s", tt.status, tt.joined, got, tt.want)
		}
	}
}

func TestConfirm(t *testing.T) {
	ios, in, _, errOut := iostreams.Test()
	s := &Clients{IO: ios}
	if err := s.run().say.confirm(t.Context(), false, "delete everything"); errs.ExitCode(err) != errs.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("without a terminal: %v", err)
	}
	if err := s.run().say.confirm(t.Context(), true, "x"); err != nil {
		t.Errorf("--yes: %v", err)
	}
	ios.InTTY = true
	in.WriteString("n\n")
	if err := s.run().say.confirm(t.Context(), false, "x"); !errors.Is(err, ErrRefused) {
		t.Errorf("answer no: %v", err)
	}
	in.WriteString("yes\n")
	if err := s.run().say.confirm(t.Context(), false, "x"); err != nil {
		t.Errorf("answer yes: %v", err)
	}
	// End of input: refused, and the prompt's line is ended so that the
	// message starts on its own.
	errOut.Reset()
	if err := s.run().say.confirm(t.Context(), false, "x"); !errors.Is(err, ErrRefused) || err.Error() != "not confirmed" {
		t.Errorf("end of input: %v", err)
	}
	if errOut.String() != "Really x? [y/N]: \n" {
		t.Errorf("prompt at end of input = %q", errOut.String())
	}
}

// Ctrl-C (a cancelled context) ends the prompt at once, without waiting
// for a line that never comes, and exits as interrupted.
func TestConfirmInterrupted(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	r, w := io.Pipe() // nothing is ever typed
	defer w.Close()
	ios.In, ios.InTTY = r, true
	s := &Clients{IO: ios}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := s.run().say.confirm(ctx, false, "x")
	if !errors.Is(err, context.Canceled) || errs.ExitCode(err) != errs.ExitInterrupted || !strings.Contains(err.Error(), "not confirmed") {
		t.Errorf("interrupted prompt: %v (exit %d)", err, errs.ExitCode(err))
	}
	if !strings.HasSuffix(errOut.String(), "[y/N]: \n") {
		t.Errorf("prompt line not ended: %q", errOut.String())
	}
}
