package stacks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

func TestPlanEmptyDeletesChangeSet(t *testing.T) {
	e := setup(t, quietOpts)
	seedGroup(e, "", "", groupResources...)
	plan, err := e.m.Plan(t.Context(), stacks.Spec{Name: "core-r3", Template: []byte(tpl), Parameters: []stacks.Param{
		{Key: "InstanceType", UsePrevious: true}, {Key: "DesiredCapacity", Value: "3"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Empty || len(plan.Changes) != 0 {
		t.Fatalf("plan = %+v, want empty", plan)
	}
	if n := e.fake.Calls("DeleteChangeSet"); n != 1 {
		t.Errorf("DeleteChangeSet calls = %d, want 1 (the failed change set is cleaned up)", n)
	}
	st, err := e.m.Apply(t.Context(), plan)
	if err != nil || st.Status != "CREATE_COMPLETE" {
		t.Errorf("Apply(empty) = %+v, %v", st, err)
	}
	if n := e.fake.Calls("ExecuteChangeSet"); n != 0 {
		t.Errorf("ExecuteChangeSet calls = %d for an empty plan", n)
	}
	if err := e.m.Discard(t.Context(), plan); err != nil {
		t.Errorf("Discard(empty) = %v", err)
	}
}

func TestPlanEmptyWhenCreateChangeSetRefuses(t *testing.T) {
	e := setup(t, quietOpts)
	seedGroup(e, "", "", groupResources...)
	e.fake.PlanChanges("core-r3", cfnfake.ChangeSet{Refuse: "No updates are to be performed."})
	plan, err := e.m.Plan(t.Context(), stacks.Spec{Name: "core-r3", Template: []byte(tpl)})
	if err != nil || !plan.Empty {
		t.Fatalf("Plan = %+v, %v", plan, err)
	}
}

func TestPlanChangesAllPagesAndApply(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.ChangePageSize = 1
	seedGroup(e, "", "", groupResources...)
	e.fake.PlanChanges("core-r3", cfnfake.ChangeSet{ReadyAfterReads: 3, Changes: []cfnfake.Change{
		{LogicalID: "LaunchTemplate", Type: "AWS::EC2::LaunchTemplate", Action: "Modify", Replacement: "False", Scope: []string{"Properties"}},
		{LogicalID: "Nodes", Type: "AWS::AutoScaling::AutoScalingGroup", Action: "Modify", Replacement: "True", Scope: []string{"Properties"}},
		{LogicalID: "Extra", Type: "AWS::EC2::SecurityGroupIngress", Action: "Add"},
	}})
	plan, err := e.m.Plan(t.Context(), stacks.Spec{Name: "core-r3", Template: []byte(tpl + " "), DisableRollback: true})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Empty || len(plan.Changes) != 3 {
		t.Fatalf("plan = %+v, want 3 changes", plan)
	}
	want := stacks.Change{LogicalID: "Nodes", ResourceType: "AWS::AutoScaling::AutoScalingGroup", Action: "Modify", Replacement: "True", Scope: []string{"Properties"}}
	got := plan.Changes[1]
	if got.LogicalID != want.LogicalID || got.ResourceType != want.ResourceType || got.Action != want.Action || got.Replacement != want.Replacement || len(got.Scope) != 1 {
		t.Errorf("change = %+v, want %+v", got, want)
	}
	if r := plan.Replacements(); len(r) != 1 || r[0].LogicalID != "Nodes" {
		t.Errorf("Replacements = %+v", r)
	}
	if !strings.HasPrefix(plan.ChangeSetName, runID+"-") {
		t.Errorf("change set name %q does not carry the run id", plan.ChangeSetName)
	}
	if n := e.fake.Calls("DescribeChangeSet"); n != 4+2 {
		t.Errorf("DescribeChangeSet calls = %d, want 4 polls + 2 more pages", n)
	}
	st, err := e.m.Apply(t.Context(), plan)
	if err != nil || st.Status != "UPDATE_COMPLETE" {
		t.Fatalf("Apply = %+v, %v", st, err)
	}
	if exec := e.fake.Log("ExecuteChangeSet")[0].Params; exec.Get("DisableRollback") != "true" || exec.Get("ChangeSetName") != plan.ChangeSetID {
		t.Errorf("ExecuteChangeSet = %v", exec)
	}
}

func TestPlanParameterOnlyUsesPreviousTemplate(t *testing.T) {
	e := setup(t, quietOpts)
	seedGroup(e, "", "", groupResources...)
	plan, err := e.m.Plan(t.Context(), stacks.Spec{Name: "core-r3", Parameters: []stacks.Param{{Key: "DesiredCapacity", Value: "5"}}})
	if err != nil || plan.Empty {
		t.Fatalf("Plan = %+v, %v", plan, err)
	}
	p := e.fake.Log("CreateChangeSet")[0].Params
	if p.Get("UsePreviousTemplate") != "true" || p.Has("TemplateBody") {
		t.Errorf("CreateChangeSet = %v", p)
	}
	if err := e.m.Discard(t.Context(), plan); err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Calls("DeleteChangeSet"); n != 1 {
		t.Errorf("DeleteChangeSet calls = %d", n)
	}
}

func TestPlanFailedChangeSet(t *testing.T) {
	e := setup(t, quietOpts)
	seedGroup(e, "", "", groupResources...)
	e.fake.PlanChanges("core-r3", cfnfake.ChangeSet{FailReason: "Parameter 'ImageId' must be one of AllowedValues"})
	_, err := e.m.Plan(t.Context(), stacks.Spec{Name: "core-r3", Template: []byte(tpl)})
	if err == nil || !strings.Contains(err.Error(), `change set for stack "core-r3" failed: Parameter 'ImageId'`) {
		t.Fatalf("err = %v", err)
	}
	if e.fake.Calls("DeleteChangeSet") != 1 {
		t.Errorf("failed change set not deleted")
	}
}

func TestPlanOnDeadStack(t *testing.T) {
	e := setup(t, quietOpts)
	seedGroup(e, "ROLLBACK_COMPLETE", "")
	_, err := e.m.Plan(t.Context(), stacks.Spec{Name: "core-r3", Template: []byte(tpl)})
	if err == nil || !strings.Contains(err.Error(), `creating change set for stack "core-r3"`) || !strings.Contains(err.Error(), "ROLLBACK_COMPLETE state and can not be updated") {
		t.Errorf("err = %v", err)
	}
	if _, err := e.m.Plan(t.Context(), stacks.Spec{Name: "nope", Template: []byte(tpl)}); !errors.Is(err, stacks.ErrNotFound) {
		t.Errorf("Plan(missing) = %v", err)
	}
}

func TestTokens(t *testing.T) {
	e := setup(t, quietOpts)
	if _, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)}); err != nil {
		t.Fatal(err)
	}
	if _, err := planApply(t, e, stacks.Spec{Name: "core", Template: []byte(tpl + " ")}); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Delete(t.Context(), "core"); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, action := range []string{"CreateStack", "CreateChangeSet", "ExecuteChangeSet", "DeleteStack"} {
		calls := e.fake.Log(action)
		if len(calls) != 1 {
			t.Fatalf("%s calls = %d", action, len(calls))
		}
		tok := calls[0].Token()
		if !strings.HasPrefix(tok, runID+"-") || !tokenRE.MatchString(tok) || len(tok) > 128 {
			t.Errorf("%s token %q: want prefix %q, pattern, ≤128 chars", action, tok, runID+"-")
		}
		if !e.m.Owns(tok) {
			t.Errorf("Owns(%q) = false", tok)
		}
		if prev, dup := seen[tok]; dup {
			t.Errorf("%s reuses the token of %s", action, prev)
		}
		seen[tok] = action
	}
	if e.m.Owns("other-run-1-create") {
		t.Error("Owns accepts another run's token")
	}
}

func TestRunIDSanitized(t *testing.T) {
	for _, id := range []string{"", "--weird id/with:chars", strings.Repeat("x", 300)} {
		m := stacks.NewManager(nil, stacks.Options{RunID: id})
		run := m.RunID()
		tok := run + "-99999-changeset"
		if !tokenRE.MatchString(tok) || len(tok) > 128 {
			t.Errorf("RunID(%q) = %q gives invalid token %q", id, run, tok)
		}
	}
	if a, b := stacks.NewRunID(), stacks.NewRunID(); a == b || !strings.HasPrefix(a, "clusterctl-") {
		t.Errorf("NewRunID = %q, %q", a, b)
	}
}

func TestRetriesReuseTokenAndSurviveFaults(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.Throttle("CreateStack", 2)
	e.fake.Fail("DescribeStackEvents", 3, 503, "ServiceUnavailable", "try later")
	e.fake.Fail("DescribeStacks", 1, 500, "InternalFailure", "oops")
	st, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)})
	if err != nil || st.Status != "CREATE_COMPLETE" {
		t.Fatalf("Create = %+v, %v", st, err)
	}
	calls := e.fake.Log("CreateStack")
	if len(calls) != 3 || calls[0].Code != "Throttling" || calls[2].Status != 200 {
		t.Fatalf("CreateStack calls = %+v", calls)
	}
	for _, c := range calls {
		if c.Token() != calls[0].Token() {
			t.Errorf("retry token %q differs from %q", c.Token(), calls[0].Token())
		}
	}
}

