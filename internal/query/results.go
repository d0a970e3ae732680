package query

import (
	"fmt"
	"math"
	"time"

	"github.com/clusterctl/clusterctl/internal/stacks"
)

// Result is how a command that waited on a stack ended (wait, remove-group,
// delete-core, a continued rollback). The JSON keys are a public interface.
type Result struct {
	Stack           string  `json:"stack"`
	Status          string  `json:"status"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// ResultFrom converts a stack operation's outcome.
func ResultFrom(o stacks.Outcome) Result {
	return Result{Stack: o.Stack, Status: o.Status, DurationSeconds: math.Round(o.Duration.Seconds()*10) / 10}
}

// String is the one-line form: "core-g: DELETE_COMPLETE after 14s".
func (r Result) String() string {
	d := time.Duration(r.DurationSeconds * float64(time.Second))
	if d >= 10*time.Second {
		d = d.Round(time.Second)
	}
	return fmt.Sprintf("%s: %s after %s", r.Stack, r.Status, d)
}

// Deletion is delete-core's result: the core stack and each group stack
// deleted with it (none without --cascade).
type Deletion struct {
	Result
	Groups []Result `json:"groups"`
	// Bucket is the core's bucket, deleted after its stack ("" when it was
	// gone already).
	Bucket string `json:"bucket,omitempty"`
}

// DeletionFrom converts the core's and the groups' outcomes.
func DeletionFrom(core stacks.Outcome, groups []stacks.Outcome) Deletion {
	d := Deletion{Result: ResultFrom(core), Groups: make([]Result, 0, len(groups))}
	for _, g := range groups {
		d.Groups = append(d.Groups, ResultFrom(g))
	}
	return d
}
