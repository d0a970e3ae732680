package stacks

import (
	"context"
	"fmt"
)

// Events passes the stack's events to emit, oldest first. With follow, it
// keeps passing new ones as they arrive until the stack reaches a final
// status (nil, whatever the outcome) or ctx is done (ctx's error). emit is
// called from one goroutine at a time.
func (m *Manager) Events(ctx context.Context, name string, follow bool, emit func([]Event)) error {
	hist, id, err := history(ctx, m.api, name)
	if err != nil {
		return err
	}
	emit(hist)
	if !follow {
		return nil
	}
	o := m.newOp(name, "follow", "")
	o.id, o.out = id, eventSink{emit}
	o.record(hist)
	st, err := m.describe(ctx, o)
	if err != nil {
		if isNotFound(err) {
			return nil // deleted meanwhile: nothing more will happen
		}
		return fmt.Errorf("describing stack %q: %w", name, err)
	}
	if Classify(st.Status).Final() {
		return nil
	}
	o.status = st.Status
	if _, err := m.await(ctx, o); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("following events of stack %q: %w", name, ctx.Err())
		}
		return err
	}
	return nil
}

// eventSink hands the events a follow learns to the caller.
type eventSink struct{ emit func([]Event) }

func (eventSink) expect([]string)     {}
func (eventSink) skip(string, string) {}
func (eventSink) begin(*op)           {}
func (s eventSink) add(_ *op, evs []Event) {
	if len(evs) > 0 {
		s.emit(evs)
	}
}
func (eventSink) tick()           {}
func (eventSink) end(*op, string) {}