func TestLostCreateResponseIsOurs(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.LoseResponse("CreateStack", 1)
	e.fake.Script("core", cfnfake.Create, cfnfake.SlowCreate(20*time.Second, nil, bucket)...)
	st, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)})
	if err != nil || st.Status != "CREATE_COMPLETE" {
		t.Fatalf("Create = %+v, %v", st, err)
	}
	calls := e.fake.Log("CreateStack")
	if len(calls) != 2 || calls[0].Status != 500 || calls[1].Code != "AlreadyExistsException" || calls[0].Token() != calls[1].Token() {
		t.Errorf("CreateStack calls = %+v", calls)
	}
}

func TestCreateOverForeignStack(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.Seed(cfnfake.Seed{Name: "core", Template: tpl})
	_, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)})
	if !errors.Is(err, stacks.ErrAlreadyExists) || errs.ExitCode(err) != errs.ExitFailed {
		t.Fatalf("err = %v (exit %d), want ErrAlreadyExists, exit 1 (a duplicate is refused, not bad input)", err, errs.ExitCode(err))
	}
	if !strings.Contains(err.Error(), `creating stack "core": stack already exists`) {
		t.Errorf("message %q", err)
	}
}

func TestTemplateTooLarge(t *testing.T) {
	e := setup(t, quietOpts)
	big := []byte(`{"Resources":{}, "Description":"` + strings.Repeat("x", stacks.MaxTemplateBody) + `"}`)
	_, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: big})
	if err == nil || errs.ExitCode(err) != errs.ExitUsage || !strings.Contains(err.Error(), "51200-byte limit") {
		t.Errorf("Create err = %v", err)
	}
	if _, err := e.m.Plan(t.Context(), stacks.Spec{Name: "core", Template: big}); err == nil || errs.ExitCode(err) != errs.ExitUsage {
		t.Errorf("Plan err = %v", err)
	}
	if n := e.fake.Calls(""); n != 0 {
		t.Errorf("%d calls made for an oversized template", n)
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	fake := cfnfake.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	clock := &cancelAfter{Clock: fake.Clock, n: 6, cancel: cancel}
	m := stacks.NewManager(fake.Client(), stacks.Options{RunID: runID, Clock: clock})
	fake.Script("core", cfnfake.Create, cfnfake.SlowCreate(5*time.Minute, nil, bucket)...)
	_, err := m.Create(ctx, stacks.Spec{Name: "core", Template: []byte(tpl)})
	if !errors.Is(err, context.Canceled) || errs.ExitCode(err) != errs.ExitInterrupted {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var sr *stacks.StillRunningError
	if !errors.As(err, &sr) || sr.Stack != "core" || sr.Status != "CREATE_IN_PROGRESS" {
		t.Errorf("err = %#v", err)
	}
	if !strings.Contains(err.Error(), "CloudFormation carries on") {
		t.Errorf("message %q", err)
	}
	if got := fake.Status("core"); got != "CREATE_IN_PROGRESS" {
		t.Errorf("fake status %s: the stack should still be creating", got)
	}

	// Re-attach: a new run waits for the outcome.
	m2 := stacks.NewManager(fake.Client(), stacks.Options{RunID: "run-2", Clock: fake.Clock})
	st, err := m2.Wait(t.Context(), "core")
	if err != nil || st.Status != "CREATE_COMPLETE" {
		t.Fatalf("Wait = %+v, %v", st, err)
	}
}

func TestReattachToFailingCreateFindsRootCause(t *testing.T) {
	fake := cfnfake.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fake.Script("core-r3", cfnfake.Create, cfnfake.CreateRollback(30*time.Second, asg, signalReason, lt)...)
	m := stacks.NewManager(fake.Client(), stacks.Options{RunID: runID, Clock: &cancelAfter{Clock: fake.Clock, n: 30, cancel: cancel}})
	if _, err := m.Create(ctx, stacks.Spec{Name: "core-r3", Template: []byte(tpl), Tags: groupTags("core", "r3")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create err = %v", err)
	}
	if got := fake.Status("core-r3"); got != "ROLLBACK_IN_PROGRESS" {
		t.Fatalf("status %s, want the test to re-attach during the rollback", got)
	}
	m2 := stacks.NewManager(fake.Client(), stacks.Options{RunID: "run-2", Clock: fake.Clock})
	_, err := m2.Wait(t.Context(), "core-r3")
	var oe *stacks.OperationError
	if !errors.As(err, &oe) || oe.RootCause == nil || oe.RootCause.LogicalID != "Nodes" {
		t.Fatalf("Wait err = %v", err)
	}
}

func TestWaitMissingStack(t *testing.T) {
	e := setup(t, quietOpts)
	if _, err := e.m.Wait(t.Context(), "nope"); !errors.Is(err, stacks.ErrNotFound) {
		t.Errorf("Wait = %v", err)
	}
	if _, err := e.m.Get(t.Context(), "nope"); !errors.Is(err, stacks.ErrNotFound) || err.Error() != `stack "nope" does not exist` {
		t.Errorf("Get = %v", err)
	}
}

func TestGetAndListPaginated(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.StackPageSize = 1
	e.fake.Seed(cfnfake.Seed{Name: "core", Template: tpl, Params: map[string]string{"P": "v"}, Outputs: map[string]string{"BucketName": "b"}, Tags: coreTags("core")})
	e.fake.Seed(cfnfake.Seed{Name: "core-r3", Template: tpl, Status: "UPDATE_ROLLBACK_COMPLETE"})
	e.fake.Seed(cfnfake.Seed{Name: "old", Template: tpl, Status: "DELETE_COMPLETE"})
	list, err := e.m.List(t.Context())
	if err != nil || len(list) != 2 || list[0].Name != "core" || list[1].Name != "core-r3" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if n := e.fake.Calls("DescribeStacks"); n != 2 {
		t.Errorf("DescribeStacks calls = %d, want 2 pages", n)
	}
	st, err := e.m.Get(t.Context(), "core")
	if err != nil {
		t.Fatal(err)
	}
	if st.Parameters["P"] != "v" || st.Outputs["BucketName"] != "b" || st.Tags["clusterctl:role"] != "core" || st.ID == "" || st.Created.IsZero() || !st.Updated.Equal(st.Created) {
		t.Errorf("Get = %+v", st)
	}
	if r, _ := e.m.Get(t.Context(), "core-r3"); !r.Updated.After(r.Created) || r.Class() != stacks.FailedUsable {
		t.Errorf("updated stack = %+v", r)
	}
	body, err := e.m.Template(t.Context(), "core")
	if err != nil || string(body) != tpl {
		t.Errorf("Template = %q, %v", body, err)
	}
}

func TestDeleteMissingIsSuccess(t *testing.T) {
	e := setup(t, quietOpts)
	if err := e.m.Delete(t.Context(), "nope"); err != nil {
		t.Errorf("Delete(missing) = %v", err)
	}
	if n := e.fake.Calls("DeleteStack"); n != 0 {
		t.Errorf("DeleteStack calls = %d", n)
	}
}

func TestDeleteMany(t *testing.T) {
	e := setup(t)
	for _, n := range []string{"core-a", "core-b", "core-c"} {
		e.fake.Seed(cfnfake.Seed{Name: n, Template: tpl, Resources: []cfnfake.Resource{{LogicalID: "Nodes", Type: "AWS::AutoScaling::AutoScalingGroup"}}})
	}
	e.fake.Script("core-b", cfnfake.Delete, cfnfake.DeleteFails(10*time.Second, asg, "Instances still running")...)
	outcomes, err := e.m.DeleteMany(t.Context(), []string{"core-a", "core-b", "core-c", "core-gone"}, 2)
	var oe *stacks.OperationError
	if !errors.As(err, &oe) || oe.Stack != "core-b" {
		t.Fatalf("DeleteMany = %v, want core-b's failure", err)
	}
	// Each stack's own end, in the order given; the failed one took its 10 s.
	wantStatus := []string{"DELETE_COMPLETE", "DELETE_FAILED", "DELETE_COMPLETE", "DELETE_COMPLETE"}
	for i, o := range outcomes {
		if o.Stack != []string{"core-a", "core-b", "core-c", "core-gone"}[i] || o.Status != wantStatus[i] {
			t.Errorf("outcome %d = %+v, want status %s", i, o, wantStatus[i])
		}
	}
	if len(outcomes) != 4 || outcomes[1].Duration < 10*time.Second || outcomes[3].Duration != 0 {
		t.Errorf("outcomes = %+v", outcomes)
	}
	if n := e.fake.Calls("DeleteStack"); n != 3 {
		t.Errorf("DeleteStack calls = %d", n)
	}
	for _, n := range []string{"core-a", "core-c"} {
		if s := e.fake.Status(n); s != "" {
			t.Errorf("%s still %s", n, s)
		}
	}
	out := e.out.String()
	for _, n := range []string{"core-a", "core-b", "core-c"} {
		if !strings.Contains(out, n+" ") || !strings.Contains(out, "DELETE_IN_PROGRESS") {
			t.Errorf("progress lacks %s:\n%s", n, out)
		}
	}
}

func TestDeleteManyCancelled(t *testing.T) {
	fake := cfnfake.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	m := stacks.NewManager(fake.Client(), stacks.Options{RunID: runID, Clock: fake.Clock})
	fake.Seed(cfnfake.Seed{Name: "a", Template: tpl})
	outcomes, err := m.DeleteMany(ctx, []string{"a"}, 1)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if len(outcomes) != 1 || outcomes[0].Status != "" {
		t.Errorf("outcomes of a deletion never started = %+v", outcomes)
	}
}

func TestWaitSurvivesTransientErrorsButNotOthers(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.Script("core", cfnfake.Create, cfnfake.SlowCreate(20*time.Second, nil, bucket)...)
	// Two whole SDK calls (5 attempts each) fail: the wait carries on.
	e.fake.Fail("DescribeStackEvents", 10, 503, "ServiceUnavailable", "busy")
	if st, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)}); err != nil || st.Status != "CREATE_COMPLETE" {
		t.Fatalf("Create = %+v, %v", st, err)
	}

	e.fake.Script("core-b", cfnfake.Create, cfnfake.SlowCreate(20*time.Second, nil, bucket)...)
	e.fake.Fail("DescribeStackEvents", 1, 403, "AccessDenied", "not allowed")
	_, err := e.m.Create(t.Context(), stacks.Spec{Name: "core-b", Template: []byte(tpl)})
	if err == nil || !strings.Contains(err.Error(), `waiting for stack "core-b"`) || !strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("err = %v", err)
	}
}

