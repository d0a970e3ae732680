package stacks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/smithy-go"

	"github.com/clusterctl/clusterctl/internal/errs"
)

// Get describes one stack; errors.Is(err, ErrNotFound) when it does not exist.
func (m *Manager) Get(ctx context.Context, name string) (*Stack, error) {
	out, err := m.api.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	if err != nil {
		if isNotFound(err) {
			return nil, newNotFound(name, err)
		}
		return nil, fmt.Errorf("describing stack %q: %w", name, err)
	}
	if len(out.Stacks) == 0 {
		return nil, newNotFound(name, nil)
	}
	s := FromSDK(out.Stacks[0])
	return &s, nil
}

// List returns every stack that is not DELETE_COMPLETE.
func (m *Manager) List(ctx context.Context) ([]Stack, error) {
	var out []Stack
	p := cloudformation.NewDescribeStacksPaginator(m.api, &cloudformation.DescribeStacksInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing stacks: %w", err)
		}
		for _, s := range page.Stacks {
			if s.StackStatus == types.StackStatusDeleteComplete {
				continue
			}
			out = append(out, FromSDK(s))
		}
	}
	return out, nil
}

// Resources lists the stack's resources (all pages).
func (m *Manager) Resources(ctx context.Context, name string) ([]Resource, error) {
	var out []Resource
	p := cloudformation.NewListStackResourcesPaginator(m.api, &cloudformation.ListStackResourcesInput{StackName: aws.String(name)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if isNotFound(err) {
				return nil, newNotFound(name, err)
			}
			return nil, fmt.Errorf("listing resources of stack %q: %w", name, err)
		}
		for _, r := range page.StackResourceSummaries {
			out = append(out, resourceFrom(r))
		}
	}
	return out, nil
}

// ErrNoResource: the stack has no resource of that logical ID.
var ErrNoResource = errors.New("no such resource")

// Resource returns one resource of a stack by its logical ID — its
// physical ID is what the stack really owns, whatever its outputs say.
// errors.Is(err, ErrNoResource) when the stack has no such resource, and
// ErrNotFound when there is no such stack. It lists the stack's resources
// rather than describing the one: a stack holds a handful, and not every
// implementation describes one resource reliably (moto fails on stacks
// with resources it does not model).
func (m *Manager) Resource(ctx context.Context, stack, logicalID string) (*Resource, error) {
	rs, err := m.Resources(ctx, stack)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.LogicalID == logicalID {
			return &r, nil
		}
	}
	return nil, fmt.Errorf("stack %q: resource %s: %w", stack, logicalID, ErrNoResource)
}

// Failed keeps the resources whose status is a failure.
func Failed(rs []Resource) []Resource {
	var out []Resource
	for _, r := range rs {
		if strings.HasSuffix(r.Status, "_FAILED") {
			out = append(out, r)
		}
	}
	return out
}

// Template returns the stack's current template body, as submitted.
func (m *Manager) Template(ctx context.Context, name string) ([]byte, error) {
	out, err := m.api.GetTemplate(ctx, &cloudformation.GetTemplateInput{
		StackName: aws.String(name), TemplateStage: types.TemplateStageOriginal,
	})
	if err != nil {
		if isNotFound(err) {
			return nil, newNotFound(name, err)
		}
		return nil, fmt.Errorf("getting template of stack %q: %w", name, err)
	}
	return []byte(aws.ToString(out.TemplateBody)), nil
}

func checkSpec(spec Spec, needTemplate bool) error {
	if spec.Name == "" {
		return errs.Usage("stack name is empty")
	}
	if needTemplate && len(spec.Template) == 0 {
		return errs.Usage("template for stack %q is empty", spec.Name)
	}
	if n := len(spec.Template); n > MaxTemplateBody {
		return errs.Usage("template for stack %q is %d bytes, over CloudFormation's %d-byte limit for a template body", spec.Name, n, MaxTemplateBody)
	}
	return nil
}

