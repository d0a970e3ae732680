package enginetest

import (
	"slices"
	"testing"
)

func TestCallsReadsCompleteLinesOnly(t *testing.T) {
	for _, tc := range []struct {
		name, record string
		want         []string
	}{
		{"none", "", nil},
		{"one", "cfn-signal --exit-code 0\n", []string{"--exit-code 0"}},
		{"no arguments", "cfn-signal\n", []string{""}},
		{"other programs", "dnf install -y x\ncfn-signal a\ndnf y\n", []string{"a"}},
		{"being written", "cfn-signal", nil},
		{"being written after one", "cfn-signal a\ncfn-signal --exit", []string{"a"}},
		{"a longer name", "cfn-signals a\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := calls(tc.record, "cfn-signal"); !slices.Equal(got, tc.want) {
				t.Errorf("calls(%q) = %q, want %q", tc.record, got, tc.want)
			}
		})
	}
}
