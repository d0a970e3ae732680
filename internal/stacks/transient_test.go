package stacks

import (
	"net/url"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/awsx"
)

// A wait carries on through a call that failed transiently, but not
// through an endpoint that did not answer: the SDK already spent its
// attempts, each as long as the bound, and more rounds would multiply
// that.
func TestTransient(t *testing.T) {
	silence := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/", Err: &awsx.SilenceError{Addr: "127.0.0.1:1", After: time.Second}}
	if !transient(silence) {
		t.Error("one silent attempt is not transient")
	}
	if transient(&awsx.EndpointError{Endpoint: "http://127.0.0.1:1", Reason: "no response", Silence: time.Second, Attempts: 3, Err: silence}) {
		t.Error("an endpoint that did not answer any attempt is transient")
	}
}