// Create creates the stack and waits for it with live progress. A failed
// creation returns the stack and an *OperationError. A stack of the same
// name that this run did not create is an error wrapping ErrAlreadyExists.
func (m *Manager) Create(ctx context.Context, spec Spec) (*Stack, error) {
	return m.CreateStarted(ctx, spec, nil)
}

// CreateStarted is Create calling started (when not nil) with the stack's
// id once CloudFormation has accepted the creation, before waiting for
// it: for what must happen while the stack is being created (the core's
// node agent, uploaded once its bucket exists).
func (m *Manager) CreateStarted(ctx context.Context, spec Spec, started func(id string)) (*Stack, error) {
	if err := checkSpec(spec, true); err != nil {
		return nil, err
	}
	tok := m.token("create")
	o := m.newOp(spec.Name, "create", tok)
	out, err := m.api.CreateStack(ctx, &cloudformation.CreateStackInput{
		StackName:          aws.String(spec.Name),
		TemplateBody:       aws.String(string(spec.Template)),
		Parameters:         paramsIn(spec.Parameters),
		Tags:               tagsIn(spec.Tags),
		Capabilities:       capsIn(spec.Capabilities),
		DisableRollback:    aws.Bool(spec.DisableRollback),
		ClientRequestToken: aws.String(tok),
	})
	if err != nil {
		var ae *types.AlreadyExistsException
		if !errors.As(err, &ae) {
			return nil, fmt.Errorf("creating stack %q: %w", spec.Name, err)
		}
		// A retry of our own CreateStack whose first response was lost meets
		// AlreadyExists: the stack's events carry our token, so wait on it.
		hist, id, herr := history(ctx, m.api, spec.Name)
		if herr != nil || !hasToken(hist, tok) {
			return nil, fmt.Errorf("creating stack %q: stack %w", spec.Name, ErrAlreadyExists)
		}
		o.id = id
		m.prog.begin(o)
		o.record(hist)
		m.prog.add(o, hist)
		if started != nil {
			started(id)
		}
		return m.await(ctx, o)
	}
	o.id = aws.ToString(out.StackId)
	m.prog.begin(o)
	if started != nil {
		started(o.id)
	}
	return m.await(ctx, o)
}

func hasToken(evs []Event, tok string) bool {
	for _, e := range evs {
		if e.Token == tok {
			return true
		}
	}
	return false
}

// changeSetName derives a change set name (pattern [a-zA-Z][-a-zA-Z0-9]*)
// from a token, so change sets of this run are recognisable too.
func changeSetName(tok string) string {
	if c := tok[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		tok = "cs-" + tok
	}
	if len(tok) > 128 {
		tok = tok[:128]
	}
	return tok
}

// noChanges recognises CloudFormation's "nothing to update" outcomes.
func noChanges(reason string) bool {
	return strings.Contains(reason, "didn't contain changes") ||
		strings.Contains(reason, "No updates are to be performed")
}

