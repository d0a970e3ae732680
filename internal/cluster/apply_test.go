package cluster

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// file is the cluster "core" as a file declares it: the seeded core and
// these groups.
func file(groups ...spec.Group) spec.Cluster {
	c := spec.New("core")
	c.Groups = groups
	return c
}

func group(name string, count int) spec.Group {
	return spec.Group{Name: name, InstanceType: spec.InstanceTypes{"m5.large"}, Count: intp(count)}
}

// actions lists "stack action" for each stack of a plan.
func actions(p *ClusterPlan) []string {
	var out []string
	for _, sp := range p.Stacks {
		out = append(out, sp.Stack+" "+sp.Action)
	}
	return out
}

func results(p *ClusterPlan) map[string]string {
	out := map[string]string{}
	for _, sp := range p.Stacks {
		if sp.Result != "" {
			out[sp.Stack] = sp.Result
		}
	}
	return out
}

// One run creates what is missing, updates what differs, leaves alone what
// matches and keeps what the file does not name; the plan says so first,
// with values.
func TestApplyCreatesUpdatesAndKeeps(t *testing.T) {
	e := fakeService(t)
	e.seed(t, group("same", 2), group("grow", 2), group("old", 1))
	var shown *ClusterPlan
	p, err := NewApplier(e.s).Apply(t.Context(), ApplyOptions{File: "cluster.yaml",
		Spec:   file(group("same", 2), group("grow", 3), spec.Group{Name: "new", InstanceType: spec.InstanceTypes{"c5.large"}, Count: intp(2), Labels: spec.Labels{"role": "web"}}),
		OnPlan: func(p *ClusterPlan) error { shown = p; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if shown != p || !p.Applied || p.NoChanges {
		t.Errorf("plan shown %v, applied %v, no changes %v", shown == p, p.Applied, p.NoChanges)
	}
	want := []string{"core unchanged", "core-same unchanged", "core-grow update", "core-new create", "core-old kept"}
	if got := actions(p); !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
	grow, create, kept := p.Stacks[2], p.Stacks[3], p.Stacks[4]
	wantGrow := []spec.Change{{Path: "count", Old: 2, New: 3, OldText: "2", NewText: "3"}, {Path: "max", Old: 3, New: 4, OldText: "3", NewText: "4"}}
	if !reflect.DeepEqual(grow.Settings, wantGrow) || len(grow.Changes) == 0 || grow.Note != "0 nodes will be replaced" {
		t.Errorf("update plan %+v", grow)
	}
	var created []string
	for _, c := range create.Settings {
		created = append(created, c.Path+"="+c.NewText)
	}
	if !slices.Equal(created, []string{"instanceType=c5.large", "count=2", "min=0", "max=3", "labels=role=web", "volumeSize=30"}) || create.Note != "2 x c5.large" {
		t.Errorf("create plan %v, %q", created, create.Note)
	}
	if kept.Note != "not in the file, kept (--prune deletes it)" {
		t.Errorf("kept: %q", kept.Note)
	}
	if got := results(p); !reflect.DeepEqual(got, map[string]string{"core-grow": ResultDone, "core-new": ResultDone}) {
		t.Errorf("results %v", got)
	}
	for stack, status := range map[string]string{"core-same": "CREATE_COMPLETE", "core-grow": "UPDATE_COMPLETE", "core-new": "CREATE_COMPLETE", "core-old": "CREATE_COMPLETE"} {
		if got := e.fake.Status(stack); got != status {
			t.Errorf("%s: %s, want %s", stack, got, status)
		}
	}
	if n := len(e.fake.Log("ExecuteChangeSet")); n != 1 {
		t.Errorf("%d change sets executed, want the one of core-grow", n)
	}
	// The same file again: nothing to do. (The fake reports no resolved
	// AMI for the stacks it created, so a change set is made to be sure;
	// it comes back empty.)
	e.fake.ResetLog()
	p, err = NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: file(group("same", 2), group("grow", 3), spec.Group{Name: "new", InstanceType: spec.InstanceTypes{"c5.large"}, Count: intp(2), Labels: spec.Labels{"role": "web"}})})
	if err != nil || !p.NoChanges || p.Applied {
		t.Fatalf("second apply: %+v, %v", p, err)
	}
	for _, action := range []string{"CreateStack", "ExecuteChangeSet", "DeleteStack"} {
		if n := e.fake.Calls(action); n > 0 {
			t.Errorf("second apply: %d %s", n, action)
		}
	}
}

// Groups not in the file are deleted only with --prune, after
// confirmation; without a terminal that needs --yes, and asking for it
// changes nothing.
func TestApplyPrune(t *testing.T) {
	e := fakeService(t)
	e.seed(t, group("a", 1), group("b", 1))
	e.fake.ResetLog()
	_, err := NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: file(group("a", 2)), Prune: true})
	if errs.ExitCode(err) != errs.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("prune without --yes off a terminal: %v", err)
	}
	// Refused after its plan was made (and shown): the change sets it was
	// made of are deleted, nothing is executed or deleted.
	if n := e.fake.Calls("ExecuteChangeSet") + e.fake.Calls("DeleteStack") + e.fake.Calls("CreateStack"); n != 0 {
		t.Errorf("refused prune made %d calls that change things", n)
	}
	if made, gone := e.fake.Calls("CreateChangeSet"), e.fake.Calls("DeleteChangeSet"); made != gone {
		t.Errorf("refused prune left %d of its %d change sets", made-gone, made)
	}

	// A dry run lists the deletion and deletes nothing.
	p, err := NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: file(group("a", 1)), Prune: true, DryRun: true})
	if err != nil || !slices.Equal(actions(p), []string{"core unchanged", "core-a unchanged", "core-b delete"}) || p.Applied {
		t.Fatalf("dry run: %v, %v", actions(p), err)
	}
	if p.Stacks[2].Note != "not in the file: 2 nodes removed" {
		t.Errorf("delete note %q", p.Stacks[2].Note)
	}

	// On a terminal the plan is shown, then the question; no is no.
	e.s.IO.InTTY = true
	in := e.s.IO.In.(*bytes.Buffer)
	in.WriteString("n\n")
	shown := false
	_, err = NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: file(group("a", 2)), Prune: true, OnPlan: func(*ClusterPlan) error { shown = true; return nil }})
	if !errors.Is(err, ErrRefused) || !shown {
		t.Fatalf("prune answered no: %v (plan shown: %v)", err, shown)
	}
	if e.fake.Calls("ExecuteChangeSet")+e.fake.Calls("DeleteStack") != 0 || e.fake.Calls("DeleteChangeSet") != e.fake.Calls("CreateChangeSet") {
		t.Errorf("prune answered no changed something: %d executes, %d deletes, %d of %d change sets deleted",
			e.fake.Calls("ExecuteChangeSet"), e.fake.Calls("DeleteStack"), e.fake.Calls("DeleteChangeSet"), e.fake.Calls("CreateChangeSet"))
	}
	in.WriteString("y\n")
	p, err = NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: file(group("a", 1)), Prune: true})
	if err != nil || !reflect.DeepEqual(results(p), map[string]string{"core-b": ResultDone}) {
		t.Fatalf("prune: %v, %v", results(p), err)
	}
	if e.fake.Status("core-b") != "" || e.fake.Status("core-a") != "CREATE_COMPLETE" {
		t.Errorf("after prune: a %s, b %q", e.fake.Status("core-a"), e.fake.Status("core-b"))
	}
}

