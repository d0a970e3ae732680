package stacks

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// sink receives what waiting learns; progress renders it.
type sink interface {
	expect(names []string) // stacks about to be handled together (DeleteMany)
	skip(name, why string) // an expected stack needs nothing (why: "gone") or will not be handled
	begin(o *op)
	add(o *op, evs []Event)
	tick()
	end(o *op, status string) // status "" = stopped waiting
}

type quiet struct{}

func (quiet) expect([]string)     {}
func (quiet) skip(string, string) {}
func (quiet) begin(*op)           {}
func (quiet) add(*op, []Event)    {}
func (quiet) tick()               {}
func (quiet) end(*op, string)     {}

func newSink(opts Options, clock Clock) sink {
	if opts.Progress == nil {
		return quiet{}
	}
	w := opts.Width
	if w <= 0 && opts.TTY {
		// A line wider than the terminal wraps and breaks the redraw.
		if f, ok := opts.Progress.(*os.File); ok {
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
				w = cols
			}
		}
	}
	if w <= 0 {
		w = 120
	}
	return &progress{w: opts.Progress, tty: opts.TTY, color: opts.Color, clock: clock, width: w}
}

// progress renders live progress: on a terminal a block redrawn in place
// (one header per stack, one line per resource with its status and time);
// otherwise one line per new event, for logs.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	color bool
	clock Clock
	width int

	views []*view
	drawn int // lines of the block on screen (TTY)
}

type view struct {
	name     string
	status   string
	start    time.Time // local clock, when the operation began
	doneAt   time.Time
	base     time.Time // time of the operation's first event
	res      []*resView
	byID     map[string]*resView
	pending  bool
	finished bool
}

type resView struct {
	logical, typ, status, reason string
	started                      time.Time // event time of the last *_IN_PROGRESS
	seenAt                       time.Time // local time it was seen
	took                         time.Duration
}

// Line-mode column widths: long enough for the usual logical ids and types.
const (
	colLogical = 24
	colType    = 34
	colStatus  = 20
	maxBlock   = 40 // TTY block lines
)

func (p *progress) view(name string) *view {
	for _, v := range p.views {
		if v.name == name && !v.finished {
			return v
		}
	}
	v := &view{name: name, pending: true, byID: map[string]*resView{}}
	p.views = append(p.views, v)
	return v
}

func (p *progress) expect(names []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range names {
		p.view(n)
	}
	p.redraw()
}

func (p *progress) skip(name, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var v *view
	for _, x := range p.views {
		if x.name == name && x.pending {
			v = x
		}
	}
	if v == nil {
		return // not announced: nothing to show
	}
	v.finished, v.pending, v.status = true, false, why
	p.redraw()
	p.release()
}

func (p *progress) begin(o *op) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.view(o.name)
	v.pending, v.start, v.status = false, o.start, o.status
	if !p.tty && o.kind == "wait" && o.status != "" {
		// Re-attached off a terminal: the events seen before are not
		// printed again, so say what is being waited for, once.
		fmt.Fprintln(p.w, p.fields([]string{pad(v.name, p.nameWidth()), fmt.Sprintf("%5s", hms(0)), pad(stackLogical, colLogical), pad(stackType, colType)}, o.status, "", "waiting for it to end"))
	}
	p.redraw()
}

// stackLogical stands, in a progress line, for the stack's own logical id,
// which is its name: the line's first column says it already.
const stackLogical = "-"

func (p *progress) add(o *op, evs []Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.view(o.name)
	v.pending = false
	now := p.clock.Now()
	for _, e := range evs {
		if v.base.IsZero() {
			v.base = e.Time
		}
		r := v.byID[e.LogicalID]
		if r == nil {
			r = &resView{logical: e.LogicalID, typ: e.ResourceType}
			v.byID[e.LogicalID] = r
			if !e.IsStack() {
				v.res = append(v.res, r)
			}
		}
		prev := r.status
		r.status, r.reason, r.took = e.Status, e.Reason, 0
		if strings.HasSuffix(e.Status, "_IN_PROGRESS") {
			if e.Status != prev { // "Resource creation Initiated" repeats the status
				r.started, r.seenAt = e.Time, now
			}
		} else if strings.HasSuffix(prev, "_IN_PROGRESS") {
			r.took = e.Time.Sub(r.started)
		}
		if e.IsStack() {
			v.status = e.Status
		}
		if !p.tty {
			p.printLine(v, e, r)
		}
	}
	p.redraw()
}

func (p *progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.redraw()
}

func (p *progress) end(o *op, status string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.view(o.name)
	if status != "" && status != v.status && !p.tty {
		// Sparse events: the final status came from DescribeStacks alone.
		fmt.Fprintln(p.w, p.fields([]string{
			pad(v.name, p.nameWidth()), fmt.Sprintf("%5s", hms(p.clock.Now().Sub(v.start))),
			pad(stackLogical, colLogical), pad(stackType, colType),
		}, status, "", ""))
	}
	if status != "" {
		v.status = status
	}
	v.finished, v.pending, v.doneAt = true, false, p.clock.Now()
	p.redraw()
	p.release()
}

// say prints a message where progress goes: as one more line in line
// mode; on a terminal above the block, which is then drawn again below it
// (a line printed under the block would break the next redraw).
func (p *progress) say(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	if p.tty && p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\r\x1b[J", p.drawn)
		p.drawn = 0
	}
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteString("\n")
	}
	_, _ = io.WriteString(p.w, b.String())
	p.redraw()
}

// release forgets the block once every stack in it is finished, so the
// next operation draws below whatever the caller printed meanwhile.
func (p *progress) release() {
	for _, v := range p.views {
		if !v.finished {
			return
		}
	}
	p.views, p.drawn = nil, 0
}

