package query

import (
	"errors"
	"slices"
	"testing"

	"github.com/aws/smithy-go"
)

func TestUnreadNotes(t *testing.T) {
	denied := Reason(&smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized"})
	tests := []struct {
		name   string
		unread []Unread
		want   []string
	}{
		{"none", nil, nil},
		{"one", []Unread{{Row: "core-a", What: "load balancer", Reason: denied}},
			[]string{"the load balancer of core-a could not be read: AccessDenied: not authorized (shown as ?)"}},
		{"one reason, said once", []Unread{{Row: "core-a", What: "load balancer", Reason: denied}, {Row: "core-b", What: "load balancer", Reason: denied}},
			[]string{"the load balancer of core-a, core-b could not be read: AccessDenied: not authorized (shown as ?)"}},
		{"two reasons", []Unread{{Row: "core-a", What: "load balancer", Reason: denied}, {Row: "core-b", What: "health", Reason: Reason(errors.New("timeout"))}},
			[]string{"the load balancer of core-a could not be read: AccessDenied: not authorized (shown as ?)", "the health of core-b could not be read: timeout (shown as ?)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UnreadNotes(tt.unread); !slices.Equal(got, tt.want) {
				t.Errorf("UnreadNotes = %q, want %q", got, tt.want)
			}
		})
	}
}
