package stacks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/clusterctl/clusterctl/internal/awsx"
)

// Polling.
//
// Each tick makes ONE call: DescribeStackEvents, paging back only to the
// newest event already seen (usually a single page). Those events feed the
// live progress, and the stack's own event (ResourceType
// AWS::CloudFormation::Stack) carries its status, so a final status is seen
// on the first tick after CloudFormation writes it. That event is then
// confirmed with DescribeStacks (authoritative, and it brings the outputs).
//
// CloudFormation always writes a stack event when the stack's status
// changes, but eventually consistent reads can lag, and other
// implementations write fewer events (moto: stack events only, none for
// resources). Nothing here needs resource events: they only feed progress
// and root causes, which fall back on the stack's own reasons. So when a tick has learnt nothing for statusEvery, the
// next tick asks DescribeStacks instead: still one call per tick, and a
// missing event delays detection by at most statusEvery plus one tick
// instead of hanging.
//
// The delays grow 250ms, 500ms, 1s, then stay at 1.5s: short operations
// (and moto, which completes synchronously) return quickly, a final status
// is noticed at most 1.5s after its event, and a long wait costs about
// two calls every three seconds per stack, well inside CloudFormation's
// API rate limits.
var pollSchedule = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}

const (
	statusEvery   = 3 * time.Second
	maxEventPages = 20 // per tick: 2,000 events, far more than a tick ever brings
	maxHistory    = 100
	maxErrStreak  = 3 // transient errors in a row (after SDK retries) before giving up
)

func pollDelay(i int) time.Duration {
	if i >= len(pollSchedule) {
		return pollSchedule[len(pollSchedule)-1]
	}
	return pollSchedule[i]
}

// op is one stack operation being waited on.
type op struct {
	name   string // as the user knows it
	id     string // stack ID once known: a deleted stack stays visible by ID
	kind   string // create, update, delete, continue-rollback, wait, follow
	token  string // ClientRequestToken of the mutating call; "" when re-attaching
	start  time.Time
	status string          // last status known
	seen   map[string]bool // event IDs already seen
	events []Event         // this operation's events, oldest first
	out    sink            // progress; defaults to the manager's
}

func (m *Manager) newOp(name, kind, token string) *op {
	return &op{name: name, id: name, kind: kind, token: token, start: m.clock.Now(), seen: map[string]bool{}, out: m.prog}
}

// record notes events (oldest first) as seen and part of the operation.
func (o *op) record(evs []Event) {
	for _, e := range evs {
		o.seen[e.ID] = true
		if e.IsStack() {
			o.status = e.Status
		}
	}
	o.events = append(o.events, evs...)
}

// prime marks the events already there, so that only later ones count as
// this operation's, and learns the stack ID. It is called before the
// mutating call: events cannot be told apart by timestamps (clock skew)
// nor always by token (other tools, moto). It returns the newest event
// (the stack's revision), nil when there is none.
func (m *Manager) prime(ctx context.Context, o *op) (*Event, error) {
	out, err := m.api.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(o.id)})
	if err != nil {
		if isNotFound(err) {
			return nil, newNotFound(o.name, err)
		}
		return nil, fmt.Errorf("reading events of stack %q: %w", o.name, err)
	}
	for _, e := range out.StackEvents {
		o.seen[aws.ToString(e.EventId)] = true
		if o.id == o.name && e.StackId != nil {
			o.id = *e.StackId
		}
	}
	if len(out.StackEvents) == 0 {
		return nil, nil
	}
	latest := eventFrom(out.StackEvents[0])
	return &latest, nil
}

// fetchNew returns the events newer than those seen, oldest first.
func (m *Manager) fetchNew(ctx context.Context, o *op) ([]Event, error) {
	var fresh []Event
	var next *string
	for page := 0; page < maxEventPages; page++ {
		out, err := m.api.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(o.id), NextToken: next})
		if err != nil {
			return nil, err
		}
		stop := false
		for _, e := range out.StackEvents {
			ev := eventFrom(e)
			if o.seen[ev.ID] {
				stop = true
				break
			}
			fresh = append(fresh, ev)
		}
		if stop || out.NextToken == nil || *out.NextToken == "" {
			break
		}
		next = out.NextToken
	}
	reverse(fresh)
	o.record(fresh)
	return fresh, nil
}