// Groups change in parallel, never more at a time than asked: the fake
// holds every stack in progress until the test lets them finish.
func TestApplyParallelIsBounded(t *testing.T) {
	e := fakeService(t)
	e.seed(t)
	hold := make(chan struct{})
	var groups []spec.Group
	for _, g := range []string{"a", "b", "c", "d", "e"} {
		groups = append(groups, group(g, 1))
		e.fake.Script("core-"+g, cfnfake.Create, cfnfake.Step{Status: "CREATE_IN_PROGRESS"}, cfnfake.Step{Hold: hold, Status: "CREATE_COMPLETE"})
	}
	done := make(chan error, 1)
	var p *ClusterPlan
	go func() {
		var err error
		p, err = NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: file(groups...), Parallel: 2})
		done <- err
	}()
	// Two creates start; however long they take, no third one does.
	waitFor(t, func() bool { return e.fake.Calls("CreateStack") >= 2 })
	reads := e.fake.Calls("DescribeStackEvents")
	waitFor(t, func() bool { return e.fake.Calls("DescribeStackEvents") > reads+200 })
	if n, running := e.fake.Calls("CreateStack"), e.fake.Running(); n != 2 || running != 2 {
		t.Errorf("%d creates, %d running while two are held", n, running)
	}
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := e.fake.MaxRunning(); n != 2 {
		t.Errorf("at most %d stacks in progress at once, want 2", n)
	}
	if len(results(p)) != 5 {
		t.Errorf("results %v", results(p))
	}
}

