// Package cfnfake is a scripted, in-process fake of the CloudFormation API
// for tests. It speaks the AWS query protocol (form-encoded POST, XML
// answers) over httptest, so the code under test uses the real SDK client,
// with its serialisation, error parsing and retries.
//
// Each stack operation (CreateStack, ExecuteChangeSet, DeleteStack,
// ContinueUpdateRollback) follows a script: steps of stack status and
// events that happen at set times on the fake's Clock, or after a number
// of reads. Faults (throttling, 5xx, lost responses) can be injected per
// action, and every call is recorded so tests can assert call budgets and
// the ClientRequestTokens sent.
package cfnfake

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

// Server is the fake CloudFormation endpoint.
type Server struct {
	Clock *Clock
	URL   string

	// Page sizes; 0 means CloudFormation's usual 100. Set them small to
	// exercise pagination.
	EventPageSize, ChangePageSize, StackPageSize, ResourcePageSize int

	srv *httptest.Server

	mu         sync.Mutex
	stacks     []*stack // every stack ever created, deleted ones included
	changeSets []*changeSet
	scripts    map[scriptKey][][]Step
	csScripts  map[string][]ChangeSet
	faults     map[string][]fault
	calls      []Call
	seq        int
	maxRunning int // most operations in progress at once
}

// Call records one HTTP request.
type Call struct {
	Action string
	Params url.Values
	At     time.Time // on the fake clock
	Status int       // HTTP status of the answer
	Code   string    // error code answered, if any
}

// Token returns the call's ClientRequestToken (ClientToken for CreateChangeSet).
func (c Call) Token() string {
	if t := c.Params.Get("ClientRequestToken"); t != "" {
		return t
	}
	return c.Params.Get("ClientToken")
}

type fault struct {
	status    int
	code, msg string
	lose      bool // process the call, then answer 500
}

// New starts a fake on a Clock at Epoch; it is closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{
		Clock:     NewClock(Epoch),
		scripts:   map[scriptKey][][]Step{},
		csScripts: map[string][]ChangeSet{},
		faults:    map[string][]fault{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Client returns a real SDK client for the fake: static credentials, and
// the standard retryer without delays, so injected faults are retried at
// full speed.
func (s *Server) Client() *cloudformation.Client {
	cfg := aws.Config{
		Region: "us-east-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDFAKE", SecretAccessKey: "fake", Source: "cfnfake"}, nil
		}),
	}
	return cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) {
		o.BaseEndpoint = aws.String(s.URL)
		o.HTTPClient = s.srv.Client()
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 5
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			so.RateLimiter = ratelimit.None
		})
	})
}

// Fail makes the next n calls of action fail with an HTTP status and error
// code, without processing them: e.g. (400, "Throttling") or (503, "ServiceUnavailable").
func (s *Server) Fail(action string, n, status int, code, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < n; i++ {
		s.faults[action] = append(s.faults[action], fault{status: status, code: code, msg: msg})
	}
}

// Throttle makes the next n calls of action answer 400 Throttling.
func (s *Server) Throttle(action string, n int) {
	s.Fail(action, n, 400, "Throttling", "Rate exceeded")
}

// LoseResponse makes the next n calls of action take effect and then
// answer 500, as when a response is lost: the SDK retries a call that
// already happened.
func (s *Server) LoseResponse(action string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < n; i++ {
		s.faults[action] = append(s.faults[action], fault{lose: true})
	}
}

// Calls returns the number of HTTP requests for action (retries included);
// "" counts all.
func (s *Server) Calls(action string) int {
	return len(s.Log(action))
}

// Log returns the recorded requests for action; "" returns all.
func (s *Server) Log(action string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if action == "" || c.Action == action {
			out = append(out, c)
		}
	}
	return out
}

// ResetLog forgets the recorded calls.
func (s *Server) ResetLog() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// apiError is an error answer.
type apiError struct {
	status    int
	code, msg string
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }

func validation(format string, args ...any) *apiError {
	return &apiError{400, "ValidationError", fmt.Sprintf(format, args...)}
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, err := url.ParseQuery(string(body))
	if err != nil || r.Method != http.MethodPost {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	action := form.Get("Action")

	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	reqID := fmt.Sprintf("req-%06d", s.seq)
	call := Call{Action: action, Params: form, At: s.Clock.Now(), Status: 200}

	var f *fault
	if q := s.faults[action]; len(q) > 0 {
		f = &q[0]
		s.faults[action] = q[1:]
	}
	var out string
	var aerr *apiError
	if f != nil && !f.lose {
		aerr = &apiError{f.status, f.code, f.msg}
	} else {
		s.advance()
		out, aerr = s.handle(action, form)
		if f != nil && aerr == nil {
			aerr = &apiError{500, "InternalFailure", "response lost"}
		}
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-RequestId", reqID)
	if aerr != nil {
		call.Status, call.Code = aerr.status, aerr.code
		s.calls = append(s.calls, call)
		typ := "Sender"
		if aerr.status >= 500 {
			typ = "Receiver"
		}
		w.WriteHeader(aerr.status)
		_, _ = io.WriteString(w, errorResponse(typ, aerr.code, aerr.msg, reqID))
		return
	}
	s.calls = append(s.calls, call)
	_, _ = io.WriteString(w, response(action, reqID, func(x *xw) { x.b.WriteString(out) }))
}