func TestLostExecuteAndDeleteResponsesAreSafe(t *testing.T) {
	e := setup(t, quietOpts)
	seedGroup(e, "", "", groupResources...)
	e.fake.LoseResponse("ExecuteChangeSet", 1)
	if st, err := planApply(t, e, stacks.Spec{Name: "core-r3", Template: []byte(tpl + " ")}); err != nil || st.Status != "UPDATE_COMPLETE" {
		t.Fatalf("Apply = %+v, %v", st, err)
	}
	if calls := e.fake.Log("ExecuteChangeSet"); len(calls) != 2 || calls[1].Status != 200 || calls[0].Token() != calls[1].Token() {
		t.Errorf("ExecuteChangeSet calls = %+v", calls)
	}
	e.fake.LoseResponse("DeleteStack", 1)
	if err := e.m.Delete(t.Context(), "core-r3"); err != nil {
		t.Fatal(err)
	}
	if calls := e.fake.Log("DeleteStack"); len(calls) != 2 || calls[0].Token() != calls[1].Token() {
		t.Errorf("DeleteStack calls = %+v", calls)
	}
}

// DeleteStarted calls its hook once the deletion is accepted, while the
// stack is still being deleted, and not for a stack that is not there.
func TestDeleteStartedHook(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.Seed(cfnfake.Seed{Name: "core", Template: tpl, Resources: []cfnfake.Resource{{LogicalID: "Bucket", Type: "AWS::S3::Bucket"}}})
	e.fake.Script("core", cfnfake.Delete,
		cfnfake.Step{Status: "DELETE_IN_PROGRESS"},
		cfnfake.Step{At: 30 * time.Second, Status: "DELETE_COMPLETE"})
	var statusAtHook string
	calls := 0
	out, err := e.m.DeleteStarted(t.Context(), "core", false, func() {
		calls++
		statusAtHook = e.fake.Status("core")
	})
	if err != nil || out.Status != "DELETE_COMPLETE" {
		t.Fatalf("DeleteStarted = %+v, %v", out, err)
	}
	if calls != 1 || statusAtHook != "DELETE_IN_PROGRESS" {
		t.Errorf("hook called %d times, with the stack %s; want once, while DELETE_IN_PROGRESS", calls, statusAtHook)
	}
	calls = 0
	if _, err := e.m.DeleteStarted(t.Context(), "core", false, func() { calls++ }); err != nil || calls != 0 {
		t.Errorf("DeleteStarted of a deleted stack: %v, hook called %d times", err, calls)
	}
}