// waitFor polls until cond holds (the stacks run on their own goroutines).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 20000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("condition never met")
}

// One group's failure does not stop the others; the error names it with
// its root cause and what to do, and applying again converges: the
// rolled-back group is created anew.
func TestApplyOneGroupFails(t *testing.T) {
	e := fakeService(t)
	e.seed(t)
	asg := cfnfake.Res{LogicalID: names.ResourceAutoScalingGroup, Type: "AWS::AutoScaling::AutoScalingGroup"}
	lt := cfnfake.Res{LogicalID: names.ResourceLaunchTemplate, Type: "AWS::EC2::LaunchTemplate"}
	e.fake.Script("core-b", cfnfake.Create, cfnfake.CreateRollback(time.Minute, asg, "Received 0 SUCCESS signal(s) out of 1", lt)...)
	c := file(group("a", 1), group("b", 1), group("c", 1))
	p, err := NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: c, File: "prod.yaml"})
	if err == nil {
		t.Fatal("apply succeeded")
	}
	if errs.ExitCode(err) != errs.ExitFailed {
		t.Errorf("exit code %d", errs.ExitCode(err))
	}
	msg := errs.Message(err)
	for _, want := range []string{
		"1 of 3 stack changes failed:",
		`core-b (create): create of stack "core-b" failed: ROLLBACK_COMPLETE: AutoScalingGroup (AWS::AutoScaling::AutoScalingGroup) CREATE_FAILED: Received 0 SUCCESS signal(s) out of 1`,
		"`clusterctl remove-group -n b -j core`",
		"`clusterctl apply -f prod.yaml` converges the rest",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	want := map[string]string{"core-a": ResultDone, "core-b": ResultFailed, "core-c": ResultDone}
	if got := results(p); !reflect.DeepEqual(got, want) {
		t.Errorf("results %v, want %v", got, want)
	}
	if p.Stacks[2].Error == "" {
		t.Error("the failed stack's error is not in the plan")
	}
	for stack, status := range map[string]string{"core-a": "CREATE_COMPLETE", "core-b": "ROLLBACK_COMPLETE", "core-c": "CREATE_COMPLETE"} {
		if got := e.fake.Status(stack); got != status {
			t.Errorf("%s: %s, want %s", stack, got, status)
		}
	}

	// Again, once the cause is gone: b is created over its dead stack.
	p, err = NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: c, File: "prod.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(p); !slices.Equal(got, []string{"core unchanged", "core-a unchanged", "core-b create", "core-c unchanged"}) || !strings.Contains(p.Stacks[2].Note, "replacing the dead stack (ROLLBACK_COMPLETE)") {
		t.Errorf("second apply: %v, %q", got, p.Stacks[2].Note)
	}
	if e.fake.Status("core-b") != "CREATE_COMPLETE" {
		t.Errorf("core-b: %s", e.fake.Status("core-b"))
	}
}

