package stacks

import "strings"

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
