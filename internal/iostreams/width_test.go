package iostreams

import (
	"errors"
	"testing"
)

func TestWidth(t *testing.T) {
	terminal := func(n int) func() (int, error) { return func() (int, error) { return n, nil } }
	broken := func() (int, error) { return 0, errors.New("not a terminal") }
	for _, tt := range []struct {
		name    string
		columns string
		tty     bool
		size    func() (int, error)
		want    int
	}{
		{"COLUMNS on a terminal", "72", true, terminal(200), 72},
		{"COLUMNS into a pipe", "72", false, broken, 72},
		{"COLUMNS with blanks", " 90 ", false, broken, 90},
		{"the terminal's width", "", true, terminal(132), 132},
		{"a pipe: no limit", "", false, terminal(132), 0},
		{"COLUMNS not a number: the terminal's", "wide", true, terminal(100), 100},
		{"COLUMNS zero: the terminal's", "0", true, terminal(100), 100},
		{"COLUMNS negative, a pipe", "-5", false, broken, 0},
		{"a terminal that does not answer", "", true, broken, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Width(tt.columns, tt.tty, tt.size); got != tt.want {
				t.Errorf("Width(%q, %v) = %d, want %d", tt.columns, tt.tty, got, tt.want)
			}
		})
	}
}
