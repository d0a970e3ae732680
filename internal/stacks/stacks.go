// Package stacks runs CloudFormation operations for clusterctl: create, plan
// and apply updates through change sets, delete, describe and list stacks,
// wait with live progress, classify stack statuses and explain failures.
//
// Everything goes through the API interface, which *cloudformation.Client
// satisfies; tests drive the real SDK client against internal/cfnfake.
package stacks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

// API is the subset of *cloudformation.Client this package uses.
type API interface {
	CreateStack(ctx context.Context, in *cloudformation.CreateStackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.CreateStackOutput, error)
	DeleteStack(ctx context.Context, in *cloudformation.DeleteStackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DeleteStackOutput, error)
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
	DescribeStackEvents(ctx context.Context, in *cloudformation.DescribeStackEventsInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStackEventsOutput, error)
	ListStackResources(ctx context.Context, in *cloudformation.ListStackResourcesInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ListStackResourcesOutput, error)
	ListStacks(ctx context.Context, in *cloudformation.ListStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ListStacksOutput, error)
	CreateChangeSet(ctx context.Context, in *cloudformation.CreateChangeSetInput, optFns ...func(*cloudformation.Options)) (*cloudformation.CreateChangeSetOutput, error)
	DescribeChangeSet(ctx context.Context, in *cloudformation.DescribeChangeSetInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeChangeSetOutput, error)
	ExecuteChangeSet(ctx context.Context, in *cloudformation.ExecuteChangeSetInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ExecuteChangeSetOutput, error)
	DeleteChangeSet(ctx context.Context, in *cloudformation.DeleteChangeSetInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DeleteChangeSetOutput, error)
	GetTemplate(ctx context.Context, in *cloudformation.GetTemplateInput, optFns ...func(*cloudformation.Options)) (*cloudformation.GetTemplateOutput, error)
	ContinueUpdateRollback(ctx context.Context, in *cloudformation.ContinueUpdateRollbackInput, optFns ...func(*cloudformation.Options)) (*cloudformation.ContinueUpdateRollbackOutput, error)
}

var _ API = (*cloudformation.Client)(nil)

// MaxTemplateBody is CloudFormation's limit for an inline template body.
const MaxTemplateBody = 51200

// Param is one stack parameter. UsePrevious keeps the stack's current value
// (updates only); Value is then ignored.
type Param struct {
	Key, Value  string
	UsePrevious bool
}

// Spec describes a stack to create or update.
type Spec struct {
	Name string
	// Template is the template body. Empty in Plan reuses the stack's
	// current template (a parameter-only update).
	Template     []byte
	Parameters   []Param
	Tags         map[string]string
	Capabilities []string
	// DisableRollback keeps a failed stack for debugging (--no-rollback).
	DisableRollback bool
	// Revision (updates only) is the stack's Revision, read before the
	// state this spec was derived from. Plan and Apply refuse with a
	// *ChangedError once the stack has changed since. Empty: Plan reads
	// it itself, so Apply still catches a change made after the plan.
	Revision string
}

// Stack is what DescribeStacks says about one stack.
type Stack struct {
	Name, ID, Status, StatusReason string
	Parameters, Outputs, Tags      map[string]string
	// Resolved holds the values CloudFormation resolved for SSM-typed
	// parameters (the AMI behind an image path).
	Resolved         map[string]string
	Created, Updated time.Time // Updated = LastUpdatedTime, or Created if never updated
	// Settled: Wait found the stack already in a final status, with no
	// operation in progress to wait for.
	Settled bool
}

// Class returns Classify(s.Status).
func (s *Stack) Class() Class { return Classify(s.Status) }

// Outcome is how one stack operation ended: the stack's last known status
// (empty when it never started) and how long the operation took.
type Outcome struct {
	Stack    string
	Status   string
	Duration time.Duration
}

// Change is one resource change of a change set.
type Change struct {
	LogicalID, ResourceType, Action, Replacement string // Action Add|Modify|Remove|Import|Dynamic; Replacement True|False|Conditional|""
	PhysicalID                                   string
	Scope                                        []string // what is modified: Properties, Metadata, Tags, ...
}

