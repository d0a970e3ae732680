package cfnfake

import (
	"fmt"
	"strings"
	"time"
)

// Res names a resource in a scenario.
type Res struct{ LogicalID, Type string }

// Reasons CloudFormation writes on resources that did not fail themselves.
const (
	CreationCancelled = "Resource creation cancelled"
	UpdateCancelled   = "Resource update cancelled"
)

func ids(rs []Res) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.LogicalID
	}
	return strings.Join(s, ", ")
}

// SlowCreate: the resources are created one after another, the stack is
// CREATE_COMPLETE at d with outputs.
func SlowCreate(d time.Duration, outputs map[string]string, res ...Res) []Step {
	steps := []Step{{Status: "CREATE_IN_PROGRESS", Reason: "User Initiated"}}
	n := time.Duration(len(res) + 1)
	for i, r := range res {
		start, end := d*time.Duration(i)/n, d*time.Duration(i+1)/n
		steps = append(steps,
			Step{At: start, Events: []Ev{{r.LogicalID, r.Type, "CREATE_IN_PROGRESS", ""}}},
			Step{At: start + time.Second, Events: []Ev{{r.LogicalID, r.Type, "CREATE_IN_PROGRESS", "Resource creation Initiated"}}},
			Step{At: end, Events: []Ev{{r.LogicalID, r.Type, "CREATE_COMPLETE", ""}}})
	}
	return append(steps, Step{At: d, Status: "CREATE_COMPLETE", Outputs: outputs})
}

// CreateRollback: every resource starts; at failAt failed fails with
// reason (the root cause), the others are cancelled, the stack rolls back
// and is ROLLBACK_COMPLETE 20 seconds later.
func CreateRollback(failAt time.Duration, failed Res, reason string, others ...Res) []Step {
	all := append([]Res{failed}, others...)
	start := []Ev{}
	for _, r := range all {
		start = append(start, Ev{r.LogicalID, r.Type, "CREATE_IN_PROGRESS", ""})
	}
	cancelled := []Ev{}
	deleted := []Ev{}
	for _, r := range others {
		cancelled = append(cancelled, Ev{r.LogicalID, r.Type, "CREATE_FAILED", CreationCancelled})
	}
	for _, r := range all {
		deleted = append(deleted, Ev{r.LogicalID, r.Type, "DELETE_COMPLETE", ""})
	}
	return []Step{
		{Status: "CREATE_IN_PROGRESS", Reason: "User Initiated"},
		{At: time.Second, Events: start},
		{At: failAt, Events: []Ev{{failed.LogicalID, failed.Type, "CREATE_FAILED", reason}}},
		{At: failAt + time.Second, Events: cancelled},
		{At: failAt + 2*time.Second, Status: "ROLLBACK_IN_PROGRESS",
			Reason: fmt.Sprintf("The following resource(s) failed to create: [%s]. Rollback requested by user.", ids(all))},
		{At: failAt + 10*time.Second, Events: deleted},
		{At: failAt + 20*time.Second, Status: "ROLLBACK_COMPLETE"},
	}
}

// CreateFailedKept: as CreateRollback with rollback disabled: the stack
// stays CREATE_FAILED.
func CreateFailedKept(failAt time.Duration, failed Res, reason string) []Step {
	return []Step{
		{Status: "CREATE_IN_PROGRESS", Reason: "User Initiated"},
		{At: time.Second, Events: []Ev{{failed.LogicalID, failed.Type, "CREATE_IN_PROGRESS", ""}}},
		{At: failAt, Events: []Ev{{failed.LogicalID, failed.Type, "CREATE_FAILED", reason}}},
		{At: failAt + time.Second, Status: "CREATE_FAILED",
			Reason: fmt.Sprintf("The following resource(s) failed to create: [%s]. ", failed.LogicalID)},
	}
}

// UpdateRollback: failed fails to update at failAt, the update rolls back
// and the stack is UPDATE_ROLLBACK_COMPLETE.
func UpdateRollback(failAt time.Duration, failed Res, reason string) []Step {
	return []Step{
		{Status: "UPDATE_IN_PROGRESS", Reason: "User Initiated"},
		{At: time.Second, Events: []Ev{{failed.LogicalID, failed.Type, "UPDATE_IN_PROGRESS", ""}}},
		{At: failAt, Events: []Ev{{failed.LogicalID, failed.Type, "UPDATE_FAILED", reason}}},
		{At: failAt + time.Second, Status: "UPDATE_ROLLBACK_IN_PROGRESS",
			Reason: fmt.Sprintf("The following resource(s) failed to update: [%s]. ", failed.LogicalID)},
		{At: failAt + 5*time.Second, Events: []Ev{{failed.LogicalID, failed.Type, "UPDATE_IN_PROGRESS", ""}}},
		{At: failAt + 10*time.Second, Events: []Ev{{failed.LogicalID, failed.Type, "UPDATE_COMPLETE", ""}}},
		{At: failAt + 11*time.Second, Status: "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS"},
		{At: failAt + 12*time.Second, Status: "UPDATE_ROLLBACK_COMPLETE"},
	}
}

// UpdateRollbackFails: as UpdateRollback, but rolling back stuck fails:
// the stack is UPDATE_ROLLBACK_FAILED.
func UpdateRollbackFails(failAt time.Duration, failed Res, reason string, stuck Res, stuckReason string) []Step {
	return []Step{
		{Status: "UPDATE_IN_PROGRESS", Reason: "User Initiated"},
		{At: time.Second, Events: []Ev{{failed.LogicalID, failed.Type, "UPDATE_IN_PROGRESS", ""}}},
		{At: failAt, Events: []Ev{{failed.LogicalID, failed.Type, "UPDATE_FAILED", reason}}},
		{At: failAt + time.Second, Status: "UPDATE_ROLLBACK_IN_PROGRESS",
			Reason: fmt.Sprintf("The following resource(s) failed to update: [%s]. ", failed.LogicalID)},
		{At: failAt + 5*time.Second, Events: []Ev{{failed.LogicalID, failed.Type, "UPDATE_IN_PROGRESS", ""}, {stuck.LogicalID, stuck.Type, "UPDATE_IN_PROGRESS", ""}}},
		{At: failAt + 8*time.Second, Events: []Ev{{failed.LogicalID, failed.Type, "UPDATE_COMPLETE", ""}}},
		{At: failAt + 10*time.Second, Events: []Ev{{stuck.LogicalID, stuck.Type, "UPDATE_FAILED", stuckReason}}},
		{At: failAt + 11*time.Second, Status: "UPDATE_ROLLBACK_FAILED",
			Reason: fmt.Sprintf("The following resource(s) failed to update: [%s]. ", stuck.LogicalID)},
	}
}

// DeleteFails: the others are deleted, left fails to delete with reason,
// and the stack is DELETE_FAILED at d.
func DeleteFails(d time.Duration, left Res, reason string, others ...Res) []Step {
	var gone []Ev
	for _, r := range others {
		gone = append(gone, Ev{r.LogicalID, r.Type, "DELETE_COMPLETE", ""})
	}
	return []Step{
		{Status: "DELETE_IN_PROGRESS", Reason: "User Initiated"},
		{At: time.Second, Events: append(gone, Ev{left.LogicalID, left.Type, "DELETE_IN_PROGRESS", ""})},
		{At: d - time.Second, Events: []Ev{{left.LogicalID, left.Type, "DELETE_FAILED", reason}}},
		{At: d, Status: "DELETE_FAILED",
			Reason: fmt.Sprintf("The following resource(s) failed to delete: [%s]. ", left.LogicalID)},
	}
}