// Plan creates an UPDATE change set for spec, waits until it is ready and
// describes it (all pages). When CloudFormation finds nothing to change,
// the change set is deleted and Plan.Empty is true.
func (m *Manager) Plan(ctx context.Context, spec Spec) (*Plan, error) {
	if err := checkSpec(spec, false); err != nil {
		return nil, err
	}
	// The revision the plan is based on: the caller's, checked now, or
	// the current one, for Apply to check.
	latest, err := m.latest(ctx, spec.Name)
	if err != nil {
		return nil, err
	}
	if err := checkRevision(spec.Name, spec.Revision, latest); err != nil {
		return nil, err
	}
	revision := spec.Revision
	if revision == "" && latest != nil {
		revision = latest.ID
	}
	tok := m.token("changeset")
	in := &cloudformation.CreateChangeSetInput{
		StackName:     aws.String(spec.Name),
		ChangeSetName: aws.String(changeSetName(tok)),
		ChangeSetType: types.ChangeSetTypeUpdate,
		Parameters:    paramsIn(spec.Parameters),
		Tags:          tagsIn(spec.Tags),
		Capabilities:  capsIn(spec.Capabilities),
		ClientToken:   aws.String(tok),
		Description:   aws.String("clusterctl " + m.run),
	}
	if len(spec.Template) == 0 {
		in.UsePreviousTemplate = aws.Bool(true)
	} else {
		in.TemplateBody = aws.String(string(spec.Template))
	}
	out, err := m.api.CreateChangeSet(ctx, in)
	if err != nil {
		if isNotFound(err) {
			return nil, newNotFound(spec.Name, err)
		}
		// Some implementations refuse the change set itself instead of
		// failing it (moto: "No updates are to be performed.").
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" && noChanges(ae.ErrorMessage()) {
			return &Plan{Stack: spec.Name, ChangeSetName: aws.ToString(in.ChangeSetName), Empty: true, DisableRollback: spec.DisableRollback, Revision: revision}, nil
		}
		return nil, fmt.Errorf("creating change set for stack %q: %w", spec.Name, err)
	}
	plan := &Plan{
		Stack:           spec.Name,
		ChangeSetName:   aws.ToString(in.ChangeSetName),
		ChangeSetID:     aws.ToString(out.Id),
		DisableRollback: spec.DisableRollback,
		Revision:        revision,
	}
	ready, err := m.awaitChangeSet(ctx, plan)
	if err != nil {
		cleanupChangeSet(ctx, m.api, plan)
		return nil, err
	}
	if ready.Status == types.ChangeSetStatusFailed {
		cleanupChangeSet(ctx, m.api, plan)
		reason := aws.ToString(ready.StatusReason)
		if noChanges(reason) {
			plan.Empty = true
			return plan, nil
		}
		return nil, fmt.Errorf("change set for stack %q failed: %s", spec.Name, reason)
	}
	if err := collectChanges(ctx, m.api, plan, ready); err != nil {
		return nil, err
	}
	return plan, nil
}

// awaitChangeSet polls the change set on the same schedule as stacks.
func (m *Manager) awaitChangeSet(ctx context.Context, plan *Plan) (*cloudformation.DescribeChangeSetOutput, error) {
	for i := 0; ; i++ {
		if err := m.sleep(ctx, pollDelay(i)); err != nil {
			return nil, fmt.Errorf("waiting for change set of stack %q: %w", plan.Stack, err)
		}
		out, err := m.api.DescribeChangeSet(ctx, plan.describeInput(nil))
		if err != nil {
			return nil, fmt.Errorf("describing change set of stack %q: %w", plan.Stack, err)
		}
		switch out.Status {
		case types.ChangeSetStatusCreatePending, types.ChangeSetStatusCreateInProgress:
			continue
		}
		return out, nil
	}
}

func (p *Plan) describeInput(next *string) *cloudformation.DescribeChangeSetInput {
	in := &cloudformation.DescribeChangeSetInput{ChangeSetName: aws.String(p.ChangeSetID), NextToken: next}
	if p.ChangeSetID == "" {
		in.ChangeSetName = aws.String(p.ChangeSetName)
		in.StackName = aws.String(p.Stack)
	}
	return in
}

func collectChanges(ctx context.Context, api API, plan *Plan, page *cloudformation.DescribeChangeSetOutput) error {
	for {
		for _, c := range page.Changes {
			if ch, ok := changeFrom(c); ok {
				plan.Changes = append(plan.Changes, ch)
			}
		}
		if page.NextToken == nil || *page.NextToken == "" {
			return nil
		}
		var err error
		page, err = api.DescribeChangeSet(ctx, plan.describeInput(page.NextToken))
		if err != nil {
			return fmt.Errorf("describing change set of stack %q: %w", plan.Stack, err)
		}
	}
}

// cleanupChangeSet deletes a change set we will not execute, even when ctx
// is already cancelled: leaving it would clutter the stack.
func cleanupChangeSet(ctx context.Context, api API, plan *Plan) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = deleteChangeSet(cctx, api, plan)
}

