package query

import (
	"slices"
	"unicode/utf8"
)

// columnGap is what WriteTable puts between two columns.
const columnGap = 3

// shrinkable are the columns of a default table whose values may be cut
// to fit the width: words a person reads (states, images, ports,
// problems). Identifiers (instances, addresses, names typed back into
// commands) and numbers are never cut: a cut one would be wrong when
// copied. -o wide, JSON and YAML always have every value whole.
var shrinkable = []string{"STATUS", "HEALTH", "STATE", "SWARM", "IMAGE", "PORTS", "TASKS", "PROBLEM", "SOURCE", "LABELS", "CONSTRAINTS", "NETWORK", "ALARMS", "LIFECYCLE", "AUTOSCALE"}

// minShrunk is the narrowest a shrinkable column is cut to (its header
// stays whole if longer): room for a word and the ellipsis.
const minShrunk = 8

// Fit cuts the values of t's shrinkable columns, the widest first, each
// ending in "…", until its lines fit width (0: no limit) or those columns
// are as narrow as they go; the other columns stay whole, so a table that
// cannot fit comes out wider than width rather than wrong.
func Fit(t Table, width int) Table {
	if width <= 0 || len(t.Header) == 0 {
		return t
	}
	widths := make([]int, len(t.Header))
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		for i, cell := range row {
			if i < len(widths) {
				widths[i] = max(widths[i], utf8.RuneCountInString(Printable(cell)))
			}
		}
	}
	floor := make([]int, len(widths))
	for i, h := range t.Header {
		floor[i] = widths[i] // not shrinkable: whole
		if slices.Contains(shrinkable, h) {
			floor[i] = min(widths[i], max(minShrunk, utf8.RuneCountInString(h)))
		}
	}
	total := columnGap * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	cut := false
	for total > width {
		widest := -1
		for i := range widths {
			if widths[i] > floor[i] && (widest < 0 || widths[i] > widths[widest]) {
				widest = i
			}
		}
		if widest < 0 {
			break
		}
		widths[widest]--
		total--
		cut = true
	}
	if !cut {
		return t
	}
	out := Table{Header: t.Header, Rows: make([][]string, len(t.Rows))}
	for r, row := range t.Rows {
		out.Rows[r] = make([]string, len(row))
		for i, cell := range row {
			out.Rows[r][i] = cell
			if i < len(widths) {
				out.Rows[r][i] = cutTo(cell, widths[i])
			}
		}
	}
	return out
}

// cutTo shortens s to n characters (as printed), the last one "…".
func cutTo(s string, n int) string {
	p := Printable(s)
	if utf8.RuneCountInString(p) <= n {
		return s
	}
	r := []rune(p)
	return string(r[:n-1]) + "…"
}
