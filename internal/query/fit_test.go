package query

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// A default table fits the width by cutting its readable columns, the
// widest first; identifiers stay whole, and a table that cannot fit is
// left wider rather than wrong.
func TestFit(t *testing.T) {
	table := Table{
		Header: []string{"INSTANCE", "STATUS", "IMAGE"},
		Rows: [][]string{
			{"i-0123456789abcdef0", "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS", "nginx:1.27"},
			{"i-0fedcba9876543210", "CREATE_COMPLETE", "registry.example.com/team/api:2024-05-01"},
		},
	}
	const natural, narrowest = 109, 41 // 19+3+44+3+40; 19+3+8+3+8
	for _, width := range []int{0, 200, 109, 108, 90, 80, 60, 41, 20} {
		var buf bytes.Buffer
		if err := WriteTable(&buf, Fit(table, width)); err != nil {
			t.Fatal(err)
		}
		want := natural
		if width > 0 {
			want = min(natural, max(width, narrowest))
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		longest := 0
		for _, l := range lines {
			longest = max(longest, utf8.RuneCountInString(l))
		}
		if longest != want {
			t.Errorf("width %d: longest line %d, want %d:\n%s", width, longest, want, buf.String())
		}
		// Every cell is whole or a cut of it ending in "…"; the instance
		// ids are whole.
		for r, row := range table.Rows {
			got := strings.Fields(lines[r+1])
			for i, cell := range row {
				if got[i] != cell && (!strings.HasSuffix(got[i], "…") || !strings.HasPrefix(cell, strings.TrimSuffix(got[i], "…")) || i == 0) {
					t.Errorf("width %d: cell %q printed %q", width, cell, got[i])
				}
			}
		}
	}
}

// -o wide is never cut; the default table is, to the output's width.
func TestOutputWidth(t *testing.T) {
	nodes := []Node{{Cluster: "core", Group: "web", InstanceID: "i-0123456789abcdef0", InstanceType: "t3.small", Lifecycle: "on-demand", State: "running", PrivateIP: "10.0.1.23", Labels: map[string]string{"role": "a-rather-long-label-value-for-this-node"}}}
	// The default table's LIFECYCLE and STATE are as narrow as they go
	// already: a row with a long state shows the cut.
	nodes[0].State = "shutting-down-for-a-long-while"
	write := func(format string, width int) string {
		out, err := NewOutput(format, "")
		if err != nil {
			t.Fatal(err)
		}
		out.Width = width
		var buf bytes.Buffer
		if err := out.Write(&buf, nodes, func(wide bool) Table { return NodesTable(nodes, Columns{Wide: wide}, false) }); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	if a, b := write("wide", 40), write("wide", 0); a != b {
		t.Errorf("-o wide cut to 40 columns:\n%s\nwant:\n%s", a, b)
	}
	if a, b := write("table", 60), write("table", 0); a == b || !strings.Contains(a, "shuttin… ") || !strings.Contains(a, "i-0123456789abcdef0") {
		t.Errorf("the default table at 60 columns:\n%s\nunlimited:\n%s", a, b)
	}
}
