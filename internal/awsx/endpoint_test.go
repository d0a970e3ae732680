package awsx

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

// closedPort returns the URL of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	return url
}

func testEnv(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_NEW_RETRIES_2026", "")
}

// A refused connection is tried DialAttempts times, not MaxAttempts, and
// reported as one line naming the endpoint.
func TestRefusedConnectionFailsFast(t *testing.T) {
	testEnv(t)
	url := closedPort(t)
	cfg, rec, err := Load(context.Background(), Options{Region: "us-east-1", EndpointURL: url})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cloudformation.NewFromConfig(cfg).DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{})
	e, ok := Unreachable(err)
	if !ok {
		t.Fatalf("err = %v, want an *EndpointError", err)
	}
	if e.Endpoint != url || e.Reason != "connection refused" || e.Attempts != DialAttempts || e.Operation != "CloudFormation.DescribeStacks" {
		t.Errorf("EndpointError = %+v, want %s, connection refused, %d attempts", e, url, DialAttempts)
	}
	want := "cannot reach AWS endpoint " + url + ": connection refused (CloudFormation.DescribeStacks, 3 attempts)"
	if e.Error() != want {
		t.Errorf("message %q, want %q", e.Error(), want)
	}
	if rec.Total() != 1 {
		t.Errorf("recorded %d calls, want 1", rec.Total())
	}
}

// An unknown host is not retried at all.
func TestUnknownHostIsNotRetried(t *testing.T) {
	testEnv(t)
	var lookups atomic.Int32
	cfg, _, err := Load(context.Background(), Options{Region: "us-east-1", EndpointURL: "http://nosuch.example.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	// The resolver is the test's: it counts the lookups and answers NXDOMAIN
	// whatever the machine's DNS would say.
	cfn := cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) {
		o.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			lookups.Add(1)
			host, _, _ := net.SplitHostPort(addr)
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
		}}}
	})
	_, err = cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{})
	e, ok := Unreachable(err)
	if !ok || e.Reason != "unknown host nosuch.example.invalid" || e.Endpoint != "http://nosuch.example.invalid" {
		t.Fatalf("err = %v, want unknown host naming the endpoint", err)
	}
	if n := lookups.Load(); n != 1 {
		t.Errorf("%d connection attempts, want 1", n)
	}
}

// A server that answers, even with errors, is not "unreachable": 5xx keep
// the full retry policy.
func TestServerErrorsKeepFullRetries(t *testing.T) {
	testEnv(t)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(503)
	}))
	defer srv.Close()
	cfg, _, err := Load(context.Background(), Options{Region: "us-east-1", EndpointURL: srv.URL, MaxAttempts: 4})
	if err != nil {
		t.Fatal(err)
	}
	cfn := cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) { o.Retryer = retryerWithoutBackoff(o.Retryer) })
	_, err = cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{})
	if err == nil || strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("err = %v", err)
	}
	if _, ok := Unreachable(err); ok {
		t.Error("a 503 is reported as an unreachable endpoint")
	}
	if n := hits.Load(); n != 4 {
		t.Errorf("server saw %d requests, want 4 (MaxAttempts)", n)
	}
}

// Ctrl-C while connecting is an interruption, not a dead endpoint.
func TestEndpointErrorIgnoresCancellation(t *testing.T) {
	err := &url.Error{Op: "Post", URL: "http://127.0.0.1:9/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: context.Canceled}}
	if e := asEndpointError(err); e != nil {
		t.Errorf("a cancelled call is reported as %v", e)
	}
	refused := &url.Error{Op: "Post", URL: "http://127.0.0.1:9/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	if e := asEndpointError(refused); e == nil || e.Endpoint != "http://127.0.0.1:9" {
		t.Errorf("refused = %v", e)
	}
}
