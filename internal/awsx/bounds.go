package awsx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// An endpoint that accepts connections and never answers (a broken proxy, a
// half-open VPC endpoint, a stalled load balancer) must not hang a command:
// each attempt of a call is bounded, so that the SDK retries on a fresh
// connection and the call gives up after DialAttempts attempts, within
// about a minute. The bound is on silence, not on size: every byte sent or
// received restarts it, so a slow transfer that progresses is never cut
// short, and a waiting command's polls, each answered, are never either.
const (
	// DefaultConnectTimeout bounds one connection attempt, so that an
	// endpoint that drops packets fails within DialAttempts × it too.
	DefaultConnectTimeout = 2500 * time.Millisecond
	// DefaultResponseTimeout bounds how long an attempt waits for the
	// endpoint to send anything: the response headers after the request
	// was sent, the next bytes of a body, or room to send the request.
	// AWS answers the slowest legitimate call clusterctl makes in seconds.
	DefaultResponseTimeout = 20 * time.Second
)

// The settings that change the bounds (Go durations: "500ms", "45s"). They
// exist for slow networks and for tests, which lower them to run the same
// code path in a second.
const (
	EnvConnectTimeout  = "CLUSTERCTL_AWS_CONNECT_TIMEOUT"
	EnvResponseTimeout = "CLUSTERCTL_AWS_RESPONSE_TIMEOUT"
)

// Bounds are the per-attempt bounds of every AWS call.
type Bounds struct {
	Connect  time.Duration
	Response time.Duration
}

// SettingError is a bound set to something that is not a positive
// duration.
type SettingError struct {
	Name, Value string
}

func (e *SettingError) Error() string {
	return fmt.Sprintf("%s=%q: not a positive duration (e.g. 20s, 500ms)", e.Name, e.Value)
}

// boundsFrom fills the bounds not given from the environment, then from the
// defaults.
func boundsFrom(given Bounds, getenv func(string) string) (Bounds, error) {
	b := given
	for _, s := range []struct {
		name string
		dst  *time.Duration
		def  time.Duration
	}{
		{EnvConnectTimeout, &b.Connect, DefaultConnectTimeout},
		{EnvResponseTimeout, &b.Response, DefaultResponseTimeout},
	} {
		if *s.dst > 0 {
			continue
		}
		*s.dst = s.def
		v := getenv(s.name)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Bounds{}, &SettingError{Name: s.name, Value: v}
		}
		*s.dst = d
	}
	return b, nil
}

// bounded is the SDK's client with the bounds: a dial timeout and a
// connection that fails when nothing moves for b.Response. It is frozen so
// that no service client swaps the dialer for its own.
func bounded(client *awshttp.BuildableClient, b Bounds) aws.HTTPClient {
	return client.
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = b.Connect }).
		WithTransportOptions(func(tr *http.Transport) {
			dial := tr.DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &boundedConn{Conn: c, addr: addr, bound: b.Response}, nil
			}
			// An idle pooled connection is closed before its read deadline
			// could fail it, so the deadline only ever ends a request.
			if tr.IdleConnTimeout == 0 || tr.IdleConnTimeout > b.Response/2 {
				tr.IdleConnTimeout = b.Response / 2
			}
		}).
		WithReadTimeout(0). // ours is boundedConn
		Freeze()
}

// boundedConn fails a read or write after bound without progress. A write
// also pushes the read deadline: the wait for an answer starts when the
// last byte of the request has gone, however long an upload took.
type boundedConn struct {
	net.Conn
	addr  string // host:port as dialled
	bound time.Duration
}

func (c *boundedConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.bound)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	return n, c.silence(err)
}

func (c *boundedConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.bound)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	if n > 0 {
		_ = c.Conn.SetReadDeadline(time.Now().Add(c.bound))
	}
	return n, c.silence(err)
}

func (c *boundedConn) silence(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &SilenceError{Addr: c.addr, After: c.bound}
	}
	return err
}

// SilenceError is a connection on which nothing moved for After. It is a
// temporary network timeout, so the SDK retries the call.
type SilenceError struct {
	Addr  string
	After time.Duration
}

func (e *SilenceError) Error() string {
	return fmt.Sprintf("nothing received from %s in %s", e.Addr, seconds(e.After))
}
func (e *SilenceError) Timeout() bool   { return true }
func (e *SilenceError) Temporary() bool { return true }
func (e *SilenceError) Unwrap() error   { return os.ErrDeadlineExceeded }

// seconds writes a bound as the user set it: "20 s", or "300ms" below a
// second.
func seconds(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return d.String()
}

// attemptURL runs inside the retry loop and names the request's URL on a
// silence that surfaced while the SDK read a response body (the HTTP
// client names it for every other failure), so that the endpoint can be
// told.
func attemptURL(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("clusterctlAttemptURL",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleFinalize(ctx, in)
			var se *SilenceError
			var ue *url.Error
			if err != nil && errors.As(err, &se) && !errors.As(err, &ue) {
				if req, ok := in.Request.(*smithyhttp.Request); ok && req.URL != nil {
					err = &url.Error{Op: req.Method, URL: req.URL.String(), Err: err}
				}
			}
			return out, md, err
		}), middleware.After)
}
