package fuzzy

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"core", "core", 0},
		{"cor", "core", 1},  // an insertion
		{"cpre", "core", 1}, // a substitution
		{"ocre", "core", 1}, // a transposition counts as one
		{"maxbatch", "maxBatch", 1},
		{"flavour", "instanceType", 11},
		{"", "abc", 3},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
