package stacks

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"
)

// ErrNotFound: the stack does not exist (or was deleted).
var ErrNotFound = errors.New("does not exist")

// ErrAlreadyExists: Create met a stack of the same name that this run did
// not create.
var ErrAlreadyExists = errors.New("already exists")

// OperationError is a stack operation that ended in a failed status.
type OperationError struct {
	Stack  string // stack name
	Op     string // create, update, delete, continue-rollback, wait
	Status string // final stack status
	Reason string // the stack's StatusReason
	// RootCause is the earliest failure event of the operation (not the
	// "Resource creation cancelled" noise that follows it); nil when the
	// events do not say (then Reason is the best explanation).
	RootCause *Event
	// LeftBehind lists resources a failed delete or rollback could not remove.
	LeftBehind []Resource
	// Tags are the stack's, so that callers can tell what it is (the core
	// or a group of which cluster) and say what to do next.
	Tags map[string]string
}

func (e *OperationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s of stack %q failed: %s", opNoun(e.Op), e.Stack, e.Status)
	if rc := e.RootCause; rc != nil {
		fmt.Fprintf(&b, ": %s (%s) %s", rc.LogicalID, rc.ResourceType, rc.Status)
		if rc.Reason != "" {
			b.WriteString(": " + rc.Reason)
		}
	} else if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	return b.String()
}

func opNoun(op string) string {
	switch op {
	case "wait", "":
		return "operation"
	}
	return op
}

// Class returns Classify(e.Status).
func (e *OperationError) Class() Class { return Classify(e.Status) }

// StillRunningError is returned when ctx ends while waiting: the operation
// carries on in CloudFormation. It wraps ctx.Err(), so
// errors.Is(err, context.Canceled) holds after Ctrl-C; callers add how to
// re-attach (`clusterctl wait ...`).
type StillRunningError struct {
	Stack  string
	Op     string
	Status string // last status seen, if any
	Err    error
}

func (e *StillRunningError) Error() string {
	st := ""
	if e.Status != "" {
		st = " (" + e.Status + ")"
	}
	return fmt.Sprintf("stopped waiting for %s of stack %q%s: %v; CloudFormation carries on", opNoun(e.Op), e.Stack, st, e.Err)
}

func (e *StillRunningError) Unwrap() error { return e.Err }

// isNotFound recognises CloudFormation's "Stack with id X does not exist" /
// "Stack [X] does not exist" validation errors.
func isNotFound(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" &&
		strings.Contains(ae.ErrorMessage(), "does not exist")
}

// notFound wraps a not-found API error so that errors.Is(err, ErrNotFound)
// holds and the message stays short.
type notFoundError struct {
	stack string
	err   error
}

func (e *notFoundError) Error() string          { return fmt.Sprintf("stack %q does not exist", e.stack) }
func (e *notFoundError) Unwrap() []error        { return []error{ErrNotFound, e.err} }
func newNotFound(stack string, err error) error { return &notFoundError{stack, err} }