// A difference in the core is planned and applied as update-core does it
// (settings old → new, managers replaced one at a time), before the
// groups, which are changed only where the file changes them.
func TestApplyUpdatesCore(t *testing.T) {
	e := fakeService(t)
	e.seedCore(t, spec.Core{Managers: intp(3)})
	e.seed(t, group("a", 1))
	e.seed(t, group("b", 1))
	e.fake.ResetLog()
	c := file(group("a", 3), group("b", 1))
	c.Core = spec.Core{InstanceType: "m5.large", Managers: intp(3), SSHCIDR: "203.0.113.0/24"}

	p, err := NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: c, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	core := p.Stacks[0]
	if core.Action != ActionUpdate || core.Note != "3 managers will be replaced one at a time" {
		t.Errorf("core plan %q, %q", core.Action, core.Note)
	}
	var settings []string
	for _, ch := range core.Settings {
		settings = append(settings, ch.Path+" "+ch.OldText+" → "+ch.NewText)
	}
	for _, want := range []string{"instanceType t3.medium → m5.large", "sshCidr (closed) → 203.0.113.0/24"} {
		if !slices.Contains(settings, want) {
			t.Errorf("core settings %q lack %q", settings, want)
		}
	}
	if got := actions(p); !slices.Equal(got, []string{"core update", "core-a update", "core-b unchanged"}) {
		t.Errorf("dry run: %v", got)
	}
	if n := e.fake.Calls("ExecuteChangeSet"); n > 0 {
		t.Errorf("a dry run executed %d change sets", n)
	}

	p, err = NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: c, Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Stacks[0].Result != ResultDone || p.Stacks[1].Result != ResultDone {
		t.Errorf("results %q, %q", p.Stacks[0].Result, p.Stacks[1].Result)
	}
	if n := e.fake.Calls("ExecuteChangeSet"); n != 2 {
		t.Errorf("%d change sets executed, want the core's and core-a's", n)
	}
	coreStack, err1 := e.s.Stacks.Get(t.Context(), "core")
	groupStack, err2 := e.s.Stacks.Get(t.Context(), "core-a")
	if err1 != nil || err2 != nil || !groupStack.Updated.After(coreStack.Updated) {
		t.Errorf("core-a updated at %v, the core at %v: the groups go after the core (%v, %v)", groupStack.Updated, coreStack.Updated, err1, err2)
	}
	if obs, err := NewObserver(e.s).Observe(t.Context(), "core"); err != nil || obs.Spec.Core.InstanceType != "m5.large" || obs.Spec.Core.SSHCIDR != "203.0.113.0/24" {
		t.Errorf("the core after apply: %+v, %v", obs, err)
	}

	// What update-core refuses, apply refuses before anything changes.
	e.fake.ResetLog()
	c.Core.Managers = intp(1)
	if _, err := NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: c}); !errors.Is(err, ErrRefused) && errs.ExitCode(err) != errs.ExitUsage {
		t.Errorf("3 → 1 managers and a new type at once: %v", err)
	}
	for _, action := range []string{"CreateStack", "ExecuteChangeSet", "DeleteStack"} {
		if n := e.fake.Calls(action); n > 0 {
			t.Errorf("%d %s after a refusal", n, action)
		}
	}
}

// A core update that fails stops the apply before any group changes.
func TestApplyStopsAfterFailedCoreUpdate(t *testing.T) {
	e := fakeService(t)
	e.seedCore(t, spec.Core{})
	e.seed(t, group("a", 1))
	e.fake.Script("core", cfnfake.Update, cfnfake.UpdateRollback(time.Minute, managerGroup, "Received 0 SUCCESS signal(s) out of 1")...)
	c := file(group("a", 2))
	c.Core = spec.Core{InstanceType: "m5.large"}
	p, err := NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: c, File: "prod.yaml", Yes: true})
	if err == nil {
		t.Fatal("the apply succeeded")
	}
	if p.Stacks[0].Result != ResultFailed || p.Stacks[1].Result != ResultNotStarted {
		t.Errorf("results %q, %q", p.Stacks[0].Result, p.Stacks[1].Result)
	}
	for _, want := range []string{"UPDATE_ROLLBACK_COMPLETE", "clusterctl apply -f prod.yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
	if n := len(e.fake.Log("ExecuteChangeSet")); n != 1 {
		t.Errorf("%d change sets executed, want the core's only", n)
	}
	if e.fake.Status("core-a") != "CREATE_COMPLETE" {
		t.Errorf("core-a: %s", e.fake.Status("core-a"))
	}
}

// A dry run plans everything, changes nothing and leaves no change set.
func TestApplyDryRun(t *testing.T) {
	e := fakeService(t)
	e.seed(t, group("a", 2))
	e.fake.ResetLog()
	changed := group("a", 2)
	changed.InstanceType = spec.InstanceTypes{"m5.xlarge"}
	p, err := NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: file(changed, group("b", 1)), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(p); !slices.Equal(got, []string{"core unchanged", "core-a update", "core-b create"}) || p.Applied || !p.DryRun {
		t.Errorf("dry run: %v, applied %v", got, p.Applied)
	}
	if a := p.Stacks[1]; a.NodesReplaced != 2 || a.Note != "2 nodes will be replaced, 1 at a time" {
		t.Errorf("update plan %+v", a)
	}
	if len(results(p)) != 0 || len(e.s3.puts) != 0 || e.fake.Calls("ExecuteChangeSet")+e.fake.Calls("CreateStack") != 0 {
		t.Error("the dry run changed something")
	}
	if e.fake.Calls("CreateChangeSet") != 1 || e.fake.Calls("DeleteChangeSet") != 1 {
		t.Errorf("%d change sets created, %d deleted", e.fake.Calls("CreateChangeSet"), e.fake.Calls("DeleteChangeSet"))
	}
}

