package errs

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"plain", errors.New("boom"), 1},
		{"usage", Usage("bad name %q", "x"), 2},
		{"wrapped usage", fmt.Errorf("creating: %w", Usage("bad")), 2},
		{"interrupted", &InterruptedError{Err: context.Canceled}, 130},
		{"canceled", fmt.Errorf("waiting: %w", context.Canceled), 130},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.err); got != tt.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// Go's context errors never reach the user as such: they say what happened.
func TestMessage(t *testing.T) {
	sdkErr := func(cause error) error {
		// What the SDK returns when the context stops a call.
		return &smithy.OperationError{ServiceID: "EC2", OperationName: "DescribeInstances",
			Err: fmt.Errorf("https response error StatusCode: 0, RequestID: , canceled, %w", cause)}
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"plain", errors.New("stack \"x\" does not exist"), "stack \"x\" does not exist"},
		{"bare canceled", context.Canceled, "interrupted"},
		{"wrapped canceled", fmt.Errorf("not confirmed: %w", context.Canceled), "not confirmed: interrupted"},
		{"deadline", fmt.Errorf("following events of stack %q: %w", "core", context.DeadlineExceeded), `following events of stack "core": --timeout reached`},
		{"AWS call stopped by --timeout", fmt.Errorf("describing instances: %w", sdkErr(context.DeadlineExceeded)), "describing instances: --timeout reached"},
		{"AWS call stopped by Ctrl-C", fmt.Errorf("listing stacks: %w", sdkErr(context.Canceled)), "listing stacks: interrupted"},
		{"with a hint", &InterruptedError{Err: fmt.Errorf("stopped waiting (%w); CloudFormation carries on", context.Canceled), Hint: "re-attach with: clusterctl wait core"},
			"stopped waiting (interrupted); CloudFormation carries on\nre-attach with: clusterctl wait core"},
		{"joined", errors.Join(errors.New("deleting stack \"a\": DELETE_FAILED"), fmt.Errorf("deleting stack %q: not started: %w", "b", context.Canceled)),
			"deleting stack \"a\": DELETE_FAILED\ndeleting stack \"b\": not started: interrupted"},
		{"custom text", opaque{context.DeadlineExceeded}, "gave up: --timeout reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Message(tt.err); got != tt.want {
				t.Errorf("Message = %q, want %q", got, tt.want)
			}
		})
	}
	if Message(nil) != "" {
		t.Error("Message(nil)")
	}
}

// opaque words its cause without the cause's text.
type opaque struct{ err error }

func (o opaque) Error() string { return "gave up: " + o.err.Error() }
func (o opaque) Unwrap() error { return o.err }
