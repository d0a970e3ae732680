package stacks_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

const signalReason = "Received 0 SUCCESS signal(s) out of 3.  Unable to satisfy 100% MinSuccessfulInstancesPercent requirement"

func TestCreateRollbackReportsRootCause(t *testing.T) {
	e := setup(t)
	e.fake.Script("core-r3", cfnfake.Create, cfnfake.CreateRollback(30*time.Second, asg, signalReason, lt, bucket)...)
	st, err := e.m.Create(t.Context(), stacks.Spec{Name: "core-r3", Template: []byte(tpl), Tags: groupTags("core", "r3")})
	var oe *stacks.OperationError
	if !errors.As(err, &oe) {
		t.Fatalf("Create error = %v, want *OperationError", err)
	}
	if st == nil || st.Status != "ROLLBACK_COMPLETE" {
		t.Errorf("stack = %+v, want ROLLBACK_COMPLETE", st)
	}
	if oe.Stack != "core-r3" || oe.Op != "create" || oe.Status != "ROLLBACK_COMPLETE" || oe.Class() != stacks.FailedDead {
		t.Errorf("OperationError = %+v", oe)
	}
	if oe.RootCause == nil || oe.RootCause.LogicalID != "Nodes" || oe.RootCause.Reason != signalReason {
		t.Fatalf("RootCause = %+v, want the Nodes signal failure, not the cancellations", oe.RootCause)
	}
	if !e.m.Owns(oe.RootCause.Token) {
		t.Errorf("root cause token %q is not this run's", oe.RootCause.Token)
	}
	msg := err.Error()
	for _, want := range []string{
		`create of stack "core-r3" failed: ROLLBACK_COMPLETE`,
		"Nodes (AWS::AutoScaling::AutoScalingGroup) CREATE_FAILED: " + signalReason,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, cfnfake.CreationCancelled) {
		t.Errorf("message repeats the cancellation noise: %q", msg)
	}
	if errs.ExitCode(err) != errs.ExitFailed {
		t.Errorf("exit code %d", errs.ExitCode(err))
	}
}

func TestCreateFailedKeptWithNoRollback(t *testing.T) {
	e := setup(t)
	e.fake.Script("core", cfnfake.Create, cfnfake.CreateFailedKept(20*time.Second, node, "Instance i-0abc failed to stabilize")...)
	_, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl), DisableRollback: true, Tags: coreTags("core")})
	var oe *stacks.OperationError
	if !errors.As(err, &oe) || oe.Status != "CREATE_FAILED" || oe.RootCause == nil || oe.RootCause.LogicalID != "Node" {
		t.Fatalf("err = %v", err)
	}
	create := e.fake.Log("CreateStack")[0]
	if create.Params.Get("DisableRollback") != "true" {
		t.Errorf("CreateStack DisableRollback = %q", create.Params.Get("DisableRollback"))
	}
	// The stack's tags come with the failure, for the caller to say what
	// to do next (internal/cluster); stacks itself names no command.
	if oe.Tags[names.TagCluster] != "core" || strings.Contains(err.Error(), "clusterctl ") {
		t.Errorf("tags %v, message %q", oe.Tags, err)
	}
}

func seedGroup(e *env, status, reason string, res ...cfnfake.Resource) {
	e.fake.Seed(cfnfake.Seed{
		Name: "core-r3", Status: status, Reason: reason, Template: tpl,
		Params:    map[string]string{"InstanceType": "r3.large", "DesiredCapacity": "3"},
		Tags:      groupTags("core", "r3"),
		Resources: res,
	})
}

var groupResources = []cfnfake.Resource{
	{LogicalID: "LaunchTemplate", Type: "AWS::EC2::LaunchTemplate"},
	{LogicalID: "Nodes", Type: "AWS::AutoScaling::AutoScalingGroup"},
}

func planApply(t *testing.T, e *env, spec stacks.Spec) (*stacks.Stack, error) {
	t.Helper()
	plan, err := e.m.Plan(t.Context(), spec)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if plan.Empty {
		t.Fatalf("Plan is empty")
	}
	return e.m.Apply(t.Context(), plan)
}

