package stacks

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Events prints the stack's events oldest first, one per line. With
// follow, it keeps printing new events until the stack reaches a final
// status (nil, whatever the outcome) or ctx is done (ctx's error).
func (m *Manager) Events(ctx context.Context, name string, follow bool, w io.Writer) error {
	hist, id, err := m.history(ctx, name)
	if err != nil {
		return err
	}
	log := &logSink{w: w, color: m.color}
	for _, e := range hist {
		log.print(e)
	}
	if !follow {
		return nil
	}
	o := m.newOp(name, "follow", "")
	o.id, o.out = id, log
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

// logSink prints events with their time, for `clusterctl events`:
//
//	2024-05-01T10:00:03Z  Bucket                   AWS::S3::Bucket                    CREATE_COMPLETE
type logSink struct {
	w     io.Writer
	color bool
}

func (l *logSink) print(e Event) {
	p := progress{color: l.color}
	fmt.Fprintln(l.w, p.fields([]string{
		e.Time.UTC().Format(time.RFC3339), pad(e.LogicalID, colLogical), pad(e.ResourceType, colType),
	}, e.Status, "", e.Reason))
}

func (l *logSink) expect([]string) {}
func (l *logSink) skip(string)     {}
func (l *logSink) begin(*op)       {}
func (l *logSink) add(_ *op, evs []Event) {
	for _, e := range evs {
		l.print(e)
	}
}
func (l *logSink) tick()           {}
func (l *logSink) end(*op, string) {}
