package cluster

import (
	"fmt"
	"io"
	"time"

	"github.com/clusterctl/clusterctl/internal/network"
	"github.com/clusterctl/clusterctl/internal/query"
)

// WriteClusterPlan prints apply's plan for a terminal: one line per stack
// (what becomes of it), then for each stack that changes its details: an
// update as update-group shows it (settings old → new, resource changes,
// nodes replaced), a create with every setting it is given.
func WriteClusterPlan(w io.Writer, p *ClusterPlan) error {
	t := query.Table{Header: []string{"STACK", "ACTION", "NOTE"}}
	for _, sp := range p.all() {
		t.Rows = append(t.Rows, []string{sp.Stack, sp.Action, sp.Note})
	}
	if err := query.WriteTable(w, t); err != nil {
		return err
	}
	if np := p.Network; np != nil && np.Action == ActionCreate {
		fmt.Fprintf(w, "\n%s: create\n", np.Stack)
		network.WritePlan(w, np.plan)
	}
	for _, sp := range p.Stacks {
		switch sp.Action {
		case ActionUpdate:
			fmt.Fprintf(w, "\n%s: update\n", sp.Stack)
			if err := WritePlan(w, &sp.Plan); err != nil {
				return err
			}
		case ActionCreate:
			fmt.Fprintf(w, "\n%s: create\n", sp.Stack)
			t := query.Table{Header: []string{"SETTING", "VALUE"}}
			for _, c := range sp.Settings {
				t.Rows = append(t.Rows, []string{c.Path, c.NewText})
			}
			if err := query.WriteTable(w, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteApplySummary prints how each stack that changed went: stack,
// action, result, duration.
func WriteApplySummary(w io.Writer, p *ClusterPlan) error {
	t := query.Table{Header: []string{"STACK", "ACTION", "RESULT", "DURATION"}}
	for _, sp := range p.all() {
		if !sp.Changing() {
			continue
		}
		d := "-"
		if sp.Result != ResultNotStarted && sp.Result != "" {
			d = dur(sp.DurationSeconds)
		}
		t.Rows = append(t.Rows, []string{sp.Stack, sp.Action, sp.Result, d})
	}
	return query.WriteTable(w, t)
}

// dur formats seconds as 42s, 3m07s.
func dur(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second)).Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}