func TestUpdateRollback(t *testing.T) {
	e := setup(t)
	seedGroup(e, "", "", groupResources...)
	e.fake.Script("core-r3", cfnfake.Update, cfnfake.UpdateRollback(40*time.Second, asg, signalReason)...)
	st, err := planApply(t, e, stacks.Spec{Name: "core-r3", Template: []byte(tpl), Parameters: []stacks.Param{
		{Key: "InstanceType", Value: "r5.large"}, {Key: "DesiredCapacity", UsePrevious: true}}})
	var oe *stacks.OperationError
	if !errors.As(err, &oe) {
		t.Fatalf("Apply error = %v", err)
	}
	if st.Status != "UPDATE_ROLLBACK_COMPLETE" || oe.Class() != stacks.FailedUsable {
		t.Errorf("status %s class %v", st.Status, oe.Class())
	}
	if oe.RootCause == nil || oe.RootCause.Status != "UPDATE_FAILED" || oe.RootCause.LogicalID != "Nodes" {
		t.Errorf("RootCause = %+v", oe.RootCause)
	}
	for _, want := range []string{`update of stack "core-r3" failed: UPDATE_ROLLBACK_COMPLETE`, "Nodes (AWS::AutoScaling::AutoScalingGroup) UPDATE_FAILED"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	cs := e.fake.Log("CreateChangeSet")[0].Params
	if cs.Get("Parameters.member.2.UsePreviousValue") != "true" || cs.Get("Parameters.member.1.ParameterValue") != "r5.large" {
		t.Errorf("CreateChangeSet parameters = %v", cs)
	}
}

func TestUpdateRollbackFailedThenContinue(t *testing.T) {
	e := setup(t)
	seedGroup(e, "", "", groupResources...)
	e.fake.Script("core-r3", cfnfake.Update, cfnfake.UpdateRollbackFails(40*time.Second, asg, signalReason, lt, "Launch template version 3 was deleted")...)
	_, err := planApply(t, e, stacks.Spec{Name: "core-r3", Template: []byte(tpl), Parameters: []stacks.Param{{Key: "InstanceType", Value: "r5.large"}}})
	var oe *stacks.OperationError
	if !errors.As(err, &oe) || oe.Status != "UPDATE_ROLLBACK_FAILED" || oe.Class() != stacks.Stuck {
		t.Fatalf("err = %v", err)
	}
	if oe.RootCause == nil || oe.RootCause.LogicalID != "Nodes" {
		t.Errorf("RootCause = %+v, want the first failure (Nodes), not the rollback's", oe.RootCause)
	}
	if len(oe.LeftBehind) != 1 || oe.LeftBehind[0].LogicalID != "LaunchTemplate" {
		t.Errorf("LeftBehind = %+v", oe.LeftBehind)
	}

	st, err := e.m.ContinueUpdateRollback(t.Context(), "core-r3")
	if err != nil || st.Status != "UPDATE_ROLLBACK_COMPLETE" {
		t.Fatalf("ContinueUpdateRollback = %+v, %v", st, err)
	}
	calls := e.fake.Log("ContinueUpdateRollback")
	if len(calls) != 1 || !strings.HasPrefix(calls[0].Token(), runID+"-") {
		t.Errorf("ContinueUpdateRollback calls = %+v", calls)
	}
}

func TestContinueRollbackSkipping(t *testing.T) {
	e := setup(t, quietOpts)
	seedGroup(e, "UPDATE_ROLLBACK_FAILED", "The following resource(s) failed to update: [LaunchTemplate].",
		cfnfake.Resource{LogicalID: "LaunchTemplate", Type: "AWS::EC2::LaunchTemplate", Status: "UPDATE_FAILED", Reason: "gone"})
	if _, err := e.m.ContinueUpdateRollbackSkipping(t.Context(), "core-r3", []string{"LaunchTemplate"}); err != nil {
		t.Fatal(err)
	}
	if got := e.fake.Log("ContinueUpdateRollback")[0].Params.Get("ResourcesToSkip.member.1"); got != "LaunchTemplate" {
		t.Errorf("ResourcesToSkip = %q", got)
	}
	// Not in UPDATE_ROLLBACK_FAILED any more: CloudFormation refuses.
	if _, err := e.m.ContinueUpdateRollback(t.Context(), "core-r3"); err == nil || !strings.Contains(err.Error(), `continuing rollback of stack "core-r3"`) {
		t.Errorf("second ContinueUpdateRollback err = %v", err)
	}
}

func TestDeleteFailedNamesResourcesThenRetain(t *testing.T) {
	e := setup(t)
	e.fake.Seed(cfnfake.Seed{Name: "core", Template: tpl, Tags: coreTags("core"), Resources: []cfnfake.Resource{
		{LogicalID: "Bucket", Type: "AWS::S3::Bucket"}, {LogicalID: "Node", Type: "AWS::EC2::Instance"}}})
	e.fake.Script("core", cfnfake.Delete, cfnfake.DeleteFails(30*time.Second, bucket, "The bucket you tried to delete is not empty", node)...)
	err := e.m.Delete(t.Context(), "core")
	var oe *stacks.OperationError
	if !errors.As(err, &oe) || oe.Status != "DELETE_FAILED" || oe.Class() != stacks.Stuck {
		t.Fatalf("Delete err = %v", err)
	}
	if len(oe.LeftBehind) != 1 || oe.LeftBehind[0].LogicalID != "Bucket" {
		t.Errorf("LeftBehind = %+v", oe.LeftBehind)
	}
	for _, want := range []string{
		`delete of stack "core" failed: DELETE_FAILED: Bucket (AWS::S3::Bucket) DELETE_FAILED: The bucket you tried to delete is not empty`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}

	if err := e.m.DeleteRetaining(t.Context(), "core", nil); err != nil {
		t.Fatalf("DeleteRetaining: %v", err)
	}
	dels := e.fake.Log("DeleteStack")
	last := dels[len(dels)-1].Params
	if last.Get("RetainResources.member.1") != "Bucket" || last.Has("RetainResources.member.2") {
		t.Errorf("RetainResources = %v", last)
	}
	if _, err := e.m.Get(t.Context(), "core"); !errors.Is(err, stacks.ErrNotFound) {
		t.Errorf("Get after delete: %v", err)
	}
}

func TestWaitOnFailedStackWithNothingInProgress(t *testing.T) {
	e := setup(t, quietOpts)
	seedGroup(e, "ROLLBACK_COMPLETE", "The following resource(s) failed to create: [Nodes]. Rollback requested by user.",
		cfnfake.Resource{LogicalID: "Nodes", Type: "AWS::AutoScaling::AutoScalingGroup", Status: "CREATE_FAILED", Reason: signalReason})
	st, err := e.m.Wait(t.Context(), "core-r3")
	var oe *stacks.OperationError
	if !errors.As(err, &oe) || st.Status != "ROLLBACK_COMPLETE" {
		t.Fatalf("Wait = %v, %v", st, err)
	}
	if oe.RootCause == nil || oe.RootCause.Reason != signalReason {
		t.Errorf("RootCause = %+v", oe.RootCause)
	}
	if oe.Class() != stacks.FailedDead || oe.Tags[names.TagGroup] != "r3" {
		t.Errorf("class %v, tags %v", oe.Class(), oe.Tags)
	}
}

func TestRootCause(t *testing.T) {
	stack := func(status, reason string) stacks.Event {
		return stacks.Event{StackName: "s", LogicalID: "s", ResourceType: "AWS::CloudFormation::Stack", Status: status, Reason: reason}
	}
	res := func(id, status, reason string) stacks.Event {
		return stacks.Event{StackName: "s", LogicalID: id, ResourceType: "AWS::EC2::Instance", Status: status, Reason: reason}
	}
	tests := []struct {
		name   string
		evs    []stacks.Event
		wantID string
	}{
		{"earliest real failure", []stacks.Event{
			stack("CREATE_IN_PROGRESS", "User Initiated"),
			res("A", "CREATE_FAILED", "Resource creation cancelled"),
			res("B", "CREATE_FAILED", "boom"),
			res("C", "CREATE_FAILED", "later"),
			stack("ROLLBACK_IN_PROGRESS", "The following resource(s) failed to create: [A, B, C]."),
		}, "B"},
		{"only cancellations", []stacks.Event{
			res("A", "CREATE_FAILED", "Resource creation cancelled"),
			res("B", "UPDATE_FAILED", "Resource update cancelled"),
		}, "A"},
		{"stack events only (sparse)", []stacks.Event{
			stack("CREATE_IN_PROGRESS", "User Initiated"),
			stack("ROLLBACK_IN_PROGRESS", "The following resource(s) failed to create: [A]."),
			stack("ROLLBACK_COMPLETE", ""),
		}, "s"},
		{"nothing failed", []stacks.Event{stack("CREATE_IN_PROGRESS", "User Initiated"), stack("CREATE_COMPLETE", "")}, ""},
	}
	for _, tt := range tests {
		got := stacks.RootCause(tt.evs)
		if (got == nil) != (tt.wantID == "") || got != nil && got.LogicalID != tt.wantID {
			t.Errorf("%s: RootCause = %+v, want %q", tt.name, got, tt.wantID)
		}
	}
}

func TestOperationErrorWithoutEvents(t *testing.T) {
	err := &stacks.OperationError{Stack: "core", Op: "create", Status: "ROLLBACK_COMPLETE", Reason: "The following resource(s) failed to create: [Node]."}
	want := `create of stack "core" failed: ROLLBACK_COMPLETE: The following resource(s) failed to create: [Node].`
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}
