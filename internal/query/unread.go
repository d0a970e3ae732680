package query

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/smithy-go"
)

// Unread is what a listing could not read of one row: the cells it
// fills show "?", the other rows are shown as they are, and why is said
// once on stderr (Notes).
type Unread struct {
	Row    string // the row: its stack
	What   string // what could not be read: "load balancer", "health"
	Reason string
}

// Reason is an error as an unread row's reason: AWS's code and message
// (the same for every row that fails alike, without request ids), else
// the error.
func Reason(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode() + ": " + api.ErrorMessage()
	}
	return err.Error()
}

// UnreadNotes are the lines that say why, one for each thing that could
// not be read for one reason, naming its rows: "the load balancer of
// core-web, core-api could not be read: AccessDenied: ... (shown as ?)".
func UnreadNotes(unread []Unread) []string {
	type key struct{ what, reason string }
	rows := map[key][]string{}
	var order []key
	for _, u := range unread {
		k := key{u.What, u.Reason}
		if _, ok := rows[k]; !ok {
			order = append(order, k)
		}
		if !slices.Contains(rows[k], u.Row) {
			rows[k] = append(rows[k], u.Row)
		}
	}
	var out []string
	for _, k := range order {
		out = append(out, fmt.Sprintf("the %s of %s could not be read: %s (shown as ?)", k.what, strings.Join(rows[k], ", "), k.reason))
	}
	return out
}
