package cfnfake

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Actions that start a scripted stack operation.
const (
	Create           = "CreateStack"
	Update           = "ExecuteChangeSet"
	Delete           = "DeleteStack"
	ContinueRollback = "ContinueUpdateRollback"
)

// Step is one moment of a scripted operation.
type Step struct {
	// At is when the step happens, measured on the Clock from the
	// operation's call. Steps happen in order; a step that is due waits
	// for the steps before it.
	At time.Duration
	// AfterReads, when > 0, makes the step happen instead once the stack
	// has been read (DescribeStacks, DescribeStackEvents) this many times
	// since the operation's call.
	AfterReads int
	// Events are resource events, written first; they set the resources'
	// status too.
	Events []Ev
	// Status, when set, is the stack's new status, recorded by a stack
	// event (ResourceType AWS::CloudFormation::Stack) unless Silent.
	Status string
	Reason string
	Silent bool
	// Outputs replace the stack's outputs.
	Outputs map[string]string
	// Hold, when set, keeps the step (and those after it) from happening
	// until the channel is closed: the stack stays where the steps before
	// left it, in progress, for as long as the test wants.
	Hold <-chan struct{}
}

// Ev is a resource event in a script.
type Ev struct {
	LogicalID, Type, Status, Reason string
}

// Resource is a resource of a seeded stack.
type Resource struct {
	LogicalID, Type, PhysicalID, Status, Reason string
}

// Seed describes a stack that exists before the test starts.
type Seed struct {
	Name, Status, Reason  string // Status defaults to CREATE_COMPLETE
	Template              string
	Params, Outputs, Tags map[string]string
	Resources             []Resource // Status defaults to CREATE_COMPLETE
}

type kv struct{ k, v string }

func kvs(m map[string]string) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].k < out[j].k })
	return out
}

type stack struct {
	id, name, status, reason string
	created, updated         time.Time
	disableRollback          bool
	template                 string
	params, tags, outputs    []kv
	capabilities             []string
	resources                []*resource
	events                   []event // oldest first
	deleted                  bool
	deletedAt                time.Time
	retain                   []string // resources the delete keeps
	run                      *run
}

type resource struct {
	logical, typ, physical, status, reason string
	updated                                time.Time
}

type event struct {
	id, logical, physical, typ, status, reason, token string
	at                                                time.Time
}

type run struct {
	action, token string
	start         time.Time
	steps         []Step
	next, reads   int
}

type scriptKey struct{ stack, action string }

// Script queues the steps of the next action (Create, Update, Delete,
// ContinueRollback) on the stack named name. Without one, an operation
// succeeds in two seconds with an event per resource of the template.
func (s *Server) Script(name, action string, steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := scriptKey{name, action}
	s.scripts[k] = append(s.scripts[k], steps)
}

// Seed creates a stack with a plausible event history, as if it had been
// created (and, for another Status, had then failed) before the test.
func (s *Server) Seed(seed Seed) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Clock.Now()
	t := now.Add(-time.Hour)
	st := &stack{
		name: seed.Name, status: "CREATE_IN_PROGRESS", created: t, updated: t,
		template: seed.Template, params: kvs(seed.Params), tags: kvs(seed.Tags), outputs: kvs(seed.Outputs),
	}
	st.id = s.stackID(seed.Name)
	s.stacks = append(s.stacks, st)
	s.emit(st, event{logical: st.name, physical: st.id, typ: stackType, status: "CREATE_IN_PROGRESS", reason: "User Initiated", at: t})
	for _, r := range seed.Resources {
		t = t.Add(time.Second)
		s.resourceEvent(st, Ev{r.LogicalID, r.Type, "CREATE_IN_PROGRESS", ""}, "", t)
		t = t.Add(time.Second)
		s.resourceEvent(st, Ev{r.LogicalID, r.Type, "CREATE_COMPLETE", ""}, "", t)
		if r.PhysicalID != "" {
			st.res(r.LogicalID).physical = r.PhysicalID
		}
	}
	t = t.Add(time.Second)
	s.emit(st, event{logical: st.name, physical: st.id, typ: stackType, status: "CREATE_COMPLETE", at: t})
	st.status = "CREATE_COMPLETE"
	if seed.Status != "" && seed.Status != "CREATE_COMPLETE" {
		for _, r := range seed.Resources {
			if r.Status != "" && r.Status != "CREATE_COMPLETE" {
				t = t.Add(time.Second)
				s.resourceEvent(st, Ev{r.LogicalID, r.Type, r.Status, r.Reason}, "", t)
			}
		}
		t = t.Add(time.Second)
		st.status, st.reason, st.updated = seed.Status, seed.Reason, t
		s.emit(st, event{logical: st.name, physical: st.id, typ: stackType, status: seed.Status, reason: seed.Reason, at: t})
		if seed.Status == "DELETE_COMPLETE" {
			st.deleted, st.deletedAt = true, t
		}
	}
	return st.id
}

// Status returns the current status of the live stack named name ("" if none).
func (s *Server) Status(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.live(name); st != nil {
		return st.status
	}
	return ""
}

func (s *Server) stackID(name string) string {
	s.seq++
	return fmt.Sprintf("arn:aws:cloudformation:us-east-1:123456789012:stack/%s/%08x-0000-4000-8000-%012x", name, s.seq, s.seq)
}

const stackType = "AWS::CloudFormation::Stack"

// live finds a stack that is not deleted, by name or ID.
func (s *Server) live(nameOrID string) *stack {
	for _, st := range s.stacks {
		if !st.deleted && (st.name == nameOrID || st.id == nameOrID) {
			return st
		}
	}
	return nil
}

