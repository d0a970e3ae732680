// Package errs defines the kinds of error clusterctl distinguishes and maps
// them to exit codes, in one place.
package errs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"
)

// Exit codes, as documented in docs/exit-codes.md.
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitInterrupted = 130
)

// UsageError is bad usage or invalid input: nothing was created or changed.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usage returns a UsageError with a formatted message.
func Usage(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// AsUsage marks err as a usage error (nil stays nil).
func AsUsage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{Err: err}
}

// InterruptedError is returned when the user interrupted a wait. Hint says
// how to re-attach.
type InterruptedError struct {
	Err  error
	Hint string
}

func (e *InterruptedError) Error() string {
	if e.Hint == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + "\n" + e.Hint
}
func (e *InterruptedError) Unwrap() error { return e.Err }

// StatusError is the exit status of a command clusterctl ran for the
// operator (docker on a manager): clusterctl exits with it, and the
// command's own output has said why.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return fmt.Sprintf("the command exited with status %d", e.Code) }

// Silent tells whether err needs no message of clusterctl's: a command's
// own exit status.
func Silent(err error) bool {
	var s *StatusError
	return errors.As(err, &s)
}

// ExitCode maps an error to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var st *StatusError
	if errors.As(err, &st) {
		return st.Code
	}
	var u *UsageError
	if errors.As(err, &u) {
		return ExitUsage
	}
	var i *InterruptedError
	if errors.As(err, &i) || errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	return ExitFailed
}

// What the user is told instead of Go's context errors.
const (
	interrupted    = "interrupted"
	timeoutReached = "--timeout reached"
)

// Message is the text the user sees for err. Where a context error is the
// cause, "context canceled" becomes "interrupted" (Ctrl-C) and "context
// deadline exceeded" becomes "--timeout reached", and an AWS call that the
// context stopped is named by the phrase that wraps it alone, without the
// transport's noise ("https response error StatusCode: 0, ...").
func Message(err error) string {
	if err == nil {
		return ""
	}
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err.Error()
	}
	text := rewrite(err)
	// Whatever wording kept the raw text out of reach of the walk.
	text = strings.ReplaceAll(text, context.Canceled.Error(), interrupted)
	return strings.ReplaceAll(text, context.DeadlineExceeded.Error(), timeoutReached)
}

// rewrite replaces, in err's text, the text of each error it wraps by that
// error's rewritten text, down to the context error.
func rewrite(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded) && isCauseOf(err):
		return timeoutReached
	case errors.Is(err, context.Canceled) && isCauseOf(err):
		return interrupted
	}
	text := err.Error()
	var inner []error
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		inner = []error{u.Unwrap()}
	case interface{ Unwrap() []error }:
		inner = u.Unwrap()
	}
	for _, in := range inner {
		if in == nil || (!errors.Is(in, context.Canceled) && !errors.Is(in, context.DeadlineExceeded)) {
			continue
		}
		if it := in.Error(); it != "" && strings.Contains(text, it) {
			text = strings.Replace(text, it, rewrite(in), 1)
		}
	}
	return text
}

// isCauseOf tells whether err is the context error itself, or an AWS call
// that the context stopped (its text is transport detail).
func isCauseOf(err error) bool {
	if err == context.Canceled || err == context.DeadlineExceeded {
		return true
	}
	_, isOp := err.(*smithy.OperationError)
	return isOp
}
