package query

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/stacks"
)

func TestResults(t *testing.T) {
	r := ResultFrom(stacks.Outcome{Stack: "core-g", Status: "DELETE_COMPLETE", Duration: 14260 * time.Millisecond})
	if r.String() != "core-g: DELETE_COMPLETE after 14s" || r.DurationSeconds != 14.3 {
		t.Errorf("result %+v %q", r, r)
	}
	if s := ResultFrom(stacks.Outcome{Stack: "core", Status: "UPDATE_COMPLETE", Duration: 1260 * time.Millisecond}).String(); s != "core: UPDATE_COMPLETE after 1.3s" {
		t.Errorf("short result %q", s)
	}
	out, err := NewOutput("json", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		v    any
		want string
	}{
		{DeletionFrom(stacks.Outcome{Stack: "core", Status: "DELETE_COMPLETE", Duration: time.Second}, nil),
			`{"durationSeconds":1,"groups":[],"stack":"core","status":"DELETE_COMPLETE"}`},
		{DeletionFrom(stacks.Outcome{Stack: "core", Status: "DELETE_COMPLETE"}, []stacks.Outcome{{Stack: "core-g", Status: "DELETE_COMPLETE", Duration: 2 * time.Second}}),
			`{"durationSeconds":0,"groups":[{"durationSeconds":2,"stack":"core-g","status":"DELETE_COMPLETE"}],"stack":"core","status":"DELETE_COMPLETE"}`},
	} {
		var buf bytes.Buffer
		if err := out.Write(&buf, tt.v, nil); err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, buf.Bytes()); err != nil || compact.String() != tt.want {
			t.Errorf("JSON %s, want %s (%v)", compact.String(), tt.want, err)
		}
	}
}