// find finds a stack by name (live ones only, as CloudFormation does) or
// by ID (deleted ones too).
func (s *Server) find(nameOrID string) *stack {
	if st := s.live(nameOrID); st != nil {
		return st
	}
	for _, st := range s.stacks {
		if st.id == nameOrID {
			return st
		}
	}
	return nil
}

func (st *stack) res(logical string) *resource {
	for _, r := range st.resources {
		if r.logical == logical {
			return r
		}
	}
	return nil
}

func (s *Server) emit(st *stack, e event) {
	s.seq++
	e.id = fmt.Sprintf("%s-%08d", strings.ToLower(e.logical), s.seq)
	st.events = append(st.events, e)
}

func (s *Server) resourceEvent(st *stack, ev Ev, token string, at time.Time) {
	r := st.res(ev.LogicalID)
	if r == nil {
		r = &resource{logical: ev.LogicalID, typ: ev.Type}
		st.resources = append(st.resources, r)
	}
	if ev.Type != "" {
		r.typ = ev.Type
	}
	if r.physical == "" && ev.Status != "CREATE_IN_PROGRESS" && !strings.HasSuffix(ev.Status, "_FAILED") {
		r.physical = fmt.Sprintf("%s-%s-%04d", st.name, strings.ToLower(ev.LogicalID), len(st.resources))
	}
	r.status, r.reason, r.updated = ev.Status, ev.Reason, at
	s.emit(st, event{logical: r.logical, physical: r.physical, typ: r.typ, status: ev.Status, reason: ev.Reason, token: token, at: at})
}

// start begins an operation on st with its script.
func (s *Server) start(st *stack, action, token string) {
	k := scriptKey{st.name, action}
	var steps []Step
	if q := s.scripts[k]; len(q) > 0 {
		steps, s.scripts[k] = q[0], q[1:]
	} else {
		steps = s.defaultScript(st, action)
	}
	st.run = &run{action: action, token: token, start: s.Clock.Now(), steps: steps}
	s.advanceStack(st)
	if n := s.running(); n > s.maxRunning {
		s.maxRunning = n
	}
}

func (s *Server) running() int {
	n := 0
	for _, st := range s.stacks {
		if st.run != nil {
			n++
		}
	}
	return n
}

// Running returns how many stack operations are in progress now.
func (s *Server) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running()
}

// MaxRunning returns the most stack operations that were ever in
// progress at once.
func (s *Server) MaxRunning() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxRunning
}

// advance applies every due step of every running operation.
func (s *Server) advance() {
	for _, st := range s.stacks {
		s.advanceStack(st)
	}
}

func (s *Server) advanceStack(st *stack) {
	r := st.run
	if r == nil {
		return
	}
	now := s.Clock.Now()
	for r.next < len(r.steps) {
		step := r.steps[r.next]
		if step.Hold != nil {
			select {
			case <-step.Hold:
			default:
				return
			}
		}
		at := r.start.Add(step.At)
		if step.AfterReads > 0 {
			if r.reads < step.AfterReads {
				return
			}
			at = now
		} else if now.Before(at) {
			return
		}
		r.next++
		for _, ev := range step.Events {
			s.resourceEvent(st, ev, r.token, at)
		}
		if step.Outputs != nil {
			st.outputs = kvs(step.Outputs)
		}
		if step.Status != "" {
			st.status, st.reason = step.Status, step.Reason
			if !step.Silent {
				s.emit(st, event{logical: st.name, physical: st.id, typ: stackType, status: step.Status, reason: step.Reason, token: r.token, at: at})
			}
			if step.Status == "DELETE_COMPLETE" {
				st.deleted, st.deletedAt = true, at
			}
		}
	}
	st.run = nil
}

// read counts a read of st for AfterReads steps, then applies due steps.
func (s *Server) read(st *stack) {
	if st.run != nil {
		st.run.reads++
		s.advanceStack(st)
	}
}

// templateResources lists a JSON template's resources, sorted by logical id.
func templateResources(body string) []Ev {
	var t struct {
		Resources map[string]struct{ Type string }
	}
	if json.Unmarshal([]byte(body), &t) != nil {
		return nil
	}
	out := make([]Ev, 0, len(t.Resources))
	for id, r := range t.Resources {
		out = append(out, Ev{LogicalID: id, Type: r.Type})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out
}

func withStatus(evs []Ev, status string) []Ev {
	out := make([]Ev, len(evs))
	for i, e := range evs {
		out[i] = Ev{e.LogicalID, e.Type, status, ""}
	}
	return out
}

// defaultScript: the operation succeeds in two seconds.
func (s *Server) defaultScript(st *stack, action string) []Step {
	switch action {
	case Create:
		res := templateResources(st.template)
		return []Step{
			{Status: "CREATE_IN_PROGRESS", Reason: "User Initiated"},
			{Events: withStatus(res, "CREATE_IN_PROGRESS")},
			{At: time.Second, Events: withStatus(res, "CREATE_COMPLETE")},
			{At: 2 * time.Second, Status: "CREATE_COMPLETE"},
		}
	case Update:
		return []Step{
			{Status: "UPDATE_IN_PROGRESS", Reason: "User Initiated"},
			{At: time.Second, Status: "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS"},
			{At: 2 * time.Second, Status: "UPDATE_COMPLETE"},
		}
	case Delete:
		return deleteScript(st, st.retain)
	case ContinueRollback:
		return []Step{
			{Status: "UPDATE_ROLLBACK_IN_PROGRESS"},
			{At: time.Second, Status: "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS"},
			{At: 2 * time.Second, Status: "UPDATE_ROLLBACK_COMPLETE"},
		}
	}
	return nil
}
