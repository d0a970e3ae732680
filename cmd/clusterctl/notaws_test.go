package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/iostreams"
)

// A --endpoint-url that answers 404 (a web server, not AWS) is one line
// naming it, exit 1: not the SDK's "api error UnknownError".
func TestEndpointAnswering404(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NotFound(w, r)
	}))
	defer srv.Close()
	testCredentials(t)
	ios, _, _, errOut := iostreams.Test()
	code := run(context.Background(), []string{"list-clusters", "--region", "us-east-1", "--endpoint-url", srv.URL}, ios)
	msg := strings.TrimSpace(errOut.String())
	want := "clusterctl: AWS endpoint " + srv.URL + " answered HTTP 404 to CloudFormation.DescribeStacks, which is not an AWS answer"
	if code != 1 || !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") || strings.Contains(msg, "UnknownError") {
		t.Errorf("exit %d, %q; want exit 1 and %q", code, msg, want)
	}
}

// testCredentials gives the test static credentials and no AWS files of
// the machine's.
func testCredentials(t *testing.T) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
}
