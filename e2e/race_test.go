package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// raceProxy stands between the binaries and moto. It makes a race
// deterministic: the first request that matches is held while hold runs
// (another command, landing in the middle of this one), then forwarded;
// with after, hold runs once the matching request was answered. It also
// serves S3 requests one at a time: S3 applies a conditional write
// atomically, moto checks and writes in two steps.
type raceProxy struct {
	match func(r *http.Request, body string) bool
	hold  func()
	after bool

	fired atomic.Bool
	s3    sync.Mutex
	URL   string
}

func newRaceProxy(t *testing.T, p *raceProxy) *raceProxy {
	t.Helper()
	target, _ := url.Parse(endpointOf(t))
	next := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if r.URL.Path != "/" { // S3, path-style; the other services post to /
			p.s3.Lock()
			defer p.s3.Unlock()
		}
		hit := p.match != nil && p.match(r, string(body)) && p.fired.CompareAndSwap(false, true)
		if hit && !p.after {
			p.hold()
		}
		next.ServeHTTP(w, r)
		if hit && p.after {
			p.hold()
		}
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// call matches a query-protocol call of action on stack (by name, or by
// the stack id that carries the name).
func call(action, stack string) func(*http.Request, string) bool {
	return func(_ *http.Request, body string) bool {
		return strings.Contains(body, "Action="+action+"&") &&
			(strings.Contains(body, "StackName="+stack+"&") || strings.HasSuffix(body, "StackName="+stack) || strings.Contains(body, "%2F"+stack+"%2F"))
	}
}

// heldBy checks that a refused run names the lease in its way: the
// command that holds it, who runs it and since when.
var heldBy = regexp.MustCompile("is locked by `([^`]+)` \\(.+@.+ \\(pid \\d+\\).*\\) since \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC \\(lease [0-9a-f]{12}\\)")

func checkHeld(t *testing.T, r result, holder string) {
	t.Helper()
	m := heldBy.FindStringSubmatch(r.stderr)
	if r.code != 1 || m == nil || !strings.HasPrefix(m[1], holder) {
		t.Errorf("want exit 1 naming the run of %q that holds the lease:\n%s", holder, r)
	}
}

// Two update-group runs on one group: the second fails fast, naming the
// first, which goes on; the group ends as the first made it, nothing of
// it reverted.
func TestConcurrentUpdateGroups(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	must(t, "add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "-q")

	var second result
	p := newRaceProxy(t, &raceProxy{match: call("CreateChangeSet", "core-g")})
	p.hold = func() { second = clusterctlAt(t, p.URL, "update-group", "-n", "g", "-j", "core", "-c", "3", "-q") }
	first := clusterctlAt(t, p.URL, "update-group", "-n", "g", "-j", "core", "-t", "r5.large", "-q", "--yes")
	if first.code != 0 {
		t.Fatalf("the first update:\n%s", first)
	}
	checkHeld(t, second, "update-group -n g -j core -t r5.large")
	if typ := describeStackParam(t, c, "core-g", "InstanceType"); typ != "r5.large" {
		t.Errorf("instance type %s, want r5.large", typ)
	}
	if d := aws.ToInt32(groupASG(t, c, "core", "g").DesiredCapacity); d != 1 {
		t.Errorf("desired capacity %d, want 1 (the refused run changed nothing)", d)
	}
	// Released at the end: the next run goes ahead.
	must(t, "update-group", "-n", "g", "-j", "core", "-c", "3", "-q")
}

// A change made behind clusterctl's back (no lease) between update-group's
// read of the group and its change set is not reverted: the update is
// refused, and the group keeps the other change.
func TestUpdateGroupDoesNotRevertAConcurrentUpdate(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	must(t, "add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "-q")

	p := newRaceProxy(t, &raceProxy{match: call("GetTemplate", "core-g"), hold: func() {
		st := describeStack(t, c, "core-g")
		var params []cfntypes.Parameter
		for _, p := range st.Parameters {
			if aws.ToString(p.ParameterKey) == "DesiredCapacity" {
				params = append(params, cfntypes.Parameter{ParameterKey: p.ParameterKey, ParameterValue: aws.String("3")})
				continue
			}
			params = append(params, cfntypes.Parameter{ParameterKey: p.ParameterKey, UsePreviousValue: aws.Bool(true)})
		}
		if _, err := c.cfn.UpdateStack(t.Context(), &cloudformation.UpdateStackInput{StackName: aws.String("core-g"), UsePreviousTemplate: aws.Bool(true), Parameters: params}); err != nil {
			t.Errorf("the other update: %v", err)
		}
	}})
	r := clusterctlAt(t, p.URL, "update-group", "-n", "g", "-j", "core", "-t", "r5.large", "-q", "--yes")
	if r.code != 1 || !strings.Contains(r.stderr, `stack "core-g" changed since it was read`) || !strings.Contains(r.stderr, "nothing was applied") {
		t.Errorf("the update that read first:\n%s", r)
	}
	if d := aws.ToInt32(groupASG(t, c, "core", "g").DesiredCapacity); d != 3 {
		t.Errorf("desired capacity %d, want the other update's 3", d)
	}
	if typ := describeStackParam(t, c, "core-g", "InstanceType"); typ != "r3.large" {
		t.Errorf("instance type %s, want r3.large (the refused update changed nothing)", typ)
	}
}

// add-agents landing while delete-core --cascade deletes the groups is
// refused; delete-core deletes everything it listed and leaves no group
// behind. And the other way round: delete-core landing while add-agents
// creates a group is refused, and the group is created.
func TestAddAgentsDuringCascade(t *testing.T) {
	parallel(t)
	c, _ := newCluster(t, "g")

	var add result
	p := newRaceProxy(t, &raceProxy{match: call("DeleteStack", "core-g")})
	p.hold = func() { add = clusterctlAt(t, p.URL, "add-agents", "-n", "h", "-t", "t3.small", "-j", "core", "-q") }
	del := clusterctlAt(t, p.URL, "delete-core", "core", "--cascade", "--yes", "-q")
	if del.code != 0 || !strings.Contains(del.stdout, "Deleted cluster core") {
		t.Fatalf("delete-core:\n%s", del)
	}
	checkHeld(t, add, "delete-core core --cascade --yes")
	if !strings.Contains(add.stderr, `cannot lock group "h" of cluster "core": the whole cluster is locked`) {
		t.Errorf("add-agents does not say the cluster is being deleted:\n%s", add)
	}
	if left := c.stackNames(t); len(left) != 0 {
		t.Errorf("stacks left after delete-core: %v", left)
	}

	must(t, "create-core", "core", "-q")
	var del2 result
	p = newRaceProxy(t, &raceProxy{match: call("CreateStack", "core-h")})
	p.hold = func() { del2 = clusterctlAt(t, p.URL, "delete-core", "core", "--cascade", "--yes", "-q") }
	if r := clusterctlAt(t, p.URL, "add-agents", "-n", "h", "-t", "t3.small", "-j", "core", "-q"); r.code != 0 {
		t.Fatalf("add-agents:\n%s", r)
	}
	checkHeld(t, del2, "add-agents -n h")
	if !strings.Contains(del2.stderr, `cannot lock cluster "core": group "h" is locked`) {
		t.Errorf("delete-core does not name the group in its way:\n%s", del2)
	}
	if left := c.stackNames(t); !sameSet(left, []string{"core", "core-h"}) {
		t.Errorf("stacks %v, want core and core-h", left)
	}
}

// remove-group racing a re-add of the same group: the re-add is refused
// while the removal runs, and once the removal is done the group is added
// again with its node configuration in place.
func TestRemoveGroupRacingReAdd(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t, "g")

	var add result
	p := newRaceProxy(t, &raceProxy{match: call("DeleteStack", "core-g"), after: true})
	p.hold = func() { add = clusterctlAt(t, p.URL, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-q") }
	if r := clusterctlAt(t, p.URL, "remove-group", "-n", "g", "-j", "core", "--yes", "-q"); r.code != 0 {
		t.Fatalf("remove-group:\n%s", r)
	}
	checkHeld(t, add, "remove-group -n g -j core --yes")
	if n := objectsUnder(t, c, bucket, "join/groups/g/"); n != 0 {
		t.Errorf("%d node configurations of g left after remove-group", n)
	}
	must(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-q")
	if n := objectsUnder(t, c, bucket, "join/groups/g/"); n != 1 {
		t.Errorf("%d node configurations of the re-added g, want 1", n)
	}
	if n := objectsUnder(t, c, bucket, "locks/"); n != 0 {
		t.Errorf("%d leases left in the bucket", n)
	}
}

func describeStackParam(t *testing.T, c clients, stack, key string) string {
	t.Helper()
	for _, p := range describeStack(t, c, stack).Parameters {
		if aws.ToString(p.ParameterKey) == key {
			return aws.ToString(p.ParameterValue)
		}
	}
	return ""
}
