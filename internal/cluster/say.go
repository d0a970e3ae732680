package cluster

import (
	"context"
	"fmt"
	"sync"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/iostreams"
)

// Say is how a command speaks to the operator: its notes, printed once,
// among the live progress of the stacks, and its confirmations.
type Say struct {
	IO     *iostreams.IO
	Stacks interface{ Say(text string) bool } // nil: no live progress
	said   *sync.Map                          // notes printed in this run (noteOnce)
}

// noteOnce prints a note the first time this run has it to say: apply
// checks a group when it plans it and again when it creates it.
func (s *Say) noteOnce(msg string) {
	if _, said := s.said.LoadOrStore(msg, true); !said {
		s.printf("%s", msg)
	}
}

// printf says what the command does, among the live progress of the
// stacks when there is some (a line printed under a redrawn block would
// break it).
func (s *Say) printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if s.Stacks != nil && s.Stacks.Say(msg) {
		return
	}
	fmt.Fprint(s.IO.ErrOut, msg)
}

// confirm asks before a destructive step. Without a terminal it needs --yes.
func (s *Say) confirm(ctx context.Context, yes bool, question string) error {
	if yes {
		return nil
	}
	if !s.IO.InTTY {
		return errs.Usage("refusing to %s without confirmation: pass --yes when not on a terminal", question)
	}
	ok, err := s.IO.Confirm(ctx, "Really "+question+"?")
	if err != nil {
		return fmt.Errorf("not confirmed: %w", err)
	}
	if !ok {
		return refused("not confirmed")
	}
	return nil
}
