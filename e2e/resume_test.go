package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/clusterctl/clusterctl/internal/cfnfake"
)

// Ctrl-C while delete-core --cascade deletes the groups names the command
// that finishes the job; `wait CLUSTER` meanwhile follows the group
// deletions to their end instead of reporting the untouched core; the
// re-run converges, and `wait` on the deleted cluster reports the deletion.
func TestInterruptedCascadeResumes(t *testing.T) {
	parallel(t)
	resetMoto(t) // Auto Scaling and S3 calls go to an empty moto account
	fake := cfnfake.New(t)
	fake.Seed(cfnfake.Seed{Name: "core", Tags: map[string]string{"clusterctl:cluster": "core", "clusterctl:role": "core", "clusterctl:group": "control"}})
	fake.Seed(cfnfake.Seed{
		Name: "core-g", Tags: map[string]string{"clusterctl:cluster": "core", "clusterctl:role": "agents", "clusterctl:group": "g"},
		Resources: []cfnfake.Resource{{LogicalID: "AutoScalingGroup", Type: "AWS::AutoScaling::AutoScalingGroup"}},
	})
	fake.Script("core-g", cfnfake.Delete,
		cfnfake.Step{Status: "DELETE_IN_PROGRESS"},
		cfnfake.Step{At: time.Hour, Status: "DELETE_COMPLETE"})
	// CloudFormation is the scripted fake; every other service is moto.
	environ := append(envOf(t), "AWS_ENDPOINT_URL_CLOUDFORMATION="+fake.URL)
	r := runInterrupted(t, environ, seen(fake, "DeleteStack"), "delete-core", "core", "--cascade", "--yes")
	if r.code != 130 || !strings.Contains(r.stderr, "finish with: clusterctl delete-core core --cascade") {
		t.Errorf("interrupted cascade:\n%s", r)
	}
	if st := fake.Status("core"); st != "CREATE_COMPLETE" {
		t.Fatalf("core is %s after the interrupt, want untouched", st)
	}

	// wait follows the group's deletion, not just the core's old status.
	out, err := runWhileAdvancing(t, environ, fake, time.Hour, "wait", "core")
	if err != nil {
		t.Errorf("wait core: %v\n%s", err, out)
	}
	for _, want := range []string{"core-g: DELETE_COMPLETE", "core: CREATE_COMPLETE"} {
		if !strings.Contains(out, want) {
			t.Errorf("wait core does not report %q:\n%s", want, out)
		}
	}

	// The re-run finishes the job (the fake's clock stands still for the
	// binary, so the core's deletion is scripted to take no time).
	fake.Script("core", cfnfake.Delete, cfnfake.Step{Status: "DELETE_IN_PROGRESS"}, cfnfake.Step{Status: "DELETE_COMPLETE"})
	if r := clusterctlEnv(t, environ, "delete-core", "core", "--cascade", "--yes", "-q"); r.code != 0 {
		t.Fatalf("re-run of delete-core:\n%s", r)
	}
	if r := clusterctlEnv(t, environ, "wait", "core"); r.code != 0 || !strings.Contains(r.stdout, "core: DELETE_COMPLETE") {
		t.Errorf("wait on the deleted cluster:\n%s", r)
	}
}

// runKilled runs the binary through a proxy that kills it (kill -9) once
// the call matched was answered: the run dies with its lease held and its
// work half done.
func runKilled(t *testing.T, match func(*http.Request, string) bool, args ...string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	p := newRaceProxy(t, &raceProxy{match: match, after: true, hold: func() { cmd.Process.Kill() }})
	cmd.Env = append(envOf(t), "AWS_ENDPOINT_URL="+p.URL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("clusterctl %s was not killed: %v\n%s", strings.Join(args, " "), err, out.String())
	}
}

