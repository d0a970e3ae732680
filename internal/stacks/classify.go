package stacks

import (
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
)

// Class groups stack statuses by what the operator can do next.
type Class int

const (
	// Unknown is never returned by Classify; it is the zero value.
	Unknown Class = iota
	// Done: the last operation succeeded and the stack is stable.
	Done
	// InProgress: an operation is running; wait for it.
	InProgress
	// FailedDead: creation failed; the stack holds nothing useful and can
	// only be removed (or replaced).
	FailedDead
	// FailedUsable: the last operation failed but the stack is stable at a
	// known configuration and can be updated again.
	FailedUsable
	// Stuck: the stack needs an operator action before anything else works
	// (continue a rollback, delete retaining resources).
	Stuck
)

func (c Class) String() string {
	switch c {
	case Done:
		return "done"
	case InProgress:
		return "in progress"
	case FailedDead:
		return "failed (dead)"
	case FailedUsable:
		return "failed (usable)"
	case Stuck:
		return "stuck"
	}
	return "unknown"
}

// Final reports whether no operation is running.
func (c Class) Final() bool { return c != InProgress }

// Failed reports whether the stack's last operation failed. Callers must not
// report such a stack as healthy.
func (c Class) Failed() bool { return c == FailedDead || c == FailedUsable || c == Stuck }

// OK reports whether the stack is healthy.
func (c Class) OK() bool { return c == Done }

// statusClass covers every StackStatus value of the CloudFormation API.
var statusClass = map[string]Class{
	"CREATE_IN_PROGRESS":                           InProgress,
	"CREATE_FAILED":                                FailedDead, // rollback disabled: kept for debugging
	"CREATE_COMPLETE":                              Done,
	"ROLLBACK_IN_PROGRESS":                         InProgress,
	"ROLLBACK_FAILED":                              Stuck, // only a delete (possibly retaining) gets out
	"ROLLBACK_COMPLETE":                            FailedDead,
	"DELETE_IN_PROGRESS":                           InProgress,
	"DELETE_FAILED":                                Stuck,
	"DELETE_COMPLETE":                              Done,
	"UPDATE_IN_PROGRESS":                           InProgress,
	"UPDATE_COMPLETE_CLEANUP_IN_PROGRESS":          InProgress,
	"UPDATE_COMPLETE":                              Done,
	"UPDATE_FAILED":                                FailedUsable, // rollback disabled
	"UPDATE_ROLLBACK_IN_PROGRESS":                  InProgress,
	"UPDATE_ROLLBACK_FAILED":                       Stuck,
	"UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS": InProgress,
	"UPDATE_ROLLBACK_COMPLETE":                     FailedUsable,
	"REVIEW_IN_PROGRESS":                           FailedDead, // a CREATE change set never executed: nothing will happen
	"IMPORT_IN_PROGRESS":                           InProgress,
	"IMPORT_COMPLETE":                              Done,
	"IMPORT_ROLLBACK_IN_PROGRESS":                  InProgress,
	"IMPORT_ROLLBACK_FAILED":                       Stuck,
	"IMPORT_ROLLBACK_COMPLETE":                     FailedUsable,
}

// Classify maps a stack status to its Class. Statuses added to the API
// later fall back on their suffix, erring towards "failed": a stack is
// never reported healthy unless its status is known to be.
func Classify(status string) Class {
	if c, ok := statusClass[status]; ok {
		return c
	}
	switch {
	case strings.HasSuffix(status, "_IN_PROGRESS"):
		return InProgress
	case strings.HasSuffix(status, "_FAILED"):
		return Stuck
	default:
		return FailedUsable
	}
}

// Ref says which clusterctl object a stack is, so advice can name the
// right command.
type Ref struct {
	Cluster string // cluster (= core stack) name
	Group   string // agent group name; empty for the core stack
}

// RefOf derives a Ref from the stack's ownership tags; a stack without
// them is treated as a core stack named after itself.
func RefOf(s *Stack) Ref {
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
// resources left behind by a failed delete or rollback (Manager.Resources
// with Failed, or OperationError.LeftBehind). Healthy stacks get "".
func Advice(s *Stack, ref Ref, left []Resource) string {
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
		if c.group() {
			return fmt.Sprintf("The rollback of the last update failed%s: fix the cause (see `%s`) and continue it with `%s`.",
				leftText(left), c.events(), c.update("--continue-rollback"))
		}
		return fmt.Sprintf("The rollback of the last update failed%s: fix the cause (see `%s`) and continue it with `aws cloudformation continue-update-rollback --stack-name %s`.",
			leftText(left), c.events(), ref.Cluster)
	case "UPDATE_ROLLBACK_COMPLETE":
		if c.group() {
			return fmt.Sprintf("The last update failed and was rolled back; the group runs its previous configuration. Fix the cause (see `%s`) and run `%s` again.",
				c.events(), c.update(""))
		}
		return fmt.Sprintf("The last update failed and was rolled back; the core runs its previous configuration. Fix the cause (see `%s`).", c.events())
	case "UPDATE_FAILED":
		return fmt.Sprintf("The update failed and was not rolled back (--no-rollback): fix the cause (see `%s`) and update again, or roll back with `aws cloudformation rollback-stack --stack-name %s`.",
			c.events(), s.Name)
	case "IMPORT_ROLLBACK_COMPLETE":
		return fmt.Sprintf("A resource import failed and was rolled back; the stack runs its previous configuration (see `%s`).", c.events())
	case "IMPORT_ROLLBACK_FAILED":
		return fmt.Sprintf("A resource import failed and so did its rollback%s: fix the cause (see `%s`) or remove the stack with `%s`.",
			leftText(left), c.events(), c.remove(""))
	}
	switch Classify(s.Status) {
	case InProgress:
		return fmt.Sprintf("An operation is still running: follow it with `%s`.", c.wait())
	case Stuck, FailedDead, FailedUsable:
		return fmt.Sprintf("The stack is in status %s: see `%s`.", s.Status, c.events())
	}
	return ""
}

func leftText(left []Resource) string {
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
	s := "clusterctl update-group " + c.sel()
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