func reverse(evs []Event) {
	for i, j := 0, len(evs)-1; i < j; i, j = i+1, j-1 {
		evs[i], evs[j] = evs[j], evs[i]
	}
}

// history returns all events of a stack (up to maxHistory pages), oldest
// first, and the stack ID.
func history(ctx context.Context, api API, name string) ([]Event, string, error) {
	var evs []Event
	var next *string
	id := name
	for page := 0; page < maxHistory; page++ {
		out, err := api.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(name), NextToken: next})
		if err != nil {
			if isNotFound(err) {
				return nil, "", newNotFound(name, err)
			}
			return nil, "", fmt.Errorf("reading events of stack %q: %w", name, err)
		}
		for _, e := range out.StackEvents {
			ev := eventFrom(e)
			if ev.StackID != "" {
				id = ev.StackID
			}
			evs = append(evs, ev)
		}
		if out.NextToken == nil || *out.NextToken == "" {
			break
		}
		next = out.NextToken
	}
	reverse(evs)
	return evs, id, nil
}

func (m *Manager) describe(ctx context.Context, o *op) (*Stack, error) {
	out, err := m.api.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(o.id)})
	if err != nil {
		return nil, err
	}
	if len(out.Stacks) == 0 {
		return nil, newNotFound(o.name, nil)
	}
	s := FromSDK(out.Stacks[0])
	return &s, nil
}

func transient(err error) bool {
	if _, ok := awsx.Unreachable(err); ok {
		// The SDK has already tried a few times and waited on each.
		return false
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// await polls until the operation reaches a final status.
func (m *Manager) await(ctx context.Context, o *op) (*Stack, error) {
	learnt := m.clock.Now() // when we last learnt something
	streak := 0
	for i := 0; ; i++ {
		if err := m.sleep(ctx, pollDelay(i)); err != nil {
			return nil, m.detach(o, err)
		}
		now := m.clock.Now()
		var st *Stack
		var err error
		if now.Sub(learnt) >= statusEvery {
			st, err = m.describe(ctx, o)
		} else {
			var fresh []Event
			if fresh, err = m.fetchNew(ctx, o); err == nil && len(fresh) > 0 {
				learnt = now
				o.out.add(o, fresh)
				if ev := lastStackEvent(fresh); ev != nil && Classify(ev.Status).Final() {
					st, err = m.describe(ctx, o)
				}
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, m.detach(o, ctx.Err())
			}
			if o.kind == "delete" && isNotFound(err) {
				st = &Stack{Name: o.name, ID: o.id, Status: "DELETE_COMPLETE"}
				return m.finish(ctx, o, st)
			}
			if streak++; streak > maxErrStreak || !transient(err) {
				o.out.end(o, "")
				return nil, fmt.Errorf("waiting for stack %q: %w", o.name, err)
			}
			continue
		}
		streak = 0
		o.out.tick()
		if st == nil {
			continue
		}
		learnt = now
		o.status = st.Status
		if Classify(st.Status).Final() {
			return m.finish(ctx, o, st)
		}
	}
}

func lastStackEvent(evs []Event) *Event {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].IsStack() {
			return &evs[i]
		}
	}
	return nil
}

func (m *Manager) detach(o *op, err error) error {
	o.out.end(o, "")
	return &StillRunningError{Stack: o.name, Op: o.kind, Status: o.status, Err: err}
}

func succeeded(kind, status string) bool {
	switch kind {
	case "create":
		return status == "CREATE_COMPLETE"
	case "update":
		return status == "UPDATE_COMPLETE"
	case "delete":
		return status == "DELETE_COMPLETE"
	case "continue-rollback":
		return status == "UPDATE_ROLLBACK_COMPLETE"
	case "follow":
		return true
	}
	return Classify(status) == Done
}

// finish reports the outcome of a final status.
func (m *Manager) finish(ctx context.Context, o *op, st *Stack) (*Stack, error) {
	// Events written between the last tick and the final status.
	if fresh, err := m.fetchNew(ctx, o); err == nil && len(fresh) > 0 {
		o.out.add(o, fresh)
	}
	o.out.end(o, st.Status)
	if succeeded(o.kind, st.Status) {
		return st, nil
	}
	return st, m.failure(ctx, o, st)
}