func (p *progress) nameWidth() int {
	w := 0
	for _, v := range p.views {
		w = max(w, len(v.name))
	}
	return w
}

// printLine writes one event in line mode:
//
//	core  0:25  Bucket                   AWS::S3::Bucket                    CREATE_COMPLETE 22s
func (p *progress) printLine(v *view, e Event, r *resView) {
	took := ""
	if r.took > 0 {
		took = dur(r.took)
	}
	fmt.Fprintln(p.w, p.fields([]string{
		pad(v.name, p.nameWidth()), fmt.Sprintf("%5s", hms(e.Time.Sub(v.base))),
		pad(logicalOf(e), colLogical), pad(e.ResourceType, colType),
	}, e.Status, took, e.Reason))
}

// logicalOf is an event's logical id in a progress line: "-" for the
// stack's own events, whose logical id repeats the stack's name.
func logicalOf(e Event) string {
	if e.IsStack() {
		return stackLogical
	}
	return e.LogicalID
}

// fields joins a line's columns, the status (painted) and optional
// duration and reason, without trailing blanks.
func (p *progress) fields(cols []string, status, took, reason string) string {
	var b strings.Builder
	b.WriteString(strings.Join(cols, "  ") + "  " + PaintStatus(status, p.color))
	if took != "" || reason != "" {
		b.WriteString(strings.Repeat(" ", max(0, colStatus-len(status))))
		b.WriteString(fmt.Sprintf("  %6s", took))
	}
	if reason != "" {
		b.WriteString("  " + oneLine(reason))
	}
	return b.String()
}

// redraw repaints the TTY block: cursor up over the previous block, clear
// to the end of the screen, print the new one.
func (p *progress) redraw() {
	if !p.tty {
		return
	}
	lines := p.block()
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\r\x1b[J", p.drawn)
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	p.drawn = len(lines)
	_, _ = io.WriteString(p.w, b.String())
}

func (p *progress) block() []string {
	if len(p.views) == 0 {
		return nil
	}
	now := p.clock.Now()
	nw := p.nameWidth()
	budget := max(2, maxBlock/len(p.views)) - 1
	var lines []string
	for _, v := range p.views {
		status, el := v.status, ""
		switch {
		case v.pending:
			status = "waiting"
		case v.finished:
			el = hms(v.doneAt.Sub(v.start))
		default:
			el = hms(now.Sub(v.start))
		}
		if status == "" {
			status = "starting"
		}
		lines = append(lines, p.fit(pad(v.name, nw)+"  ", PaintStatus(status, p.color), len(status), "  "+el))
		shown, hidden := pick(v.res, budget)
		lw, tw, sw := 0, 0, 0
		for _, r := range shown {
			lw, tw, sw = max(lw, len(r.logical)), max(tw, len(r.typ)), max(sw, len(r.status))
		}
		for _, r := range shown {
			t := ""
			switch {
			case strings.HasSuffix(r.status, "_IN_PROGRESS"):
				t = dur(now.Sub(r.seenAt))
			case r.took > 0:
				t = dur(r.took)
			}
			tail := strings.Repeat(" ", sw-len(r.status)) + "  " + t
			if strings.HasSuffix(r.status, "_FAILED") && r.reason != "" {
				tail += "  " + oneLine(r.reason)
			}
			lines = append(lines, p.fit("  "+pad(r.logical, lw)+"  "+pad(r.typ, tw)+"  ", PaintStatus(r.status, p.color), len(r.status), tail))
		}
		if hidden > 0 {
			lines = append(lines, fmt.Sprintf("  … %d more", hidden))
		}
	}
	return lines
}

// fit truncates a line to the terminal width so that it never wraps (a
// wrapped line would break the cursor-up count).
func (p *progress) fit(head, status string, statusLen int, tail string) string {
	room := p.width - 1 - len(head) - statusLen
	tail = strings.TrimRight(tail, " ")
	if room <= 0 {
		return head + status
	}
	if len(tail) > room {
		tail = tail[:room]
	}
	return head + status + tail
}

// pick chooses at most n resources to show, in their original order:
// those in progress or failed first, then the most recent others.
func pick(res []*resView, n int) (shown []*resView, hidden int) {
	if len(res) <= n {
		return res, 0
	}
	keep := make([]bool, len(res))
	k := 0
	for i, r := range res {
		if k < n-1 && !strings.HasSuffix(r.status, "_COMPLETE") {
			keep[i], k = true, k+1
		}
	}
	for i := len(res) - 1; i >= 0 && k < n-1; i-- {
		if !keep[i] {
			keep[i], k = true, k+1
		}
	}
	for i, r := range res {
		if keep[i] {
			shown = append(shown, r)
		}
	}
	return shown, len(res) - len(shown)
}

func pad(s string, w int) string {
	if len(s) >= w {
		return s
	}
	return s + strings.Repeat(" ", w-len(s))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// PaintStatus colours a status when on: failures and rollbacks red, in
// progress yellow, complete green.
func PaintStatus(status string, on bool) string {
	if !on {
		return status
	}
	var code string
	switch {
	case strings.HasSuffix(status, "_FAILED") || strings.Contains(status, "ROLLBACK"):
		code = "31"
	case strings.HasSuffix(status, "_IN_PROGRESS"):
		code = "33"
	case strings.HasSuffix(status, "_COMPLETE"):
		code = "32"
	default:
		return status
	}
	return "\x1b[" + code + "m" + status + "\x1b[0m"
}

// hms formats an elapsed time as m:ss (h:mm:ss past an hour).
func hms(d time.Duration) string {
	s := int(max(d, 0).Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// dur formats a duration compactly: 7s, 1m02s, 1h05m.
func dur(d time.Duration) string {
	s := int(max(d, 0).Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s/60%60)
}
