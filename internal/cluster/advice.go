package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/internal/awsx"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// What to do about a stack in trouble is said here, where the command
// names live; internal/stacks only classifies statuses and reports what
// happened (stacks.OperationError, stacks.StillRunningError).

// Ref says which clusterctl object a stack is, so advice can name the
// right command.
type Ref struct {
	Cluster string // cluster (= core stack) name
	Group   string // agent group name; empty for the core stack
}

// RefOf derives a Ref from the stack's ownership tags; a stack without
// them is treated as a core stack named after itself.
func RefOf(s *stacks.Stack) Ref {
	if s == nil {
		return Ref{}
	}
	r := Ref{Cluster: s.Tags[names.TagCluster]}
	if s.Tags[names.TagRole] == names.RoleAgents {
		r.Group = s.Tags[names.TagGroup]
	}
	if r.Cluster == "" {
		r = Ref{Cluster: s.Name}
	}
	return r
}

// Advice says what to do next about a stack in status s.Status, in one or
// two sentences naming clusterctl commands. ref says whether the stack is
// the core or a group (zero Ref: derived from the stack's tags); left lists
// resources left behind by a failed delete or rollback
// (stacks.OperationError.LeftBehind). Healthy stacks get "".
func Advice(s *stacks.Stack, ref Ref, left []stacks.Resource) string {
	if s == nil {
		return ""
	}
	if ref.Cluster == "" {
		ref = RefOf(s)
	}
	c := cmds{ref}
	switch s.Status {
	case "ROLLBACK_COMPLETE":
		if c.group() {
			return fmt.Sprintf("The group was rolled back and holds no resources: remove it with `%s` or re-create it with `%s`.",
				c.remove(""), c.readd())
		}
		return fmt.Sprintf("The core was rolled back and holds no resources: delete it with `%s` and create it again with `clusterctl create-core %s`.",
			c.remove(""), ref.Cluster)
	case "CREATE_FAILED":
		return fmt.Sprintf("Creation failed and the stack was kept for debugging (--no-rollback): inspect it with `%s`, then remove it with `%s`.",
			c.events(), c.remove(""))
	case "REVIEW_IN_PROGRESS":
		return fmt.Sprintf("The stack was never created (its change set was not executed): remove it with `%s`.", c.remove(""))
	case "ROLLBACK_FAILED":
		return fmt.Sprintf("Creation failed and so did its rollback%s: remove it with `%s`; if that fails too, `%s` deletes the stack and keeps those resources for you to delete.",
			leftText(left), c.remove(""), c.remove("--retain-failed"))
	case "DELETE_FAILED":
		return fmt.Sprintf("The delete failed%s: fix the cause (see `%s`) and run `%s` again, or run `%s` to delete the stack and keep those resources for you to delete.",
			leftText(left), c.events(), c.remove(""), c.remove("--retain-failed"))
	case "UPDATE_ROLLBACK_FAILED":
		return fmt.Sprintf("The rollback of the last update failed%s: fix the cause (see `%s`) and continue it with `%s`.",
			leftText(left), c.events(), c.update("--continue-rollback"))
	case "UPDATE_ROLLBACK_COMPLETE":
		what := "the core runs its previous configuration"
		if c.group() {
			what = "the group runs its previous configuration"
		}
		return fmt.Sprintf("The last update failed and was rolled back; %s. Fix the cause (see `%s`) and run `%s` again.",
			what, c.events(), c.update(""))
	case "UPDATE_FAILED":
		return fmt.Sprintf("The update failed and was not rolled back (--no-rollback): fix the cause (see `%s`) and update again, or roll back with `aws cloudformation rollback-stack --stack-name %s`.",
			c.events(), s.Name)
	case "IMPORT_ROLLBACK_COMPLETE":
		return fmt.Sprintf("A resource import failed and was rolled back; the stack runs its previous configuration (see `%s`).", c.events())
	case "IMPORT_ROLLBACK_FAILED":
		return fmt.Sprintf("A resource import failed and so did its rollback%s: fix the cause (see `%s`) or remove the stack with `%s`.",
			leftText(left), c.events(), c.remove(""))
	}
	switch stacks.Classify(s.Status) {
	case stacks.InProgress:
		return fmt.Sprintf("An operation is still running: follow it with `%s`.", c.wait())
	case stacks.Stuck, stacks.FailedDead, stacks.FailedUsable:
		return fmt.Sprintf("The stack is in status %s: see `%s`.", s.Status, c.events())
	}
	return ""
}

