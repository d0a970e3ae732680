package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// holdProxy forwards to moto, and runs hook once, before forwarding the
// first request whose body contains match: a race made deterministic.
type holdProxy struct {
	match string
	hook  func()
	once  sync.Once
}

func (p *holdProxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if strings.Contains(string(body), p.match) {
			p.once.Do(p.hook)
		}
		next.ServeHTTP(w, r)
	})
}

// Two update-group runs on one group: the one that read the group first
// does not revert the other's change. Here the second run lands between
// the first one's read of the deployed group and its change set: the first
// is refused, and the group keeps the second's change.
func TestUpdateGroupDoesNotRevertAConcurrentUpdate(t *testing.T) {
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	must(t, "add-agents", "-n", "g", "-t", "r3.large", "-j", "core", "-q")

	target, _ := url.Parse(endpoint)
	var other result
	p := &holdProxy{match: "Action=GetTemplate&StackName=core-g", hook: func() {
		other = clusterctl(t, "update-group", "-n", "g", "-j", "core", "-c", "3", "-q")
	}}
	srv := httptest.NewServer(p.handler(httputil.NewSingleHostReverseProxy(target)))
	defer srv.Close()

	r := clusterctlAt(t, srv.URL, "update-group", "-n", "g", "-j", "core", "-t", "r5.large", "-q")
	if other.code != 0 {
		t.Fatalf("the concurrent update failed:\n%s", other)
	}
	if r.code != 1 || !strings.Contains(r.stderr, `stack "core-g" changed since it was read`) || !strings.Contains(r.stderr, "nothing was applied") {
		t.Errorf("the update that read first:\n%s", r)
	}
	asg := groupASG(t, c, "core", "g")
	if d := aws.ToInt32(asg.DesiredCapacity); d != 3 {
		t.Errorf("desired capacity %d, want the concurrent update's 3", d)
	}
	if typ := describeStackParam(t, c, "core-g", "InstanceType"); typ != "r3.large" {
		t.Errorf("instance type %s, want r3.large (the refused update changed nothing)", typ)
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
