package stacks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

// Revisions.
//
// A change set is computed from what the caller read; if someone else
// changes the stack in between, executing it would silently revert their
// change (a lost update). CloudFormation has no stack-level version to
// make ExecuteChangeSet conditional on, but every operation on a stack
// writes stack events, so the newest event's ID serves as one: it changes
// whenever the stack does, and LastUpdatedTime does not (not every
// implementation sets it, and it has a resolution of a second).
//
// A caller reads Revision *before* reading the stack's state it derives
// the update from, and passes it in Spec.Revision. Plan refuses at once
// when the stack has moved on, and Apply checks again right before
// ExecuteChangeSet — the change set is then deleted and nothing runs. The
// check narrows the window to the time between two calls; the lease
// (internal/lease) is what keeps two clusterctl runs apart.

// ErrChanged: the stack changed after it was read; nothing was applied.
var ErrChanged = errors.New("stack changed since it was read")

// ChangedError is returned by Plan and Apply when the stack's revision is
// no longer the one the update was based on. errors.Is(err, ErrChanged).
type ChangedError struct {
	Stack string
	// Was and Now are the revisions (newest event IDs) read and found.
	Was, Now string
	// Latest is the newest event now: what changed the stack, when known.
	Latest *Event
}

func (e *ChangedError) Error() string {
	s := fmt.Sprintf("stack %q changed since it was read", e.Stack)
	if ev := e.Latest; ev != nil {
		what := ev.Status
		if !ev.IsStack() {
			what = ev.LogicalID + " " + ev.Status
		}
		s += fmt.Sprintf(" (%s at %s)", what, ev.Time.UTC().Format(time.DateTime+" UTC"))
	}
	return s + "; nothing was applied: run the command again to plan against the current state"
}

func (e *ChangedError) Is(target error) bool { return target == ErrChanged }

// Revision returns the stack's current revision: the ID of its newest
// event. Read it before reading the state an update is derived from.
func (m *Manager) Revision(ctx context.Context, name string) (string, error) {
	ev, err := m.latest(ctx, name)
	if err != nil || ev == nil {
		return "", err
	}
	return ev.ID, nil
}

// latest returns the stack's newest event (nil if it has none).
func (m *Manager) latest(ctx context.Context, name string) (*Event, error) {
	out, err := m.api.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(name)})
	if err != nil {
		if isNotFound(err) {
			return nil, newNotFound(name, err)
		}
		return nil, fmt.Errorf("reading events of stack %q: %w", name, err)
	}
	if len(out.StackEvents) == 0 {
		return nil, nil
	}
	ev := eventFrom(out.StackEvents[0])
	return &ev, nil
}

// checkRevision refuses when the newest event is not the revision was.
func checkRevision(stack, was string, latest *Event) error {
	now := ""
	if latest != nil {
		now = latest.ID
	}
	if was == "" || was == now {
		return nil
	}
	return &ChangedError{Stack: stack, Was: was, Now: now, Latest: latest}
}
