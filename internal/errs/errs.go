// Package errs defines the kinds of error clusterctl distinguishes and maps
// them to exit codes, in one place.
package errs

import (
	"context"
	"errors"
	"fmt"
)

// Exit codes, as documented in the README.
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

// ExitCode maps an error to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
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