// remove-group killed right after DeleteStack leaves the group's node
// configuration and its lease behind. Run again, it takes the dead run's
// lease over, cleans up and exits 0 saying the group was already
// removed; a group that never was is still not found.
func TestRemoveGroupKilledAfterDeleteStack(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t, "g")

	runKilled(t, call("DeleteStack", "core-g"), "remove-group", "-n", "g", "-j", "core", "--yes", "-q")
	if left := c.stackNames(t); !sameSet(left, []string{"core"}) {
		t.Fatalf("stacks after the killed run: %v", left)
	}
	if n, l := objectsUnder(t, c, bucket, "join/groups/g/"), objectsUnder(t, c, bucket, "locks/"); n != 1 || l != 1 {
		t.Fatalf("after the killed run: %d node configurations, %d leases; want the 1 and 1 it left", n, l)
	}

	r := must(t, "remove-group", "-n", "g", "-j", "core", "--yes")
	if !strings.Contains(r.stdout, "Group g of cluster core was already removed (core-g: DELETE_COMPLETE); cleaned up after it") {
		t.Errorf("re-run of remove-group:\n%s", r)
	}
	if n, l := objectsUnder(t, c, bucket, "join/groups/g/"), objectsUnder(t, c, bucket, "locks/"); n != 0 || l != 0 {
		t.Errorf("after the re-run: %d node configurations, %d leases left", n, l)
	}
	if r := clusterctl(t, "remove-group", "-n", "nosuch", "-j", "core", "--yes"); r.code != 1 || !strings.Contains(r.stderr, `group "nosuch" not found`) {
		t.Errorf("remove-group of a group that never was:\n%s", r)
	}
}

// delete-core --cascade killed after it deleted a group: run again, it
// takes the dead run's lease over and finishes the job.
func TestDeleteCoreKilledDuringCascade(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t, "g", "h")

	runKilled(t, call("DeleteStack", "core-g"), "delete-core", "core", "--cascade", "--yes", "-q")
	if left := c.stackNames(t); !slices.Contains(left, "core") {
		t.Fatalf("stacks after the killed run: %v, want the core still there", left)
	}
	if l := objectsUnder(t, c, bucket, "locks/"); l != 1 {
		t.Fatalf("%d leases after the killed run, want the 1 it left", l)
	}
	r := must(t, "delete-core", "core", "--cascade", "--yes")
	if !strings.Contains(r.stdout, "Deleted cluster core") {
		t.Errorf("re-run of delete-core:\n%s", r)
	}
	if left := c.stackNames(t); len(left) != 0 {
		t.Errorf("stacks left: %v", left)
	}
	if _, err := c.s3.HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		t.Errorf("bucket %s left", bucket)
	}
	if r := must(t, "delete-core", "core", "--cascade", "--yes"); !strings.Contains(r.stdout, "Cluster core was already deleted (core: DELETE_COMPLETE)") {
		t.Errorf("delete-core of a deleted cluster:\n%s", r)
	}
}

// The core's stack retains its bucket (the managers write to it until
// they are terminated), and delete-core deletes it after the stack, with
// what was written meanwhile; interrupted after the stack was gone, a
// re-run deletes the bucket left behind.
func TestDeleteCoreDeletesRetainedBucket(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	bucket := outputs(describeStack(t, c, "core"))["BucketName"]
	// A manager's last word, after the bucket was emptied.
	if _, err := c.s3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("status/swarm.json"), Body: strings.NewReader("{}")}); err != nil {
		t.Fatal(err)
	}
	deleteStackAndWait(t, c, "core")
	if _, err := c.s3.HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("the stack did not retain its bucket: %v", err)
	}
	r := must(t, "delete-core", "core", "--yes", "-o", "json")
	var d struct{ Status, Bucket string }
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || d.Status != "DELETE_COMPLETE" || d.Bucket != bucket {
		t.Errorf("delete-core after the stack was gone: %+v, %v\n%s", d, err, r)
	}
	if _, err := c.s3.HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		t.Errorf("bucket %s left", bucket)
	}
	if r := must(t, "delete-core", "core", "--yes"); !strings.Contains(r.stdout, "Cluster core was already deleted (core: DELETE_COMPLETE)") || strings.Contains(r.stdout, "bucket") {
		t.Errorf("delete-core of a deleted cluster with no bucket left:\n%s", r)
	}
}