func deleteChangeSet(ctx context.Context, api API, plan *Plan) error {
	in := &cloudformation.DeleteChangeSetInput{ChangeSetName: aws.String(plan.ChangeSetID)}
	if plan.ChangeSetID == "" {
		in.ChangeSetName = aws.String(plan.ChangeSetName)
		in.StackName = aws.String(plan.Stack)
	}
	_, err := api.DeleteChangeSet(ctx, in)
	return err
}

// Discard deletes the plan's change set (dry run). An empty plan has none.
func (m *Manager) Discard(ctx context.Context, plan *Plan) error {
	if plan == nil || plan.Empty {
		return nil
	}
	if err := deleteChangeSet(ctx, m.api, plan); err != nil {
		return fmt.Errorf("deleting change set of stack %q: %w", plan.Stack, err)
	}
	return nil
}

// Apply executes the plan's change set and waits with live progress. An
// empty plan just returns the stack. A failed update returns the stack and
// an *OperationError. A stack changed since the plan's revision is not
// updated: the change set is deleted and the error is a *ChangedError.
func (m *Manager) Apply(ctx context.Context, plan *Plan) (*Stack, error) {
	if plan == nil {
		return nil, errs.Usage("no plan to apply")
	}
	if plan.Empty {
		return m.Get(ctx, plan.Stack)
	}
	tok := m.token("update")
	o := m.newOp(plan.Stack, "update", tok)
	latest, err := m.prime(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := checkRevision(plan.Stack, plan.Revision, latest); err != nil {
		cleanupChangeSet(ctx, m.api, plan)
		return nil, err
	}
	in := &cloudformation.ExecuteChangeSetInput{
		ChangeSetName:      aws.String(plan.ChangeSetID),
		ClientRequestToken: aws.String(tok),
		DisableRollback:    aws.Bool(plan.DisableRollback),
	}
	if plan.ChangeSetID == "" {
		in.ChangeSetName = aws.String(plan.ChangeSetName)
		in.StackName = aws.String(plan.Stack)
	}
	if _, err := m.api.ExecuteChangeSet(ctx, in); err != nil {
		return nil, fmt.Errorf("executing change set of stack %q: %w", plan.Stack, err)
	}
	m.prog.begin(o)
	return m.await(ctx, o)
}

// Delete deletes the stack and waits. A stack that does not exist is
// already deleted: success.
func (m *Manager) Delete(ctx context.Context, name string) error {
	_, err := m.deleteOne(ctx, name, nil, false, nil)
	return err
}

// DeleteStarted deletes the stack like Delete (like DeleteRetaining with
// every resource that failed to delete when retainFailed), calling started
// once CloudFormation has accepted the deletion and before waiting for it
// (not when there is no stack to delete): for what must hold until the
// deletion is under way and be undone before it gets far.
func (m *Manager) DeleteStarted(ctx context.Context, name string, retainFailed bool, started func()) (Outcome, error) {
	return m.deleteOne(ctx, name, nil, retainFailed, started)
}

// DeleteRetaining recovers a DELETE_FAILED stack: it deletes the stack,
// keeping the resources in retain (nil: every resource that failed to
// delete) for the operator to remove.
func (m *Manager) DeleteRetaining(ctx context.Context, name string, retain []string) error {
	_, err := m.deleteOne(ctx, name, retain, true, nil)
	return err
}

// deleteOne deletes a stack and waits, reporting how it ended.
func (m *Manager) deleteOne(ctx context.Context, name string, retain []string, retaining bool, started func()) (Outcome, error) {
	tok := m.token("delete")
	o := m.newOp(name, "delete", tok)
	gone := Outcome{Stack: name, Status: "DELETE_COMPLETE"}
	if _, err := m.prime(ctx, o); err != nil {
		if errors.Is(err, ErrNotFound) {
			m.prog.skip(name, "gone")
			return gone, nil
		}
		return Outcome{Stack: name}, err
	}
	if retaining && retain == nil {
		rs, err := m.Resources(ctx, o.id)
		if err != nil {
			return Outcome{Stack: name}, err
		}
		for _, r := range Failed(rs) {
			retain = append(retain, r.LogicalID)
		}
	}
	in := &cloudformation.DeleteStackInput{StackName: aws.String(o.id), ClientRequestToken: aws.String(tok)}
	if len(retain) > 0 {
		in.RetainResources = retain
	}
	if _, err := m.api.DeleteStack(ctx, in); err != nil {
		return Outcome{Stack: name}, fmt.Errorf("deleting stack %q: %w", name, err)
	}
	if started != nil {
		started()
	}
	m.prog.begin(o)
	st, err := m.await(ctx, o)
	out := Outcome{Stack: name, Status: o.status, Duration: m.clock.Now().Sub(o.start)}
	if st != nil {
		out.Status = st.Status
	}
	return out, err
}

// Expect announces stacks about to be handled together (each by its own
// call, in parallel), so that progress shows them all from the start,
// waiting for their turn.
func (m *Manager) Expect(names []string) { m.prog.expect(names) }

// Skip says that a stack announced by Expect will not be handled after
// all, and why ("not started").
func (m *Manager) Skip(name, why string) { m.prog.skip(name, why) }

// Say prints a message among the progress, where it cannot break a
// redraw; it reports false, printing nothing, when there is no progress
// (Options.Progress nil): the caller prints it.
func (m *Manager) Say(text string) bool {
	p, ok := m.prog.(*progress)
	if ok {
		p.say(text)
	}
	return ok
}

// DeleteMany deletes stacks in parallel, at most concurrency at a time,
// with progress for all of them at once. It returns how each deletion
// ended (in the order given) and every failure, joined.
func (m *Manager) DeleteMany(ctx context.Context, names []string, concurrency int) ([]Outcome, error) {
	if concurrency < 1 {
		concurrency = 1
	}
	m.prog.expect(names)
	// Workers take the stacks in the order given, so deletions start in
	// that order.
	next := make(chan int)
	outcomes := make([]Outcome, len(names))
	errList := make([]error, len(names))
	var wg sync.WaitGroup
	for range min(concurrency, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				outcomes[i], errList[i] = m.deleteOne(ctx, names[i], nil, false, nil)
			}
		}()
	}
	for i, name := range names {
		if ctx.Err() != nil {
			m.prog.skip(name, "gone")
			outcomes[i] = Outcome{Stack: name}
			errList[i] = fmt.Errorf("deleting stack %q: not started: %w", name, ctx.Err())
			continue
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return outcomes, errors.Join(errList...)
}

// ContinueUpdateRollback continues the rollback of a stack in
// UPDATE_ROLLBACK_FAILED and waits; success is UPDATE_ROLLBACK_COMPLETE.
func (m *Manager) ContinueUpdateRollback(ctx context.Context, name string) (*Stack, error) {
	return m.ContinueUpdateRollbackSkipping(ctx, name, nil)
}

// ContinueUpdateRollbackSkipping is ContinueUpdateRollback with resources
// CloudFormation should mark rolled back without trying (ResourcesToSkip).
func (m *Manager) ContinueUpdateRollbackSkipping(ctx context.Context, name string, skip []string) (*Stack, error) {
	tok := m.token("rollback")
	o := m.newOp(name, "continue-rollback", tok)
	if _, err := m.prime(ctx, o); err != nil {
		return nil, err
	}
	in := &cloudformation.ContinueUpdateRollbackInput{StackName: aws.String(o.id), ClientRequestToken: aws.String(tok)}
	if len(skip) > 0 {
		in.ResourcesToSkip = skip
	}
	if _, err := m.api.ContinueUpdateRollback(ctx, in); err != nil {
		return nil, fmt.Errorf("continuing rollback of stack %q: %w", name, err)
	}
	m.prog.begin(o)
	return m.await(ctx, o)
}
