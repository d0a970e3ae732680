package cfnfake_test

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/smithy-go"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
)

const tpl = `{"Resources":{"Queue":{"Type":"AWS::SQS::Queue"}}}`

func TestErrorsParseAsAPIErrors(t *testing.T) {
	f := cfnfake.New(t)
	c := f.Client()
	_, err := c.DescribeStacks(t.Context(), &cloudformation.DescribeStacksInput{StackName: aws.String("nope")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationError" || ae.ErrorMessage() != "Stack with id nope does not exist" {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.CreateStack(t.Context(), &cloudformation.CreateStackInput{StackName: aws.String("s"), TemplateBody: aws.String(tpl)}); err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateStack(t.Context(), &cloudformation.CreateStackInput{StackName: aws.String("s"), TemplateBody: aws.String(tpl)})
	var exists *types.AlreadyExistsException
	if !errors.As(err, &exists) {
		t.Errorf("second CreateStack = %v, want AlreadyExistsException", err)
	}
}

func TestFaultsAreRetriedAndCounted(t *testing.T) {
	f := cfnfake.New(t)
	c := f.Client()
	f.Throttle("DescribeStacks", 2)
	f.Fail("DescribeStacks", 1, 503, "ServiceUnavailable", "busy")
	if _, err := c.DescribeStacks(t.Context(), &cloudformation.DescribeStacksInput{}); err != nil {
		t.Fatalf("DescribeStacks after 3 faults = %v", err)
	}
	calls := f.Log("DescribeStacks")
	if len(calls) != 4 || calls[0].Code != "Throttling" || calls[0].Status != 400 || calls[2].Status != 503 || calls[3].Status != 200 {
		t.Errorf("calls = %+v", calls)
	}
	f.Fail("DescribeStacks", 5, 500, "InternalFailure", "down")
	if _, err := c.DescribeStacks(t.Context(), &cloudformation.DescribeStacksInput{}); err == nil {
		t.Error("5 faults for 5 attempts: want an error")
	}
}

func TestLostResponseTakesEffect(t *testing.T) {
	f := cfnfake.New(t)
	c := f.Client()
	f.LoseResponse("CreateStack", 1)
	_, err := c.CreateStack(t.Context(), &cloudformation.CreateStackInput{StackName: aws.String("s"), TemplateBody: aws.String(tpl), ClientRequestToken: aws.String("tok-1")})
	var exists *types.AlreadyExistsException
	if !errors.As(err, &exists) {
		t.Fatalf("err = %v, want the retry to meet AlreadyExists", err)
	}
	if f.Status("s") != "CREATE_IN_PROGRESS" {
		t.Errorf("status %q", f.Status("s"))
	}
	ev, err := c.DescribeStackEvents(t.Context(), &cloudformation.DescribeStackEventsInput{StackName: aws.String("s")})
	if err != nil || aws.ToString(ev.StackEvents[0].ClientRequestToken) != "tok-1" {
		t.Errorf("events = %+v, %v", ev, err)
	}
}

func TestScriptFollowsClock(t *testing.T) {
	f := cfnfake.New(t)
	c := f.Client()
	f.Script("s", cfnfake.Create, cfnfake.SlowCreate(10*time.Second, map[string]string{"Out": "v"}, cfnfake.Res{LogicalID: "Queue", Type: "AWS::SQS::Queue"})...)
	if _, err := c.CreateStack(t.Context(), &cloudformation.CreateStackInput{StackName: aws.String("s"), TemplateBody: aws.String(tpl)}); err != nil {
		t.Fatal(err)
	}
	describe := func() types.Stack {
		out, err := c.DescribeStacks(t.Context(), &cloudformation.DescribeStacksInput{StackName: aws.String("s")})
		if err != nil {
			t.Fatal(err)
		}
		return out.Stacks[0]
	}
	if s := describe(); s.StackStatus != types.StackStatusCreateInProgress || len(s.Outputs) != 0 {
		t.Errorf("at 0s: %s", s.StackStatus)
	}
	<-f.Clock.After(9 * time.Second)
	if s := describe(); s.StackStatus != types.StackStatusCreateInProgress {
		t.Errorf("at 9s: %s", s.StackStatus)
	}
	f.Clock.Advance(time.Second)
	s := describe()
	if s.StackStatus != types.StackStatusCreateComplete || aws.ToString(s.Outputs[0].OutputValue) != "v" {
		t.Errorf("at 10s: %+v", s)
	}
	if !s.CreationTime.Equal(cfnfake.Epoch) {
		t.Errorf("CreationTime %v", s.CreationTime)
	}
}

func TestEventPagesAreStable(t *testing.T) {
	f := cfnfake.New(t)
	f.EventPageSize = 2
	c := f.Client()
	f.Seed(cfnfake.Seed{Name: "s", Template: tpl, Resources: []cfnfake.Resource{{LogicalID: "A", Type: "T"}, {LogicalID: "B", Type: "T"}}})
	var ids []string
	var next *string
	for {
		out, err := c.DescribeStackEvents(t.Context(), &cloudformation.DescribeStackEventsInput{StackName: aws.String("s"), NextToken: next})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range out.StackEvents {
			ids = append(ids, aws.ToString(e.EventId))
		}
		if out.NextToken == nil {
			break
		}
		next = out.NextToken
	}
	if len(ids) != 6 {
		t.Fatalf("%d events, want 6: %v", len(ids), ids)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("event %s twice", id)
		}
		seen[id] = true
	}
}

func TestChangeSetLifecycle(t *testing.T) {
	f := cfnfake.New(t)
	f.ChangePageSize = 1
	c := f.Client()
	f.Seed(cfnfake.Seed{Name: "s", Template: tpl, Params: map[string]string{"P": "a"}, Resources: []cfnfake.Resource{{LogicalID: "Queue", Type: "AWS::SQS::Queue"}}})
	create := func(val string) string {
		out, err := c.CreateChangeSet(t.Context(), &cloudformation.CreateChangeSetInput{
			StackName: aws.String("s"), ChangeSetName: aws.String("cs-" + val), TemplateBody: aws.String(tpl),
			Parameters: []types.Parameter{{ParameterKey: aws.String("P"), ParameterValue: aws.String(val)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.Id)
	}
	describe := func(id string) *cloudformation.DescribeChangeSetOutput {
		out, err := c.DescribeChangeSet(t.Context(), &cloudformation.DescribeChangeSetInput{ChangeSetName: aws.String(id)})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	same := create("a")
	if s := describe(same).Status; s != types.ChangeSetStatusCreateInProgress {
		t.Errorf("first read %s", s)
	}
	if d := describe(same); d.Status != types.ChangeSetStatusFailed || aws.ToString(d.StatusReason) != cfnfake.NoChangesReason {
		t.Errorf("unchanged: %s %q", d.Status, aws.ToString(d.StatusReason))
	}
	changed := create("b")
	describe(changed)
	d := describe(changed)
	if d.Status != types.ChangeSetStatusCreateComplete || d.ExecutionStatus != types.ExecutionStatusAvailable || len(d.Changes) != 1 {
		t.Fatalf("changed: %+v", d)
	}
	if rc := d.Changes[0].ResourceChange; rc.Action != types.ChangeActionModify || aws.ToString(rc.LogicalResourceId) != "Queue" {
		t.Errorf("change %+v", rc)
	}
	if _, err := c.ExecuteChangeSet(t.Context(), &cloudformation.ExecuteChangeSetInput{ChangeSetName: aws.String(same)}); err == nil {
		t.Error("executing a FAILED change set succeeded")
	}
	if _, err := c.ExecuteChangeSet(t.Context(), &cloudformation.ExecuteChangeSetInput{ChangeSetName: aws.String(changed), ClientRequestToken: aws.String("t1")}); err != nil {
		t.Fatal(err)
	}
	if f.Status("s") != "UPDATE_IN_PROGRESS" {
		t.Errorf("status %s", f.Status("s"))
	}
	if _, err := c.DeleteChangeSet(t.Context(), &cloudformation.DeleteChangeSetInput{ChangeSetName: aws.String(same)}); err != nil {
		t.Fatal(err)
	}
	_, err := c.DescribeChangeSet(t.Context(), &cloudformation.DescribeChangeSetInput{ChangeSetName: aws.String(same)})
	var nf *types.ChangeSetNotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("describe deleted change set: %v", err)
	}
}

func TestDeletedStackVisibleByID(t *testing.T) {
	f := cfnfake.New(t)
	c := f.Client()
	id := f.Seed(cfnfake.Seed{Name: "s", Template: tpl})
	if _, err := c.DeleteStack(t.Context(), &cloudformation.DeleteStackInput{StackName: aws.String("s")}); err != nil {
		t.Fatal(err)
	}
	f.Clock.Advance(5 * time.Second)
	if _, err := c.DescribeStacks(t.Context(), &cloudformation.DescribeStacksInput{StackName: aws.String("s")}); err == nil {
		t.Error("deleted stack visible by name")
	}
	out, err := c.DescribeStacks(t.Context(), &cloudformation.DescribeStacksInput{StackName: aws.String(id)})
	if err != nil || out.Stacks[0].StackStatus != types.StackStatusDeleteComplete {
		t.Errorf("by id: %+v, %v", out, err)
	}
	if _, err := c.DeleteStack(t.Context(), &cloudformation.DeleteStackInput{StackName: aws.String("s")}); err != nil {
		t.Errorf("deleting a deleted stack: %v", err)
	}
}

func TestRetainOnlyWhenDeleteFailed(t *testing.T) {
	f := cfnfake.New(t)
	c := f.Client()
	f.Seed(cfnfake.Seed{Name: "s", Template: tpl})
	_, err := c.DeleteStack(t.Context(), &cloudformation.DeleteStackInput{StackName: aws.String("s"), RetainResources: []string{"Queue"}})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationError" {
		t.Errorf("err = %v", err)
	}
}

func TestClockWaits(t *testing.T) {
	c := cfnfake.NewClock(cfnfake.Epoch)
	<-c.After(time.Second)
	<-c.After(250 * time.Millisecond)
	if got := c.Now().Sub(cfnfake.Epoch); got != 1250*time.Millisecond {
		t.Errorf("advanced %v", got)
	}
	if w := c.Waits(); len(w) != 2 || w[1] != 250*time.Millisecond {
		t.Errorf("Waits = %v", w)
	}
}

// A held step waits for its channel however often the stack is read; the
// fake counts the operations in progress at once.
func TestHoldAndRunning(t *testing.T) {
	f := cfnfake.New(t)
	c := f.Client()
	hold := make(chan struct{})
	for _, name := range []string{"a", "b"} {
		f.Script(name, cfnfake.Create, cfnfake.Step{Status: "CREATE_IN_PROGRESS"}, cfnfake.Step{Hold: hold, Status: "CREATE_COMPLETE"})
		if _, err := c.CreateStack(t.Context(), &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(tpl)}); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		f.Clock.Advance(time.Hour)
		if _, err := c.DescribeStacks(t.Context(), &cloudformation.DescribeStacksInput{StackName: aws.String("a")}); err != nil {
			t.Fatal(err)
		}
	}
	if f.Status("a") != "CREATE_IN_PROGRESS" || f.Running() != 2 || f.MaxRunning() != 2 {
		t.Fatalf("held: %s, %d running, at most %d", f.Status("a"), f.Running(), f.MaxRunning())
	}
	close(hold)
	if _, err := c.DescribeStacks(t.Context(), &cloudformation.DescribeStacksInput{}); err != nil {
		t.Fatal(err)
	}
	if f.Status("a") != "CREATE_COMPLETE" || f.Status("b") != "CREATE_COMPLETE" || f.Running() != 0 || f.MaxRunning() != 2 {
		t.Errorf("released: %s, %s, %d running, at most %d", f.Status("a"), f.Status("b"), f.Running(), f.MaxRunning())
	}
}
