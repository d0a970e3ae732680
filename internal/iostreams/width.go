package iostreams

import (
	"strconv"
	"strings"
)

// Width is the width tables fit: COLUMNS when it is a positive number
// (set by the user, or exported by the shell: it is then the terminal's
// and meant for programs, piped or not), else the terminal's own width
// when stdout is one (size asks it), else 0: output to a pipe or a file
// keeps every value whole, for the programs that read it.
func Width(columns string, outTTY bool, size func() (int, error)) int {
	if n, err := strconv.Atoi(strings.TrimSpace(columns)); err == nil && n > 0 {
		return n
	}
	if !outTTY {
		return 0
	}
	if n, err := size(); err == nil && n > 0 {
		return n
	}
	return 0
}