// failure builds the OperationError for a stack that ended failed.
func (m *Manager) failure(ctx context.Context, o *op, st *Stack) *OperationError {
	var rc *Event
	if o.token == "" {
		// Re-attached: the failure may predate our first look.
		if hist, _, err := history(ctx, m.api, o.id); err == nil {
			rc = RootCause(currentOperation(hist))
		}
	}
	if rc == nil {
		rc = RootCause(o.own())
	}
	var left []Resource
	if Classify(st.Status) == Stuck {
		if rs, err := m.Resources(ctx, o.id); err == nil {
			left = Failed(rs)
		}
	}
	return &OperationError{
		Stack: o.name, Op: o.kind, Status: st.Status, Reason: st.StatusReason,
		RootCause: rc, LeftBehind: left, Tags: st.Tags,
	}
}

// own returns the events caused by this operation's call: those carrying
// its token when CloudFormation records tokens, else all events since the
// operation began.
func (o *op) own() []Event {
	if o.token == "" || !hasToken(o.events, o.token) {
		return o.events
	}
	var out []Event
	for _, e := range o.events {
		if e.Token == o.token {
			out = append(out, e)
		}
	}
	return out
}

// currentOperation cuts a stack's history (oldest first) to its last
// operation: from the last stack event that starts one.
func currentOperation(hist []Event) []Event {
	for i := len(hist) - 1; i >= 0; i-- {
		e := hist[i]
		if !e.IsStack() {
			continue
		}
		switch e.Status {
		case "CREATE_IN_PROGRESS", "UPDATE_IN_PROGRESS", "DELETE_IN_PROGRESS", "IMPORT_IN_PROGRESS":
			return hist[i:]
		}
	}
	return hist
}

// RootCause picks the event that explains a failed operation from its
// events (oldest first): the earliest resource failure that is not a
// cancellation ("Resource creation cancelled" follows the real failure),
// else the earliest resource failure, else the earliest stack event with
// a failure reason. nil when the events do not say.
func RootCause(evs []Event) *Event {
	var cancelled, stackLevel *Event
	for i := range evs {
		e := evs[i]
		if e.IsStack() {
			if stackLevel == nil && e.Reason != "" && (e.Failed() || strings.Contains(e.Status, "ROLLBACK_IN_PROGRESS")) {
				stackLevel = &e
			}
			continue
		}
		if !e.Failed() {
			continue
		}
		if !isCancellation(e.Reason) {
			return &e
		}
		if cancelled == nil {
			cancelled = &e
		}
	}
	if cancelled != nil {
		return cancelled
	}
	return stackLevel
}

func isCancellation(reason string) bool {
	r := strings.ToLower(reason)
	return strings.Contains(r, "cancelled") || strings.Contains(r, "canceled")
}

// Wait re-attaches to the operation in progress on a stack, with live
// progress, and returns its outcome: the stack, plus an *OperationError if
// it ended failed. A stack with nothing in progress returns at once, with
// an error if its last operation failed. A deletion is an operation like
// any other: a stack deleted meanwhile, or before Wait was called (found by
// its ID, or by name among the deleted stacks), is DELETE_COMPLETE and a
// success; DELETE_FAILED is a failure. ErrNotFound only when no stack of
// that name ever existed (within CloudFormation's 90 days of memory).
func (m *Manager) Wait(ctx context.Context, name string) (*Stack, error) {
	o := m.newOp(name, "wait", "")
	// Events first, status second: a final event written in between shows
	// up as a final status, never as an event we consider already seen.
	if _, err := m.prime(ctx, o); err != nil {
		if errors.Is(err, ErrNotFound) {
			return m.LastDeleted(ctx, name)
		}
		return nil, err
	}
	st, err := m.describe(ctx, o)
	if err != nil {
		if isNotFound(err) {
			return m.LastDeleted(ctx, name)
		}
		return nil, fmt.Errorf("describing stack %q: %w", name, err)
	}
	o.status = st.Status
	if Classify(st.Status).Final() {
		st.Settled = true
		if succeeded(o.kind, st.Status) {
			return st, nil
		}
		return st, m.failure(ctx, o, st)
	}
	o.out.begin(o)
	return m.await(ctx, o)
}
