package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A dead endpoint fails at once with one line naming it, after a bounded
// number of connection attempts (throttling and 5xx keep the full retry
// policy: TestLifecycleUnderFaults).
func TestDeadEndpoint(t *testing.T) {
	parallel(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()

	r := clusterctlAt(t, dead, "list-nodes", "-v")
	if r.code != 1 {
		t.Errorf("exit %d, want 1\n%s", r.code, r)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	want := "clusterctl: cannot reach AWS endpoint " + dead + ": connection refused (EC2.DescribeInstances, 3 attempts)"
	if last := lines[len(lines)-1]; last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
	if !strings.Contains(r.stderr, "aws calls: 1 (EC2.DescribeInstances=1)") {
		t.Errorf("call log:\n%s", r.stderr)
	}

	// Without -v: exactly one line.
	r = clusterctlAt(t, dead, "list-groups")
	if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "clusterctl: cannot reach AWS endpoint "+dead+": connection refused") {
		t.Errorf("list-groups on a dead endpoint:\n%s", r)
	}

	// A host name that does not resolve (.invalid never does).
	r = clusterctlAt(t, "http://clusterctl-test.invalid", "list-nodes")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "clusterctl: cannot reach AWS endpoint http://clusterctl-test.invalid: ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("list-nodes on an unknown host:\n%s", r)
	}
}

// An endpoint that accepts connections and never answers (a broken proxy,
// a half-open VPC endpoint): every command that reads AWS gives up after
// a few attempts, each bounded, with one line naming the endpoint and the
// call that got no answer. The bounds are lowered through their setting,
// which is the same code path as the defaults.
func TestSilentEndpoint(t *testing.T) {
	parallel(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	silent := "http://" + l.Addr().String()
	environ := append(envOf(t), "AWS_ENDPOINT_URL="+silent, "CLUSTERCTL_AWS_RESPONSE_TIMEOUT=300ms")
	want := regexp.MustCompile(`^clusterctl: AWS endpoint ` + regexp.QuoteMeta(silent) + `: no response to [A-Za-z0-9]+\.[A-Za-z0-9]+ in 300ms \(3 attempts\)\n$`)
	for _, args := range [][]string{
		{"list-nodes", "-j", "core"},
		{"list-groups", "-j", "core"},
		{"describe", "core"},
		{"create-core", "core"},
		{"add-agents", "-n", "g", "-t", "t3.small", "-j", "core"},
	} {
		t.Run(args[0], func(t *testing.T) {
			// The test's own end, should the bound not hold: a liveness
			// limit, far above what the bound allows.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, args...)
			cmd.Env = environ
			r := runCommand(t, cmd)
			if ctx.Err() != nil {
				t.Fatalf("clusterctl %s still waiting on a silent endpoint after 2 minutes:\n%s", strings.Join(args, " "), r)
			}
			if r.code != 1 || !want.MatchString(r.stderr) || r.stdout != "" {
				t.Errorf("clusterctl %s on a silent endpoint:\n%s\nwant exit 1 and one line matching %s", strings.Join(args, " "), r, want)
			}
		})
	}

	// A setting that is not a duration is bad input.
	r := clusterctlEnv(t, append(envOf(t), "CLUSTERCTL_AWS_RESPONSE_TIMEOUT=30"), "list-nodes")
	if r.code != 2 || r.stderr != "clusterctl: CLUSTERCTL_AWS_RESPONSE_TIMEOUT=\"30\": not a positive duration (e.g. 20s, 500ms)\n" {
		t.Errorf("a bad bound:\n%s", r)
	}
}

// An endpoint that stops answering while a command waits on the stack it
// created: the command ends with the one line, then says how to follow
// the operation, which carries on in CloudFormation.
func TestEndpointGoesSilentDuringAWait(t *testing.T) {
	parallel(t)
	resetMoto(t)
	target, err := url.Parse(endpointOf(t))
	if err != nil {
		t.Fatal(err)
	}
	moto := httputil.NewSingleHostReverseProxy(target)
	var silent atomic.Bool
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if silent.Load() {
			// Read, never answered: until the client gives up (the server
			// notices once the body is read) or the test ends.
			io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		moto.ServeHTTP(w, r)
		if strings.Contains(string(body), "Action=CreateStack") || strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".CreateStack") {
			silent.Store(true)
		}
	}))
	defer srv.Close()
	defer close(done)

	// moto creates the whole stack inside CreateStack: the bound leaves it
	// time to, on a loaded machine too.
	r := clusterctlEnv(t, append(envOf(t), "AWS_ENDPOINT_URL="+srv.URL, "CLUSTERCTL_AWS_RESPONSE_TIMEOUT=8s"), "create-core", "core", "-q")
	want := regexp.MustCompile(`(?m)^clusterctl: AWS endpoint ` + regexp.QuoteMeta(srv.URL) + `: no response to CloudFormation\.\w+ in 8 s \(3 attempts\)\nre-attach with: clusterctl wait core\n$`)
	if r.code != 1 || !silent.Load() || !want.MatchString(r.stderr) {
		t.Errorf("create-core with the endpoint silent after CreateStack:\n%s\nwant exit 1 and stderr ending with lines matching %s", r, want)
	}
}
