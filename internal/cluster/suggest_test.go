package cluster

import "testing"

func TestClosest(t *testing.T) {
	live := []string{"core", "apps", "staging", "web-prod"}
	for _, tt := range []struct {
		typed, want string
	}{
		{"cor", "core"},
		{"coer", "core"},  // transposed
		{"Core", "core"},  // case
		{"cores", "core"}, // one added
		{"app", "apps"},
		{"stagign", "staging"},
		{"stagin", "staging"},
		{"stgng", "staging"}, // two missing of a long name
		{"web-prd", "web-prod"},
		{"core", ""},     // exists: nothing to suggest
		{"payments", ""}, // nothing close
		{"x", ""},
		{"ab", ""}, // two edits from apps is too far for a short name
	} {
		if got := Closest(tt.typed, live); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.typed, got, tt.want)
		}
	}
	if got := Closest("cor", nil); got != "" {
		t.Errorf("no candidates: %q", got)
	}
}
