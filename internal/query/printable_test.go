package query

import (
	"bytes"
	"strings"
	"testing"
)

func TestPrintable(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "web-1 ready", "web-1 ready"},
		{"unicode letters stay", "café – ünïcode ✓", "café – ünïcode ✓"},
		{"terminal escape", "\x1b]0;pwned\x07ready", `\x1b]0;pwned\x07ready`},
		{"clear screen", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"newline would forge a row", "a\ncore  web  ready", `a\x0acore  web  ready`},
		{"tab and carriage return", "a\tb\rc", `a\x09b\x0dc`},
		{"delete", "a\x7f", `a\x7f`},
		{"C1 control", "a\u009bb", `a\u009bb`},
		{"bidi override", "gpj.\u202eexe", `gpj.\u202eexe`},
		{"bidi isolate", "\u2066x\u2069", `\u2066x\u2069`},
		{"zero width", "ad\u200bmin", `ad\u200bmin`},
		{"tag character", "a\U000e0041", `a\U000e0041`},
		{"not UTF-8", "a\xff\xfeb", `a\xff\xfeb`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Printable(tt.in); got != tt.want {
				t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// Every cell of every table, and its header, is written Printable; JSON
// keeps the data.
func TestTablesEscapeCells(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, Table{Header: []string{"NAME", "LABEL\x1b[31m"}, Rows: [][]string{{"n1", "role=\x1b[2Jx\u202e"}, {"n2\nforged", "ok"}}}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.ContainsAny(out, "\x1b\u202e") || strings.Count(out, "\n") != 3 {
		t.Errorf("table passes control characters through:\n%q", out)
	}
	for _, want := range []string{`LABEL\x1b[31m`, `role=\x1b[2Jx\u202e`, `n2\x0aforged`} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	o, err := NewOutput("json", "")
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := o.Write(&buf, map[string]string{"label": "role=\x1b[2J"}, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"role=\u001b[2J"`) {
		t.Errorf("JSON does not keep the data: %s", buf.String())
	}
}
