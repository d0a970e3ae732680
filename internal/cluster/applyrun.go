package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/stacks"
	"golang.org/x/sync/errgroup"
)

// discardAll deletes the change sets of the planned updates.
func (s *Applier) discardAll(ctx context.Context, p *ClusterPlan) {
	for _, sp := range p.Stacks {
		s.plans.discard(ctx, sp.update)
	}
}

// execute applies the plan: a core to create first (the groups need its
// outputs), then the groups in parallel, parallel at a time, each to its
// end whatever the others do.
func (s *Applier) execute(ctx context.Context, p *ClusterPlan, obs *Observed, parallel int, file string) error {
	if !s.createNetwork(ctx, p) {
		return applyFailed(ctx, p, file)
	}
	var core *stacks.Stack
	var todo []*StackPlan
	for _, sp := range p.Stacks {
		if sp.Changing() && sp.Group != "" {
			todo = append(todo, sp)
		}
	}
	if cp := p.Stacks[0]; cp.Action == ActionCreate {
		cp.run(func() (err error) {
			core, err = s.core.createCore(ctx, p.Cluster, *cp.core, CreateOptions{})
			return err
		})
		if cp.err != nil {
			for _, sp := range todo {
				sp.Result = ResultNotStarted
			}
			return applyFailed(ctx, p, file)
		}
	} else {
		core = obs.Core
	}
	if cp := p.Stacks[0]; cp.Action == ActionUpdate {
		cp.run(func() error { return s.plans.applyUpdate(ctx, cp.update) })
		if cp.err == nil {
			core, cp.err = s.find.getCore(ctx, p.Cluster)
		}
		if cp.err == nil {
			cp.err = s.rejoin(ctx, core, obs, todo)
		}
		if cp.err != nil {
			if cp.Result == ResultDone {
				cp.Result, cp.Error = ResultFailed, errs.Message(cp.err)
			}
			for _, sp := range todo {
				s.plans.discard(ctx, sp.update)
				sp.Result = ResultNotStarted
			}
			return applyFailed(ctx, p, file)
		}
	}
	if len(todo) > 0 {
		stackNames := make([]string, len(todo))
		for i, sp := range todo {
			stackNames[i] = sp.Stack
		}
		s.Stacks.Expect(stackNames)
	}
	var g errgroup.Group
	g.SetLimit(parallel)
	for _, sp := range todo {
		g.Go(func() error {
			if ctx.Err() != nil {
				sp.Result = ResultNotStarted
				s.Stacks.Skip(sp.Stack, ResultNotStarted)
				return nil
			}
			sp.run(func() error { return s.runGroup(ctx, core, sp) })
			return nil
		})
	}
	_ = g.Wait()
	return applyFailed(ctx, p, file)
}

// rejoin plans again the group updates of an apply whose core was just
// updated, when the core's outputs changed (a core brought to a newer join
// contract): their change sets were made with the outputs as they were.
// The settings planned stay what they were; only what the groups receive
// from the core follows it.
func (s *Applier) rejoin(ctx context.Context, core *stacks.Stack, obs *Observed, todo []*StackPlan) error {
	if maps.Equal(core.Outputs, obs.Core.Outputs) {
		return nil
	}
	for _, sp := range todo {
		if sp.Action != ActionUpdate || sp.update == nil {
			continue
		}
		s.plans.discard(ctx, sp.update)
		u, err := s.plans.planUpdate(ctx, core, obs.Groups[sp.Group], *sp.group)
		if err != nil {
			return within(sp.Stack, err)
		}
		sp.update = u
	}
	return nil
}

func (s *Applier) runGroup(ctx context.Context, core *stacks.Stack, sp *StackPlan) error {
	switch sp.Action {
	case ActionCreate:
		return s.groups.createGroup(ctx, core, *sp.group, CreateOptions{ReplaceFailed: sp.replace})
	case ActionUpdate:
		return s.plans.applyUpdate(ctx, sp.update)
	case ActionDelete:
		return s.groups.pruneGroup(ctx, core.Name, sp.Group)
	}
	return nil
}

// applyFailed is the error of an apply some of whose stacks failed or
// were stopped (Ctrl-C, --timeout): each failure with its root cause and
// what to do, then how to converge. nil when every stack is done.
func applyFailed(ctx context.Context, p *ClusterPlan, file string) error {
	var failed, stopped []string
	changed := 0
	for _, sp := range p.all() {
		if !sp.Changing() {
			continue
		}
		changed++
		switch sp.Result {
		case ResultFailed:
			failed = append(failed, fmt.Sprintf("%s (%s): %s", sp.Stack, sp.Action, errs.Message(sp.err)))
		case ResultInterrupted, ResultNotStarted:
			stopped = append(stopped, sp.Stack+" ("+sp.Result+")")
		}
	}
	if len(failed) == 0 && len(stopped) == 0 {
		return nil
	}
	again := "clusterctl apply -f " + file
	var lines []string
	if len(failed) > 0 {
		lines = append(lines, fmt.Sprintf("%d of %s failed:", len(failed), query.Plural(changed, "stack change")))
		lines = append(lines, failed...)
		lines = append(lines, fmt.Sprintf("once the cause is fixed, `%s` converges the rest (it re-creates a group that was rolled back)", again))
	}
	if len(stopped) == 0 {
		return &applyError{msg: strings.Join(lines, "\n")}
	}
	lines = append(lines, "stopped: "+strings.Join(stopped, ", "))
	hint := fmt.Sprintf("CloudFormation carries on with the stacks in progress (follow one with `clusterctl wait %s -n GROUP`); then run `%s` again", p.Cluster, again)
	cause := ctx.Err()
	if cause == nil {
		cause = context.Canceled
	}
	err := fmt.Errorf("%s: %w", strings.Join(lines, "\n"), cause)
	if errors.Is(cause, context.Canceled) {
		return &errs.InterruptedError{Err: err, Hint: hint}
	}
	return fmt.Errorf("%w\n%s", err, hint)
}
