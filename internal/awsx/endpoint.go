package awsx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// A dead endpoint must fail fast: the SDK retries connection errors like
// throttling, ten times with up to 10 s of backoff, so a refused connection
// took a minute to report. Connection failures get a few quick attempts (a
// restarting proxy or a dropped SYN deserves one more try), unknown hosts
// none (DNS will not change its mind in a second); throttling and 5xx keep
// the full retry policy.
// An endpoint that accepts the connection and then says nothing (see
// bounds.go) gets the same few attempts.
//
// DialAttempts bounds the attempts of a call whose connection fails or
// whose endpoint does not answer.
const DialAttempts = 3

// dialBackoff is the delay before attempt n+1 of a failed connection.
func dialBackoff(n int) time.Duration { return time.Duration(1<<min(n, 4)) * 125 * time.Millisecond }

// EndpointError says that an AWS endpoint could not be reached at all (the
// connection was refused, timed out, or the host name is unknown) or did
// not answer (Silence is then set).
type EndpointError struct {
	Endpoint  string        // scheme://host[:port]
	Reason    string        // "connection refused", "unknown host", "no response", ...
	Silence   time.Duration // the bound an attempt waited for an answer; 0: not reached
	Operation string        // Service.Operation of the call, when known
	Attempts  int           // connection attempts made (0 when unknown)
	Err       error
}

func (e *EndpointError) Error() string {
	if e.Silence > 0 {
		s := "AWS endpoint " + e.Endpoint + ": no response"
		if e.Operation != "" {
			s += " to " + e.Operation
		}
		s += " in " + seconds(e.Silence)
		if e.Attempts > 1 {
			s += fmt.Sprintf(" (%d attempts)", e.Attempts)
		}
		return s
	}
	s := fmt.Sprintf("cannot reach AWS endpoint %s: %s", e.Endpoint, e.Reason)
	var notes []string
	if e.Operation != "" {
		notes = append(notes, e.Operation)
	}
	if e.Attempts > 1 {
		notes = append(notes, fmt.Sprintf("%d attempts", e.Attempts))
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	return s
}

// Unreachable returns the *EndpointError in err's chain, if any: a
// command's error then reads as that one line, whatever wrapped it.
func Unreachable(err error) (*EndpointError, bool) {
	var e *EndpointError
	ok := errors.As(err, &e)
	return e, ok
}

func (e *EndpointError) Unwrap() error { return e.Err }

// asEndpointError recognises a failure to reach the endpoint, or its
// silence, in an SDK error; nil when err is anything else (an answer from AWS, a cancelled
// context).
func asEndpointError(err error) *EndpointError {
	var ue *url.Error
	if err == nil || !errors.As(err, &ue) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	endpoint := ue.URL
	if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
		endpoint = u.Scheme + "://" + u.Host
	}
	var se *SilenceError
	if errors.As(err, &se) {
		return &EndpointError{Endpoint: endpoint, Reason: "no response", Silence: se.After, Err: err}
	}
	reason := unreachableReason(err)
	if reason == "" {
		return nil
	}
	return &EndpointError{Endpoint: endpoint, Reason: reason, Err: err}
}

// unreachableReason names why no connection could be made, or "" when a
// connection was made (then the error is the server's or the network's
// later on, and the normal retry policy applies).
func unreachableReason(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return "unknown host " + dns.Name
		}
		return "cannot resolve " + dns.Name + ": " + dns.Err
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		return ""
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to host"
	case op.Timeout():
		return "connection timed out"
	}
	return strings.TrimPrefix(op.Err.Error(), "connect: ")
}

// unknownHost reports a DNS answer that the name does not exist.
func unknownHost(err error) bool {
	var dns *net.DNSError
	return errors.As(err, &dns) && dns.IsNotFound
}

// dialBounded bounds the retries of connection failures (see DialAttempts)
// and leaves every other decision to the wrapped retryer.
type dialBounded struct{ aws.RetryerV2 }

func (r dialBounded) IsErrorRetryable(err error) bool {
	if unknownHost(err) {
		return false
	}
	return r.RetryerV2.IsErrorRetryable(err)
}

// RetryDelay stops a call whose connections keep failing: returning an
// error here ends the attempts with that error.
func (r dialBounded) RetryDelay(attempt int, err error) (time.Duration, error) {
	if e := asEndpointError(err); e != nil {
		// attempt counts the attempts made so far (the SDK's default
		// retry mode).
		if attempt >= DialAttempts {
			return 0, err
		}
		return dialBackoff(attempt), nil
	}
	return r.RetryerV2.RetryDelay(attempt, err)
}
