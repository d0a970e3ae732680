package e2e

import (
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultProxy sits in front of moto and answers a share of requests itself
// with throttling or a server error, each in its service's own error format,
// before they reach moto (so a retry is always safe), and delays the rest.
type faultProxy struct {
	rng                     *rand.Rand
	throttleRate, errorRate float64
	maxLatency              time.Duration

	mu       sync.Mutex
	seen     map[string]int // service → requests seen
	injected map[string]int // service → faults answered
	passed   map[string]int // service → requests passed to moto
}

var credentialScope = regexp.MustCompile(`Credential=[^/]+/[^/]+/[^/]+/([^/]+)/aws4_request`)

func serviceOf(r *http.Request) string {
	if m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		return m[1]
	}
	return "unknown"
}

// throttleResponse is what each service says when it throttles.
func throttleResponse(service string) (status int, contentType, body string) {
	switch service {
	case "ec2":
		return 503, "text/xml", `<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>fault</RequestID></Response>`
	case "s3":
		return 503, "application/xml", `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>fault</RequestId></Error>`
	case "ssm":
		return 400, "application/x-amz-json-1.1", `{"__type":"ThrottlingException","message":"Rate exceeded"}`
	default: // cloudformation, autoscaling, iam, sts: the query protocol
		return 400, "text/xml", `<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>fault</RequestId></ErrorResponse>`
	}
}

func (p *faultProxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		svc := serviceOf(r)
		p.mu.Lock()
		roll := p.rng.Float64()
		delay := time.Duration(p.rng.Int63n(int64(p.maxLatency) + 1))
		// Every service meets both kinds of fault at least once, whatever
		// the dice say: its first request is throttled, its second fails.
		switch p.seen[svc]++; p.seen[svc] {
		case 1:
			roll = 0
		case 2:
			roll = p.throttleRate
		}
		p.mu.Unlock()
		switch {
		case roll < p.throttleRate:
			status, ct, body := throttleResponse(svc)
			p.count(p.injected, svc)
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(status)
			fmt.Fprint(w, body)
			return
		case roll < p.throttleRate+p.errorRate:
			p.count(p.injected, svc)
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "internal error")
			return
		}
		time.Sleep(delay)
		p.count(p.passed, svc)
		next.ServeHTTP(w, r)
	})
}

func (p *faultProxy) count(m map[string]int, svc string) {
	p.mu.Lock()
	m[svc]++
	p.mu.Unlock()
}

// The whole lifecycle goes through with 20% of requests throttled and 5%
// failing, and leaves exactly the stacks it should at every step.
func TestLifecycleUnderFaults(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	target, _ := url.Parse(endpointOf(t))
	p := &faultProxy{
		rng: rand.New(rand.NewSource(7)), throttleRate: 0.20, errorRate: 0.05, maxLatency: 5 * time.Millisecond,
		seen: map[string]int{}, injected: map[string]int{}, passed: map[string]int{},
	}
	srv := httptest.NewServer(p.handler(httputil.NewSingleHostReverseProxy(target)))
	defer srv.Close()
	via := func(args ...string) result {
		t.Helper()
		return must(t, append([]string{"--endpoint-url", srv.URL, "-q"}, args...)...)
	}

	via("create-core", "core")
	via("add-agents", "-n", "r3", "-t", "r3.large", "-j", "core", "-c", "2", "-m", "role=worker")
	via("add-agents", "-n", "c5", "-t", "c5.large", "-j", "core")
	if names := c.stackNames(t); !sameSet(names, []string{"core", "core-r3", "core-c5"}) {
		t.Fatalf("stacks after adding groups = %v", names)
	}
	groups := decode[[]group](t, via("list-groups", "-j", "core", "-o", "json"))
	if len(groups) != 2 {
		t.Errorf("list-groups = %+v", groups)
	}
	nodes := decode[[]node](t, via("list-nodes", "-j", "core", "-o", "json"))
	if len(nodes) != 4 {
		t.Errorf("list-nodes found %d nodes, want 4", len(nodes))
	}
	via("update-group", "-n", "r3", "-j", "core", "-c", "3", "-m", "role=worker,tier=memory", "--yes")
	if d := groupASG(t, c, "core", "r3").DesiredCapacity; d == nil || *d != 3 {
		t.Errorf("desired after update = %v", d)
	}
	// The same again: no change, found by comparing with what is deployed.
	if r := via("update-group", "-n", "r3", "-j", "core", "-c", "3"); !strings.Contains(r.stderr, "No changes") {
		t.Errorf("identical update under faults:\n%s", r)
	}
	via("remove-group", "-n", "c5", "-j", "core", "--yes")
	if names := c.stackNames(t); !sameSet(names, []string{"core", "core-r3"}) {
		t.Fatalf("stacks after remove-group = %v", names)
	}
	via("delete-core", "core", "--cascade", "--yes")
	if names := c.stackNames(t); len(names) != 0 {
		t.Fatalf("stacks after delete-core = %v", names)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	t.Logf("faults injected %v, requests passed %v", p.injected, p.passed)
	for _, svc := range []string{"cloudformation", "ec2", "autoscaling", "s3", "ssm"} {
		if p.injected[svc] < 2 {
			t.Errorf("no fault was injected into %s: the test proves nothing for it", svc)
		}
	}
	if !strings.Contains(fmt.Sprint(p.passed), "cloudformation") {
		t.Error("no CloudFormation request reached moto")
	}
}