// A group that cannot be planned (busy) refuses the whole apply before
// anything changes; the change sets planned for the others are deleted.
func TestApplyPlanProblemChangesNothing(t *testing.T) {
	e := fakeService(t)
	e.seed(t, group("a", 1))
	e.fake.Seed(cfnfake.Seed{Name: "core-busy", Status: "UPDATE_IN_PROGRESS", Template: seededTemplate(t, group("busy", 1)),
		Tags: map[string]string{names.TagCluster: "core", names.TagRole: names.RoleAgents, names.TagGroup: "busy"}})
	e.fake.ResetLog()
	p, err := NewApplier(e.s).Apply(t.Context(), ApplyOptions{Spec: file(group("a", 2), group("busy", 1), group("new", 1))})
	if !errors.Is(err, ErrRefused) && !strings.Contains(err.Error(), "busy") {
		t.Fatalf("apply with a busy group: %v", err)
	}
	if !strings.Contains(err.Error(), "group core-busy is busy (UPDATE_IN_PROGRESS)") || !strings.Contains(err.Error(), "clusterctl wait core -n busy") {
		t.Errorf("error: %v", err)
	}
	if p.Stacks[2].Error == "" {
		t.Errorf("the busy group's plan has no error: %+v", p.Stacks[2])
	}
	if e.fake.Calls("CreateChangeSet") != 1 || e.fake.Calls("DeleteChangeSet") != 1 || e.fake.Calls("CreateStack")+e.fake.Calls("ExecuteChangeSet") != 0 {
		t.Errorf("calls: %d change sets created, %d deleted, %d creates, %d executes", e.fake.Calls("CreateChangeSet"), e.fake.Calls("DeleteChangeSet"), e.fake.Calls("CreateStack"), e.fake.Calls("ExecuteChangeSet"))
	}
}

func seededTemplate(t *testing.T, g spec.Group) string {
	t.Helper()
	r, err := render.Group("core", g, testJoin, testBuild)
	if err != nil {
		t.Fatal(err)
	}
	return string(r.Template)
}

// Ctrl-C while groups are in progress: the stacks in progress are
// interrupted (CloudFormation carries on), the rest not started; the error
// says how to converge (exit 130).
func TestApplyInterrupted(t *testing.T) {
	e := fakeService(t)
	e.seed(t)
	hold := make(chan struct{})
	defer close(hold)
	for _, g := range []string{"a", "b", "c"} {
		e.fake.Script("core-"+g, cfnfake.Create, cfnfake.Step{Status: "CREATE_IN_PROGRESS"}, cfnfake.Step{Hold: hold, Status: "CREATE_COMPLETE"})
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var p *ClusterPlan
	go func() {
		var err error
		p, err = NewApplier(e.s).Apply(ctx, ApplyOptions{Spec: file(group("a", 1), group("b", 1), group("c", 1)), Parallel: 2, File: "prod.yaml"})
		done <- err
	}()
	waitFor(t, func() bool { return e.fake.Calls("CreateStack") >= 2 })
	cancel()
	err := <-done
	if errs.ExitCode(err) != errs.ExitInterrupted {
		t.Fatalf("exit %d: %v", errs.ExitCode(err), err)
	}
	want := map[string]string{"core-a": ResultInterrupted, "core-b": ResultInterrupted, "core-c": ResultNotStarted}
	if got := results(p); !reflect.DeepEqual(got, want) {
		t.Errorf("results %v, want %v", got, want)
	}
	for _, want := range []string{"stopped: core-a (interrupted), core-b (interrupted), core-c (not started)", "clusterctl apply -f prod.yaml", "CloudFormation carries on"} {
		if !strings.Contains(errs.Message(err), want) {
			t.Errorf("error lacks %q:\n%s", want, errs.Message(err))
		}
	}
	if e.fake.Calls("CreateStack") != 2 {
		t.Errorf("%d stacks created after the interrupt", e.fake.Calls("CreateStack")-2)
	}
}
