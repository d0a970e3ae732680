package stacks_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/clusterctl/clusterctl/internal/stacks"
)

// Every StackStatus of the SDK, with the class it must have.
var wantClass = map[string]stacks.Class{
	"CREATE_IN_PROGRESS":                           stacks.InProgress,
	"CREATE_FAILED":                                stacks.FailedDead,
	"CREATE_COMPLETE":                              stacks.Done,
	"ROLLBACK_IN_PROGRESS":                         stacks.InProgress,
	"ROLLBACK_FAILED":                              stacks.Stuck,
	"ROLLBACK_COMPLETE":                            stacks.FailedDead,
	"DELETE_IN_PROGRESS":                           stacks.InProgress,
	"DELETE_FAILED":                                stacks.Stuck,
	"DELETE_COMPLETE":                              stacks.Done,
	"UPDATE_IN_PROGRESS":                           stacks.InProgress,
	"UPDATE_COMPLETE_CLEANUP_IN_PROGRESS":          stacks.InProgress,
	"UPDATE_COMPLETE":                              stacks.Done,
	"UPDATE_FAILED":                                stacks.FailedUsable,
	"UPDATE_ROLLBACK_IN_PROGRESS":                  stacks.InProgress,
	"UPDATE_ROLLBACK_FAILED":                       stacks.Stuck,
	"UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS": stacks.InProgress,
	"UPDATE_ROLLBACK_COMPLETE":                     stacks.FailedUsable,
	"REVIEW_IN_PROGRESS":                           stacks.FailedDead,
	"IMPORT_IN_PROGRESS":                           stacks.InProgress,
	"IMPORT_COMPLETE":                              stacks.Done,
	"IMPORT_ROLLBACK_IN_PROGRESS":                  stacks.InProgress,
	"IMPORT_ROLLBACK_FAILED":                       stacks.Stuck,
	"IMPORT_ROLLBACK_COMPLETE":                     stacks.FailedUsable,
}

func TestClassifyCoversEverySDKStatus(t *testing.T) {
	for _, s := range types.StackStatus("").Values() {
		want, ok := wantClass[string(s)]
		if !ok {
			t.Errorf("status %s is new in the SDK: decide its class", s)
			continue
		}
		if got := stacks.Classify(string(s)); got != want {
			t.Errorf("Classify(%s) = %v, want %v", s, got, want)
		}
	}
	if n := len(types.StackStatus("").Values()); n != len(wantClass) {
		t.Errorf("SDK has %d statuses, table has %d", n, len(wantClass))
	}
}

func TestClassifyUnknownStatusIsNeverHealthy(t *testing.T) {
	for status, want := range map[string]stacks.Class{
		"FUTURE_IN_PROGRESS": stacks.InProgress,
		"FUTURE_FAILED":      stacks.Stuck,
		"FUTURE_COMPLETE":    stacks.FailedUsable,
		"":                   stacks.FailedUsable,
	} {
		got := stacks.Classify(status)
		if got != want || got.OK() {
			t.Errorf("Classify(%q) = %v (OK=%v), want %v", status, got, got.OK(), want)
		}
	}
}

func TestClassMethods(t *testing.T) {
	tests := []struct {
		c                 stacks.Class
		str               string
		final, failed, ok bool
	}{
		{stacks.Done, "done", true, false, true},
		{stacks.InProgress, "in progress", false, false, false},
		{stacks.FailedDead, "failed (dead)", true, true, false},
		{stacks.FailedUsable, "failed (usable)", true, true, false},
		{stacks.Stuck, "stuck", true, true, false},
		{stacks.Unknown, "unknown", true, false, false},
	}
	for _, tt := range tests {
		if tt.c.String() != tt.str || tt.c.Final() != tt.final || tt.c.Failed() != tt.failed || tt.c.OK() != tt.ok {
			t.Errorf("%v: String=%q Final=%v Failed=%v OK=%v", tt.c, tt.c.String(), tt.c.Final(), tt.c.Failed(), tt.c.OK())
		}
	}
}
