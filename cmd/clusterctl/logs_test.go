package main

import (
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/logs"
)

// --node takes an instance id as EC2 writes them: i- and 8 or 17 hex
// digits, as every other command that names a node.
func TestLogsNodeFlag(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		node, err string
	}{
		{"i-0123456789abcdef0", ""},
		{"i-01234567", ""},
		{"i-0123456789", `invalid --node "i-0123456789"`},
		{"i-0123456789ABCDEF0", `invalid --node "i-0123456789ABCDEF0"`},
		{"0123456789abcdef0", `invalid --node "0123456789abcdef0"`},
	} {
		c := &LogsCmd{Cluster: "core", Node: tc.node}
		req, err := c.request(now)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("--node %s: %v", tc.node, err)
		case tc.err == "" && req.Node != tc.node:
			t.Errorf("--node %s: request for node %q", tc.node, req.Node)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("--node %s: error %v, want %q", tc.node, err, tc.err)
		}
	}
}

// A message reaches the terminal printable: an escape sequence, a bell, a
// carriage return (which would let a line pass for another's source) and
// a newline inside the message are written as escapes; tabs stay; the
// source is printable too.
func TestLogLinePrintable(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		e      logs.Event
		stamps bool
		want   string
	}{
		{logs.Event{Task: "web.1.t", Node: "i-01234567", Message: "GET /\t200"}, false, "web.1.t@i-01234567 | GET /\t200"},
		{logs.Event{Task: "web.1.t", Node: "i-01234567", Message: "\x1b]0;owned\x07\x1b[2Jred\rclusterctl@i-0 | forged\nnext"}, false,
			`web.1.t@i-01234567 | \x1b]0;owned\x07\x1b[2Jred\x0dclusterctl@i-0 | forged\x0anext`},
		{logs.Event{Time: at, Task: "x\x1b[8m", Node: "i-01234567", Message: "bell\a"}, true, `2026-01-02T03:04:05Z x\x1b[8m@i-01234567 | bell\x07`},
	} {
		got := logLine(tc.e, tc.stamps)
		if got != tc.want {
			t.Errorf("logLine(%q) = %q, want %q", tc.e.Message, got, tc.want)
		}
		if strings.ContainsAny(got, "\x1b\x07\r\n") {
			t.Errorf("logLine(%q) = %q: a control character reaches the terminal", tc.e.Message, got)
		}
	}
}
