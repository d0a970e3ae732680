package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
)

// runInterrupted sends SIGINT once ready holds (the run has reached the
// point the test interrupts: polled, since a loaded machine may take its
// time to get there, and an interrupt sent before it tests something
// else), and returns what the binary did.
func runInterrupted(t *testing.T, environ []string, ready func() bool, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = environ
	var out, errOut lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !ready(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("clusterctl never got to where the test interrupts it\nstderr:\n%s", errOut.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("clusterctl did not stop within 10s of SIGINT\nstderr:\n%s", errOut.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// seen is ready once the run has seen what action did: two calls after
// it (the waiter's calls follow one another, so the first one's answer is
// in).
func seen(fake *cfnfake.Server, action string) func() bool {
	return func() bool {
		calls := fake.Log("")
		for i, c := range calls {
			if c.Action == action {
				return i < len(calls)-2
			}
		}
		return false
	}
}

// answered is ready once the fake has had two more calls than when it was
// made: the run's calls follow one another, so the first one's answer is
// in.
func answered(fake *cfnfake.Server) func() bool {
	n := len(fake.Log(""))
	return func() bool { return len(fake.Log("")) >= n+2 }
}

// Ctrl-C while a group is being deleted stops waiting (CloudFormation
// carries on), exits 130 and says how to re-attach; `clusterctl wait`
// re-attaches and returns the operation's outcome.
func TestInterruptAndReattach(t *testing.T) {
	parallel(t)
	fake := cfnfake.New(t)
	environ := seedFakeCore(t, fake, "core")
	fake.Seed(cfnfake.Seed{
		Name: "core-g", Tags: map[string]string{"clusterctl:cluster": "core", "clusterctl:role": "agents", "clusterctl:group": "g"},
		Resources: []cfnfake.Resource{{LogicalID: "AutoScalingGroup", Type: "AWS::AutoScaling::AutoScalingGroup"}},
	})
	// The delete takes an hour of the fake's clock: until the test moves it.
	fake.Script("core-g", cfnfake.Delete,
		cfnfake.Step{At: 0, Status: "DELETE_IN_PROGRESS", Events: []cfnfake.Ev{{LogicalID: "AutoScalingGroup", Type: "AWS::AutoScaling::AutoScalingGroup", Status: "DELETE_IN_PROGRESS"}}},
		cfnfake.Step{At: time.Hour, Status: "DELETE_COMPLETE", Events: []cfnfake.Ev{{LogicalID: "AutoScalingGroup", Type: "AWS::AutoScaling::AutoScalingGroup", Status: "DELETE_COMPLETE"}}},
	)

	r := runInterrupted(t, environ, seen(fake, "DeleteStack"), "remove-group", "-n", "g", "-j", "core", "--yes")
	if r.code != 130 {
		t.Errorf("exit %d, want 130\n%s", r.code, r)
	}
	// What finishes the job is remove-group itself: it cleans up after
	// the deletion.
	for _, want := range []string{"(DELETE_IN_PROGRESS): interrupted; CloudFormation carries on", "finish with: clusterctl remove-group -n g -j core"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("message does not say %q:\n%s", want, r.stderr)
		}
	}
	noRawContextError(t, r)
	if st := fake.Status("core-g"); st != "DELETE_IN_PROGRESS" {
		t.Errorf("stack status after the interrupt = %q, want DELETE_IN_PROGRESS (the delete goes on)", st)
	}
	if n := len(fake.Log("DeleteStack")); n != 1 {
		t.Errorf("DeleteStack called %d times, want 1", n)
	}

	// Following the events as JSON: Ctrl-C still prints the events seen, as
	// one array, and exits 130.
	r = runInterrupted(t, append(envOf(t), "AWS_ENDPOINT_URL="+fake.URL), answered(fake), "events", "core", "-n", "g", "--follow", "-o", "json")
	var evs []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &evs); err != nil || len(evs) == 0 || r.code != 130 {
		t.Errorf("interrupted events --follow -o json (%v):\n%s", err, r)
	} else if last := evs[len(evs)-1]; last["status"] != "DELETE_IN_PROGRESS" || last["logicalId"] == nil {
		t.Errorf("last event %v", last)
	}

	// Interrupting `wait` itself behaves the same.
	r = runInterrupted(t, append(envOf(t), "AWS_ENDPOINT_URL="+fake.URL), answered(fake), "wait", "core", "-n", "g")
	if r.code != 130 || !strings.Contains(r.stderr, "clusterctl wait core -n g") {
		t.Errorf("interrupted wait:\n%s", r)
	}

	// --timeout stops waiting the same way, as a failure (exit 1).
	r = clusterctlAt(t, fake.URL, "wait", "core", "-n", "g", "--timeout", "1s")
	if r.code != 1 || !strings.Contains(r.stderr, "clusterctl wait core -n g") || !strings.Contains(r.stderr, "--timeout reached; CloudFormation carries on") {
		t.Errorf("wait --timeout:\n%s", r)
	}
	noRawContextError(t, r)

	// Re-attach while the delete goes on; CloudFormation finishes meanwhile
	// and wait returns with the outcome.
	out, err := runWhileAdvancing(t, append(envOf(t), "AWS_ENDPOINT_URL="+fake.URL), fake, time.Hour, "wait", "core", "-n", "g")
	if err != nil {
		t.Errorf("wait while the delete finished: %v\n%s", err, out)
	}
	if !strings.Contains(out, "DELETE_COMPLETE") {
		t.Errorf("wait output:\n%s", out)
	}

	// Once the stack is gone, wait still reports the deletion's outcome.
	r = clusterctlAt(t, fake.URL, "wait", "core", "-n", "g")
	if r.code != 0 || !strings.Contains(r.stdout, "core-g: DELETE_COMPLETE") {
		t.Errorf("wait on a deleted group:\n%s", r)
	}
	// A group that never existed is not found.
	r = clusterctlAt(t, fake.URL, "wait", "core", "-n", "nosuch")
	if r.code != 1 || !strings.Contains(r.stderr, `group "nosuch" not found`) {
		t.Errorf("wait on a group that never existed:\n%s", r)
	}
}

// A failed group is never treated as healthy: re-attaching to a create that
// rolls back exits 1 with the root cause and what to do next.
func TestWaitReportsRootCause(t *testing.T) {
	parallel(t)
	fake := cfnfake.New(t)
	environ := seedFakeCore(t, fake, "core")
	client := fake.Client()
	asg := cfnfake.Res{LogicalID: "AutoScalingGroup", Type: "AWS::AutoScaling::AutoScalingGroup"}
	lt := cfnfake.Res{LogicalID: "LaunchTemplate", Type: "AWS::EC2::LaunchTemplate"}
	fake.Script("core-g", cfnfake.Create, cfnfake.CreateRollback(5*time.Second, asg, "Received 0 SUCCESS signal(s) out of 2. Unable to satisfy 100% MinSuccessfulInstancesPercent requirement", lt)...)
	if _, err := client.CreateStack(t.Context(), createInput("core-g", "core", "g")); err != nil {
		t.Fatal(err)
	}
	fake.Clock.Advance(time.Hour)
	r := clusterctlAt(t, fake.URL, "wait", "core", "-n", "g")
	if r.code != 1 {
		t.Errorf("exit %d, want 1\n%s", r.code, r)
	}
	for _, want := range []string{"ROLLBACK_COMPLETE", "AutoScalingGroup", "0 SUCCESS signal", "--replace-failed"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not mention %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(strings.SplitN(r.stderr, "\n", 2)[0], "cancelled") {
		t.Errorf("first line reports the cancellation noise, not the root cause:\n%s", r.stderr)
	}
	// add-agents on the dead group refuses and names the way out.
	r = clusterctlEnv(t, environ, "update-group", "-n", "g", "-j", "core", "-c", "3")
	if r.code != 1 || !strings.Contains(r.stderr, "ROLLBACK_COMPLETE") || !strings.Contains(r.stderr, "remove-group -n g -j core") {
		t.Errorf("update-group on a dead group:\n%s", r)
	}
}

// noRawContextError fails when Go's context errors reach the user verbatim.
func noRawContextError(t *testing.T, r result) {
	t.Helper()
	for _, raw := range []string{"context canceled", "context deadline exceeded"} {
		if strings.Contains(r.stderr, raw) {
			t.Errorf("%q reached the user:\n%s", raw, r.stderr)
		}
	}
}

// runWhileAdvancing starts the binary, lets it begin waiting, moves the
// fake's clock by d (the operation it waits on ends), and returns its
// combined output once it exits. It begins waiting a second after its
// first call reached the fake: on a busy machine (tests side by side) the
// binary may take longer than that to start.
func runWhileAdvancing(t *testing.T, environ []string, fake *cfnfake.Server, d time.Duration, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = environ
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	before := fake.Calls("")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for deadline := time.Now().Add(time.Minute); fake.Calls("") == before && time.Now().Before(deadline); {
		select {
		case err := <-done:
			return out.String(), err
		case <-time.After(50 * time.Millisecond):
		}
	}
	time.Sleep(time.Second)
	fake.Clock.Advance(d)
	err := <-done
	return out.String(), err
}

// seedFakeCore seeds the core of cluster into the CloudFormation fake with
// its bucket on moto, where the leases live, and returns the environment
// of a run that speaks to the fake for CloudFormation and to moto for the
// rest.
func seedFakeCore(t *testing.T, fake *cfnfake.Server, cluster string) []string {
	t.Helper()
	bucket := fmt.Sprintf("%s-bucket-%d", strings.ToLower(cluster), time.Now().UnixNano())
	c := newClients(t)
	if _, err := c.s3.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	// Tagged as the core's template tags it: that proves it the cluster's.
	if _, err := c.s3.PutBucketTagging(t.Context(), &s3.PutBucketTaggingInput{Bucket: aws.String(bucket), Tagging: &s3types.Tagging{TagSet: []s3types.Tag{
		{Key: aws.String("clusterctl:cluster"), Value: aws.String(cluster)}, {Key: aws.String("clusterctl:role"), Value: aws.String("core")}}}}); err != nil {
		t.Fatal(err)
	}
	fake.Seed(cfnfake.Seed{Name: cluster,
		Tags:      map[string]string{"clusterctl:cluster": cluster, "clusterctl:role": "core", "clusterctl:group": "control"},
		Resources: []cfnfake.Resource{{LogicalID: "Bucket", Type: "AWS::S3::Bucket", PhysicalID: bucket}}})
	return append(envOf(t), "AWS_ENDPOINT_URL_CLOUDFORMATION="+fake.URL)
}

func createInput(name, cluster, group string) *cloudformation.CreateStackInput {
	return &cloudformation.CreateStackInput{
		StackName:    aws.String(name),
		TemplateBody: aws.String(`{"Resources":{}}`),
		Tags: []cfntypes.Tag{
			{Key: aws.String("clusterctl:cluster"), Value: aws.String(cluster)},
			{Key: aws.String("clusterctl:role"), Value: aws.String("agents")},
			{Key: aws.String("clusterctl:group"), Value: aws.String(group)},
		},
	}
}
