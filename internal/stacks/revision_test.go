package stacks_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// someoneElseUpdates changes the stack behind the manager's back, as another
// run (or an operator with the AWS CLI) would.
func someoneElseUpdates(t *testing.T, e *env, name, count string) {
	t.Helper()
	c := e.fake.Client()
	out, err := c.CreateChangeSet(t.Context(), &cloudformation.CreateChangeSetInput{
		StackName: aws.String(name), ChangeSetName: aws.String("other-run"), UsePreviousTemplate: aws.Bool(true),
		Parameters: paramsOf(map[string]string{"InstanceType": "r3.large", "DesiredCapacity": count}),
	})
	if err != nil {
		t.Fatal(err)
	}
	for {
		cs, err := c.DescribeChangeSet(t.Context(), &cloudformation.DescribeChangeSetInput{ChangeSetName: out.Id})
		if err != nil {
			t.Fatal(err)
		}
		if cs.Status == "CREATE_COMPLETE" {
			break
		}
	}
	if _, err := c.ExecuteChangeSet(t.Context(), &cloudformation.ExecuteChangeSetInput{ChangeSetName: out.Id}); err != nil {
		t.Fatal(err)
	}
	e.fake.Clock.Advance(time.Minute)
	// The fake moves scripted operations on when it is called.
	got, err := c.DescribeStacks(t.Context(), &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil || got.Stacks[0].StackStatus != "UPDATE_COMPLETE" {
		t.Fatalf("the other update: %v, %v", got, err)
	}
}

// An update planned from a stack that someone else changed before the
// change set is executed is not applied: its change set is deleted and the
// error says the stack changed.
func TestApplyRefusesStackChangedSincePlan(t *testing.T) {
	e := setup(t, quietOpts)
	seedGroup(e, "", "", groupResources...)
	plan, err := e.m.Plan(t.Context(), stacks.Spec{Name: "core-r3", Parameters: []stacks.Param{{Key: "InstanceType", Value: "r5.large"}, {Key: "DesiredCapacity", Value: "3"}}})
	if err != nil || plan.Empty {
		t.Fatalf("Plan = %+v, %v", plan, err)
	}
	someoneElseUpdates(t, e, "core-r3", "5")
	e.fake.ResetLog()

	_, err = e.m.Apply(t.Context(), plan)
	var ce *stacks.ChangedError
	if !errors.As(err, &ce) || !errors.Is(err, stacks.ErrChanged) {
		t.Fatalf("Apply = %v, want a *ChangedError", err)
	}
	if ce.Latest == nil || ce.Latest.Status != "UPDATE_COMPLETE" || !strings.Contains(err.Error(), "nothing was applied") {
		t.Errorf("error = %v (latest %+v)", err, ce.Latest)
	}
	if n := e.fake.Calls("ExecuteChangeSet"); n != 0 {
		t.Errorf("ExecuteChangeSet called %d times on a changed stack", n)
	}
	if n := e.fake.Calls("DeleteChangeSet"); n != 1 {
		t.Errorf("DeleteChangeSet called %d times, want 1 (the stale change set is cleaned up)", n)
	}
}

// A caller that read the stack's revision before deriving its update is
// refused at Plan time when the stack moved on in between, before any
// change set exists; with the revision unchanged the update goes through.
func TestPlanRefusesStackChangedSinceRead(t *testing.T) {
	e := setup(t, quietOpts)
	seedGroup(e, "", "", groupResources...)
	rev, err := e.m.Revision(t.Context(), "core-r3")
	if err != nil || rev == "" {
		t.Fatalf("Revision = %q, %v", rev, err)
	}
	spec := stacks.Spec{Name: "core-r3", Revision: rev, Parameters: []stacks.Param{{Key: "InstanceType", Value: "r5.large"}, {Key: "DesiredCapacity", Value: "3"}}}

	someoneElseUpdates(t, e, "core-r3", "5")
	e.fake.ResetLog()
	if _, err := e.m.Plan(t.Context(), spec); !errors.Is(err, stacks.ErrChanged) {
		t.Fatalf("Plan after a concurrent update = %v, want ErrChanged", err)
	}
	if n := e.fake.Calls("CreateChangeSet"); n != 0 {
		t.Errorf("CreateChangeSet called %d times for a stale update", n)
	}

	spec.Revision, err = e.m.Revision(t.Context(), "core-r3")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := e.m.Plan(t.Context(), spec)
	if err != nil || plan.Revision != spec.Revision {
		t.Fatalf("Plan = %+v, %v", plan, err)
	}
	if st, err := e.m.Apply(t.Context(), plan); err != nil || st.Status != "UPDATE_COMPLETE" {
		t.Fatalf("Apply = %+v, %v", st, err)
	}
}

// Wait reports the outcome of a deletion that finished before it was
// called: found among the deleted stacks by name, or by stack ID.
func TestWaitReportsFinishedDeletion(t *testing.T) {
	e := setup(t, quietOpts)
	id := e.fake.Seed(cfnfake.Seed{Name: "core-g", Tags: groupTags("core", "g"), Resources: groupResources})
	if err := e.m.Delete(t.Context(), "core-g"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"core-g", id} {
		st, err := e.m.Wait(t.Context(), name)
		if err != nil || st.Status != "DELETE_COMPLETE" || st.ID != id || st.Name != "core-g" {
			t.Errorf("Wait(%s) = %+v, %v; want DELETE_COMPLETE of %s", name, st, err, id)
		}
	}
	if _, err := e.m.Wait(t.Context(), "core-never"); !errors.Is(err, stacks.ErrNotFound) {
		t.Errorf("Wait on a stack that never existed = %v, want ErrNotFound", err)
	}
}

// Of several deleted stacks of one name, the latest deletion counts; a
// live stack of that name wins over all of them.
func TestWaitPicksLatestDeletion(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.StackPageSize = 1
	first := e.fake.Seed(cfnfake.Seed{Name: "core-g", Status: "DELETE_COMPLETE", Tags: groupTags("core", "g")})
	e.fake.Clock.Advance(2 * time.Hour)
	second := e.fake.Seed(cfnfake.Seed{Name: "core-g", Status: "DELETE_COMPLETE", Tags: groupTags("core", "g")})
	st, err := e.m.Wait(t.Context(), "core-g")
	if err != nil || st.ID != second || st.ID == first {
		t.Fatalf("Wait = %+v, %v; want the deletion of %s", st, err, second)
	}
	live := e.fake.Seed(cfnfake.Seed{Name: "core-g", Tags: groupTags("core", "g")})
	if st, err := e.m.Wait(t.Context(), "core-g"); err != nil || st.ID != live || st.Status != "CREATE_COMPLETE" {
		t.Errorf("Wait with a live stack = %+v, %v", st, err)
	}
}

// Wait on a deletion still running follows it to the end; one that failed
// is a failure.
func TestWaitOnDeletionInProgressAndFailed(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.Seed(cfnfake.Seed{Name: "core-g", Tags: groupTags("core", "g"), Resources: groupResources})
	e.fake.Script("core-g", cfnfake.Delete,
		cfnfake.Step{Status: "DELETE_IN_PROGRESS"},
		cfnfake.Step{At: 30 * time.Second, Status: "DELETE_COMPLETE"})
	if _, err := e.fake.Client().DeleteStack(t.Context(), &cloudformation.DeleteStackInput{StackName: aws.String("core-g")}); err != nil {
		t.Fatal(err)
	}
	if st, err := e.m.Wait(t.Context(), "core-g"); err != nil || st.Status != "DELETE_COMPLETE" {
		t.Errorf("Wait during delete = %+v, %v", st, err)
	}

	e.fake.Seed(cfnfake.Seed{Name: "core-h", Tags: groupTags("core", "h"), Resources: groupResources})
	e.fake.Script("core-h", cfnfake.Delete, cfnfake.DeleteFails(20*time.Second, asg, "Resource has dependencies", lt)...)
	if _, err := e.fake.Client().DeleteStack(t.Context(), &cloudformation.DeleteStackInput{StackName: aws.String("core-h")}); err != nil {
		t.Fatal(err)
	}
	st, err := e.m.Wait(t.Context(), "core-h")
	var oe *stacks.OperationError
	if !errors.As(err, &oe) || st == nil || st.Status != "DELETE_FAILED" {
		t.Errorf("Wait on a failing delete = %+v, %v", st, err)
	}
}

// A stack's own resource by logical ID: its physical ID, or ErrNoResource.
func TestResourceByLogicalID(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.Seed(cfnfake.Seed{Name: "core", Tags: coreTags("core"), Resources: []cfnfake.Resource{
		{LogicalID: "Bucket", Type: "AWS::S3::Bucket", PhysicalID: "core-bucket-1a2b3c"},
	}})
	r, err := e.m.Resource(t.Context(), "core", "Bucket")
	if err != nil || r.PhysicalID != "core-bucket-1a2b3c" || r.ResourceType != "AWS::S3::Bucket" || r.Status != "CREATE_COMPLETE" {
		t.Errorf("Resource = %+v, %v", r, err)
	}
	if _, err := e.m.Resource(t.Context(), "core", "Queue"); !errors.Is(err, stacks.ErrNoResource) {
		t.Errorf("missing resource: %v", err)
	}
	if _, err := e.m.Resource(t.Context(), "nope", "Bucket"); !errors.Is(err, stacks.ErrNotFound) {
		t.Errorf("missing stack: %v", err)
	}
}

func paramsOf(m map[string]string) []cfntypes.Parameter {
	var out []cfntypes.Parameter
	for k, v := range m {
		out = append(out, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	return out
}
