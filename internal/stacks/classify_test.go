package stacks_test

import (
	"strings"
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

func TestAdvice(t *testing.T) {
	group := stacks.Ref{Cluster: "core", Group: "r3-agents"}
	core := stacks.Ref{Cluster: "core"}
	left := []stacks.Resource{{LogicalID: "Bucket", ResourceType: "AWS::S3::Bucket", Status: "DELETE_FAILED"}}
	tests := []struct {
		status string
		ref    stacks.Ref
		left   []stacks.Resource
		want   []string
	}{
		{"ROLLBACK_COMPLETE", group, nil, []string{"`clusterctl remove-group -n r3-agents -j core`", "`clusterctl add-agents -n r3-agents -j core --replace-failed`"}},
		{"ROLLBACK_COMPLETE", core, nil, []string{"`clusterctl delete-core core`", "`clusterctl create-core core`"}},
		{"CREATE_FAILED", group, nil, []string{"--no-rollback", "`clusterctl events core -n r3-agents`", "`clusterctl remove-group -n r3-agents -j core`"}},
		{"REVIEW_IN_PROGRESS", group, nil, []string{"never created", "`clusterctl remove-group -n r3-agents -j core`"}},
		{"ROLLBACK_FAILED", group, left, []string{"left behind: Bucket (AWS::S3::Bucket)", "`clusterctl remove-group -n r3-agents -j core --retain-failed`"}},
		{"DELETE_FAILED", group, left, []string{"left behind: Bucket (AWS::S3::Bucket)", "`clusterctl remove-group -n r3-agents -j core`", "`clusterctl remove-group -n r3-agents -j core --retain-failed`"}},
		{"DELETE_FAILED", core, left, []string{"left behind: Bucket (AWS::S3::Bucket)", "`clusterctl delete-core core --retain-failed`"}},
		{"UPDATE_ROLLBACK_FAILED", group, nil, []string{"`clusterctl update-group -n r3-agents -j core --continue-rollback`"}},
		{"UPDATE_ROLLBACK_FAILED", core, nil, []string{"`aws cloudformation continue-update-rollback --stack-name core`"}},
		{"UPDATE_ROLLBACK_COMPLETE", group, nil, []string{"previous configuration", "`clusterctl update-group -n r3-agents -j core`"}},
		{"UPDATE_ROLLBACK_COMPLETE", core, nil, []string{"previous configuration", "`clusterctl events core`"}},
		{"UPDATE_FAILED", group, nil, []string{"--no-rollback", "rollback-stack --stack-name core-r3-agents"}},
		{"IMPORT_ROLLBACK_COMPLETE", core, nil, []string{"previous configuration"}},
		{"IMPORT_ROLLBACK_FAILED", group, nil, []string{"`clusterctl remove-group -n r3-agents -j core`"}},
		{"UPDATE_IN_PROGRESS", group, nil, []string{"`clusterctl wait core -n r3-agents`"}},
		{"CREATE_IN_PROGRESS", core, nil, []string{"`clusterctl wait core`"}},
	}
	for _, tt := range tests {
		name := "core"
		if tt.ref.Group != "" {
			name = "core-" + tt.ref.Group
		}
		got := stacks.Advice(&stacks.Stack{Name: name, Status: tt.status}, tt.ref, tt.left)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("Advice(%s, %+v) = %q, want it to contain %q", tt.status, tt.ref, got, w)
			}
		}
	}
	// Every failed or stuck status gets advice; healthy ones get none.
	for status, c := range wantClass {
		got := stacks.Advice(&stacks.Stack{Name: "core", Status: status}, core, nil)
		if (got == "") != c.OK() {
			t.Errorf("Advice(%s) = %q", status, got)
		}
	}
}

func TestAdviceFromTags(t *testing.T) {
	s := &stacks.Stack{Name: "prod-c5", Status: "ROLLBACK_COMPLETE", Tags: groupTags("prod", "c5")}
	if got := stacks.RefOf(s); got != (stacks.Ref{Cluster: "prod", Group: "c5"}) {
		t.Errorf("RefOf = %+v", got)
	}
	if got := stacks.Advice(s, stacks.Ref{}, nil); !strings.Contains(got, "clusterctl remove-group -n c5 -j prod") {
		t.Errorf("Advice = %q", got)
	}
	core := &stacks.Stack{Name: "prod", Status: "ROLLBACK_COMPLETE", Tags: coreTags("prod")}
	if got := stacks.Advice(core, stacks.Ref{}, nil); !strings.Contains(got, "clusterctl delete-core prod") {
		t.Errorf("Advice = %q", got)
	}
	untagged := &stacks.Stack{Name: "other", Status: "DELETE_FAILED"}
	if got := stacks.RefOf(untagged); got != (stacks.Ref{Cluster: "other"}) {
		t.Errorf("RefOf(untagged) = %+v", got)
	}
}