func leftText(left []stacks.Resource) string {
	if len(left) == 0 {
		return ""
	}
	parts := make([]string, len(left))
	for i, r := range left {
		parts[i] = r.LogicalID + " (" + r.ResourceType + ")"
	}
	return "; left behind: " + strings.Join(parts, ", ")
}

// cmds spells clusterctl command lines for a Ref.
type cmds struct{ Ref }

func (c cmds) group() bool { return c.Group != "" }

func (c cmds) sel() string { return fmt.Sprintf("-n %s -j %s", c.Group, c.Cluster) }

func (c cmds) remove(flag string) string {
	s := "clusterctl delete-core " + c.Cluster
	if c.group() {
		s = "clusterctl remove-group " + c.sel()
	}
	if flag != "" {
		s += " " + flag
	}
	return s
}

func (c cmds) readd() string { return "clusterctl add-agents " + c.sel() + " --replace-failed" }

func (c cmds) update(flag string) string {
	s := "clusterctl update-core " + c.Cluster
	if c.group() {
		s = "clusterctl update-group " + c.sel()
	}
	if flag != "" {
		s += " " + flag
	}
	return s
}

func (c cmds) events() string {
	if c.group() {
		return "clusterctl events " + c.Cluster + " -n " + c.Group
	}
	return "clusterctl events " + c.Cluster
}

func (c cmds) wait() string {
	if c.group() {
		return "clusterctl wait " + c.Cluster + " -n " + c.Group
	}
	return "clusterctl wait " + c.Cluster
}

// explain adds to the error of a stack operation what to do next: for a
// wait that stopped (Ctrl-C, --timeout), the command that re-attaches to
// the operation CloudFormation carries on with; for each stack that ended
// failed, the command that recovers it.
func explain(err error, cluster, group string) error {
	return explainResume(err, "re-attach with: "+cmds{Ref{Cluster: cluster, Group: group}}.wait())
}

// explainResume is explain with the hint for a stopped wait given: where
// re-attaching would not finish the command's work (a cascade whose core
// deletion has not started), the hint names the command that does.
func explainResume(err error, hint string) error {
	if err == nil {
		return nil
	}
	// The stack manager's error already says that CloudFormation carries on.
	switch {
	case errors.Is(err, context.Canceled):
		return &errs.InterruptedError{Err: err, Hint: hint}
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w\n%s", err, hint)
	}
	if _, ok := awsx.Unreachable(err); ok {
		// The endpoint stopped answering: what was started carries on
		// in CloudFormation, or never reached it; the hint tells which.
		return fmt.Errorf("%w\n%s", err, hint)
	}
	var advice []string
	for _, oe := range operationErrors(err) {
		st := &stacks.Stack{Name: oe.Stack, Status: oe.Status, Tags: oe.Tags}
		if a := Advice(st, Ref{}, oe.LeftBehind); a != "" {
			advice = append(advice, a)
		}
	}
	if len(advice) == 0 {
		return err
	}
	return &advisedError{err: err, advice: strings.Join(advice, "\n")}
}

// operationErrors finds the failed operations in err, which may join
// several (a cascade deletes groups in parallel).
func operationErrors(err error) []*stacks.OperationError {
	switch e := err.(type) {
	case *stacks.OperationError:
		return []*stacks.OperationError{e}
	case interface{ Unwrap() []error }:
		var out []*stacks.OperationError
		for _, x := range e.Unwrap() {
			out = append(out, operationErrors(x)...)
		}
		return out
	case interface{ Unwrap() error }:
		return operationErrors(e.Unwrap())
	}
	return nil
}

// advisedError is a failed stack operation with what to do about it.
type advisedError struct {
	err    error
	advice string
}

func (e *advisedError) Error() string { return e.err.Error() + "\n" + e.advice }
func (e *advisedError) Unwrap() error { return e.err }

// recreateAdvice says how to create a group again that cannot be repaired
// in place, with the settings it was deployed with.
func recreateAdvice(cluster string, g spec.Group) string {
	c := cmds{Ref{Cluster: cluster, Group: g.Name}}
	return fmt.Sprintf("Re-create it: `%s`, then `clusterctl add-agents %s %s`.",
		c.remove("--yes"), c.sel(), strings.Join(spec.Args(g), " "))
}
