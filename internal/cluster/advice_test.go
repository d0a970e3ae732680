package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/clusterctl/clusterctl/internal/awsx"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

func TestAdvice(t *testing.T) {
	group := Ref{Cluster: "core", Group: "r3-agents"}
	core := Ref{Cluster: "core"}
	left := []stacks.Resource{{LogicalID: "Bucket", ResourceType: "AWS::S3::Bucket", Status: "DELETE_FAILED"}}
	tests := []struct {
		status string
		ref    Ref
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
		{"UPDATE_ROLLBACK_FAILED", core, nil, []string{"`clusterctl update-core core --continue-rollback`"}},
		{"UPDATE_ROLLBACK_COMPLETE", group, nil, []string{"previous configuration", "`clusterctl update-group -n r3-agents -j core`"}},
		{"UPDATE_ROLLBACK_COMPLETE", core, nil, []string{"the core runs its previous configuration", "`clusterctl events core`", "`clusterctl update-core core` again"}},
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
		got := Advice(&stacks.Stack{Name: name, Status: tt.status}, tt.ref, tt.left)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("Advice(%s, %+v) = %q, want it to contain %q", tt.status, tt.ref, got, w)
			}
		}
	}
	// Every failed, stuck or busy status gets advice; healthy ones get none.
	for _, status := range types.StackStatus("").Values() {
		got := Advice(&stacks.Stack{Name: "core", Status: string(status)}, core, nil)
		if (got == "") != stacks.Classify(string(status)).OK() {
			t.Errorf("Advice(%s) = %q", status, got)
		}
	}
}

func TestAdviceFromTags(t *testing.T) {
	s := &stacks.Stack{Name: "prod-c5", Status: "ROLLBACK_COMPLETE", Tags: map[string]string{names.TagCluster: "prod", names.TagRole: names.RoleAgents, names.TagGroup: "c5"}}
	if got := RefOf(s); got != (Ref{Cluster: "prod", Group: "c5"}) {
		t.Errorf("RefOf = %+v", got)
	}
	if got := Advice(s, Ref{}, nil); !strings.Contains(got, "clusterctl remove-group -n c5 -j prod") {
		t.Errorf("Advice = %q", got)
	}
	core := &stacks.Stack{Name: "prod", Status: "ROLLBACK_COMPLETE", Tags: map[string]string{names.TagCluster: "prod", names.TagRole: names.RoleCore, names.TagGroup: names.GroupControl}}
	if got := Advice(core, Ref{}, nil); !strings.Contains(got, "clusterctl delete-core prod") {
		t.Errorf("Advice = %q", got)
	}
	untagged := &stacks.Stack{Name: "other", Status: "DELETE_FAILED"}
	if got := RefOf(untagged); got != (Ref{Cluster: "other"}) {
		t.Errorf("RefOf(untagged) = %+v", got)
	}
}

// explain adds the recovery command to each failed stack of an error, from
// the stack's own tags, and the re-attach command to a wait that stopped.
func TestExplain(t *testing.T) {
	group := func(name string) *stacks.OperationError {
		return &stacks.OperationError{Stack: "core-" + name, Op: "delete", Status: "DELETE_FAILED",
			Tags:       map[string]string{names.TagCluster: "core", names.TagRole: names.RoleAgents, names.TagGroup: name},
			LeftBehind: []stacks.Resource{{LogicalID: "Sg", ResourceType: "AWS::EC2::SecurityGroup"}}}
	}
	cascade := fmt.Errorf("deleting groups of %q: %w", "core", errors.Join(group("a"), errors.New("other"), group("b")))
	msg := explain(cascade, "core", "").Error()
	for _, want := range []string{"clusterctl remove-group -n a -j core --retain-failed", "clusterctl remove-group -n b -j core --retain-failed", "left behind: Sg"} {
		if !strings.Contains(msg, want) {
			t.Errorf("cascade message lacks %q:\n%s", want, msg)
		}
	}
	var oe *stacks.OperationError
	if !errors.As(explain(group("a"), "core", "a"), &oe) {
		t.Error("the operation error is no longer reachable")
	}
	stopped := &stacks.StillRunningError{Stack: "core-a", Op: "update", Err: context.Canceled}
	if err := explain(stopped, "core", "a"); errs.ExitCode(err) != errs.ExitInterrupted || !strings.Contains(err.Error(), "re-attach with: clusterctl wait core -n a") {
		t.Errorf("interrupted: %v", err)
	}
	timedOut := &stacks.StillRunningError{Stack: "core", Op: "create", Err: context.DeadlineExceeded}
	if err := explain(timedOut, "core", ""); errs.ExitCode(err) != errs.ExitFailed || !strings.HasSuffix(err.Error(), "re-attach with: clusterctl wait core") {
		t.Errorf("timed out: %v", err)
	}
	// The endpoint stopped answering during the wait: the stack's
	// operation carries on, and the hint says how to follow it again.
	silent := fmt.Errorf("waiting for stack %q: %w", "core", &awsx.EndpointError{Endpoint: "http://127.0.0.1:1", Reason: "no response", Silence: 20 * time.Second, Operation: "CloudFormation.DescribeStackEvents", Attempts: 3})
	if err := explain(silent, "core", ""); errs.ExitCode(err) != errs.ExitFailed || !strings.HasSuffix(err.Error(), "\nre-attach with: clusterctl wait core") {
		t.Errorf("endpoint silent during a wait: %v", err)
	}
	if explain(nil, "core", "") != nil {
		t.Error("explain(nil) is an error")
	}
	plain := errors.New("network down")
	if explain(plain, "core", "") != plain {
		t.Error("an error without a failed stack was changed")
	}
}
