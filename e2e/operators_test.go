package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// motoCaller is the IAM user moto's GetCallerIdentity names: every
// command here runs as it.
const motoCaller = "arn:aws:iam::123456789012:user/moto"

// The core records its operators: by default the principal that created
// it; named with --operators; changed by update-core. A caller who is not
// one is refused before anything reaches the queue or a manager, with
// the command that would add it.
func TestOperators(t *testing.T) {
	parallel(t)
	c, _ := newCluster(t)
	operators := func(stack string) string {
		return strings.Join(spec.SplitList(describeStackParam(t, c, stack, names.ParamOperators)), ",")
	}
	if got := operators("core"); got != motoCaller {
		t.Errorf("default operators %q, want the creator %s", got, motoCaller)
	}

	// Another cluster, whose operators leave moto's caller out.
	admin := "arn:aws:iam::123456789012:role/ops/Admin"
	must(t, "create-core", "other", "--operators", admin, "-q")
	if got := operators("other"); got != admin {
		t.Errorf("operators %q, want %s", got, admin)
	}
	q := sqsClient(t)
	queue := stackResource(t, c, "other", names.ResourceLifecycleQueue)
	want := "you are not an operator of cluster other: clusterctl update-core other --operators " + admin + "," + motoCaller
	for _, args := range [][]string{{"backup", "-j", "other"}, {"docker", "-j", "other", "--", "node", "ls"}, {"shell", "-j", "other"}} {
		r := clusterctl(t, args...)
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s by a non-operator: %s\nwant exit 1 and %q", strings.Join(args, " "), r, want)
		}
	}
	if msg := receive(t, q, queue); msg != nil {
		t.Errorf("a non-operator's request reached the queue: %s", *msg.Body)
	}

	// export and render show the operators.
	if r := must(t, "export", "other"); !strings.Contains(r.stdout, "operators:") || !strings.Contains(r.stdout, admin) {
		t.Errorf("export:\n%s", r)
	}
	if r := must(t, "render", "core", "other", "--operators", admin, "--parameters", "-o", "json"); !strings.Contains(r.stdout, admin) {
		t.Errorf("render core --parameters:\n%s", r)
	}

	// Added by update-core, the caller's request goes through.
	r := must(t, "update-core", "other", "--operators", admin+","+motoCaller, "--yes", "-q")
	if got := operators("other"); got != admin+","+motoCaller {
		t.Errorf("operators after update-core %q (%s)", got, r)
	}
	if r := must(t, "backup", "-j", "other"); !strings.Contains(r.stdout, "Asked the managers of cluster other for a backup") {
		t.Errorf("backup by an operator:\n%s", r)
	}
	if msg := receive(t, q, queue); msg == nil {
		t.Error("an operator's request is not on the queue")
	}
}

// A bad --operators is refused before anything is read or created: one
// line, exit 2.
func TestOperatorsRefused(t *testing.T) {
	parallel(t)
	resetMoto(t)
	for _, tc := range []struct{ value, want string }{
		{"arn:aws:sts::123456789012:assumed-role/Admin/alice", "a session's ARN; give its role's"},
		{"arn:aws:iam::123456789012:role/*", "no wildcards"},
		{"alice", "expected an IAM role's or user's ARN"},
		{"", "no operator given"},
	} {
		r := clusterctl(t, "create-core", "core", "--operators", tc.value, "-q")
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("--operators %q: %s\nwant exit 2 and one line with %q", tc.value, r, tc.want)
		}
	}
	c := newClients(t)
	if out, err := c.cfn.ListStacks(context.Background(), &cloudformation.ListStacksInput{}); err != nil || len(out.StackSummaries) != 0 {
		t.Errorf("stacks after the refusals: %+v, %v", out, err)
	}
}
