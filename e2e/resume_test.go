package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
)

// Ctrl-C while delete-core --cascade deletes the groups names the command
// that finishes the job; `wait CLUSTER` meanwhile follows the group
// deletions to their end instead of reporting the untouched core; the
// re-run converges, and `wait` on the deleted cluster reports the deletion.
func TestInterruptedCascadeResumes(t *testing.T) {
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
	environ := append(env(), "AWS_ENDPOINT_URL_CLOUDFORMATION="+fake.URL)
	r := runInterruptedEnv(t, environ, 1500*time.Millisecond, "delete-core", "core", "--cascade", "--yes")
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