// Plan is a change set ready to be applied or discarded.
type Plan struct {
	Stack, ChangeSetName, ChangeSetID string
	Changes                           []Change
	// Empty is true when CloudFormation found nothing to change; the change
	// set is already deleted and Apply is a no-op.
	Empty bool
	// DisableRollback is carried from the Spec to ExecuteChangeSet.
	DisableRollback bool
	// Revision is the stack revision the plan is based on; Apply executes
	// the change set only if the stack is still at it.
	Revision string
}

// Replacements reports the changes that replace a resource (True or Conditional).
func (p *Plan) Replacements() []Change {
	var out []Change
	for _, c := range p.Changes {
		if c.Replacement == "True" || c.Replacement == "Conditional" {
			out = append(out, c)
		}
	}
	return out
}

// Event is one stack event.
type Event struct {
	ID, StackID, StackName       string
	LogicalID, PhysicalID        string
	ResourceType, Status, Reason string
	Token                        string // ClientRequestToken of the call that caused it
	Time                         time.Time
}

// IsStack reports whether the event is about the stack itself (its status),
// not one of its resources.
func (e Event) IsStack() bool {
	return e.ResourceType == stackType && e.LogicalID == e.StackName
}

// Failed reports whether the event records a failure.
func (e Event) Failed() bool { return strings.HasSuffix(e.Status, "_FAILED") }

// Resource is one resource of a stack.
type Resource struct {
	LogicalID, PhysicalID, ResourceType, Status, Reason string
}

const stackType = "AWS::CloudFormation::Stack"

// Clock is the time source for polling and progress; tests inject a fake.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Options configure a Manager.
type Options struct {
	// RunID identifies one command run. Every mutating call gets a
	// ClientRequestToken "<RunID>-<n>-<op>", so SDK retries are idempotent
	// and this run's events can be told apart. Empty = NewRunID().
	RunID    string
	Progress io.Writer // live progress (stderr); nil = quiet
	TTY      bool      // redraw in place; otherwise one line per new event
	Color    bool
	Clock    Clock // nil = real time
	Width    int   // terminal width for TTY redraws; 0 = asked from Progress if it is a terminal, else 120
}

// Manager runs stack operations. It is safe for concurrent use.
type Manager struct {
	api   API
	clock Clock
	run   string
	color bool
	seq   atomic.Int64
	prog  sink
}

// NewManager returns a Manager calling api.
func NewManager(api API, opts Options) *Manager {
	m := &Manager{api: api, clock: opts.Clock, run: sanitizeRunID(opts.RunID), color: opts.Color}
	if m.clock == nil {
		m.clock = realClock{}
	}
	if m.run == "" {
		m.run = NewRunID()
	}
	m.prog = newSink(opts, m.clock)
	return m
}

// NewRunID returns a fresh run identifier, "clusterctl-" plus 12 random hex digits.
func NewRunID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return "clusterctl-" + hex.EncodeToString(b)
}

// RunID is the prefix of every ClientRequestToken this Manager sends.
func (m *Manager) RunID() string { return m.run }

// Owns reports whether a ClientRequestToken (e.g. of an event) came from this run.
func (m *Manager) Owns(token string) bool { return strings.HasPrefix(token, m.run+"-") }

// maxRunID leaves room for "-<n>-<op>" within the 128-character token limit.
const maxRunID = 96

// sanitizeRunID maps id onto the token alphabet [a-zA-Z0-9][-a-zA-Z0-9]*.
func sanitizeRunID(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.TrimLeft(b.String(), "-")
	if len(s) > maxRunID {
		s = s[:maxRunID]
	}
	return strings.TrimRight(s, "-")
}

// token returns a fresh ClientRequestToken for one mutating call. The SDK
// resends the same input on retries, so a retried call carries the same token.
func (m *Manager) token(op string) string {
	return m.run + "-" + strconv.FormatInt(m.seq.Add(1), 10) + "-" + op
}

// sleep waits d on the manager's clock, or until ctx is done.
func (m *Manager) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-m.clock.After(d):
		return nil
	}
}
