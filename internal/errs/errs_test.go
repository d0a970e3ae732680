package errs

import (
	"context"
	"errors"
	"fmt"
	"testing"
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
