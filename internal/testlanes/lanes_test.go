package testlanes

import (
	"slices"
	"strings"
	"testing"
)

// admitted returns which of the channels are closed.
func admitted(chs []<-chan struct{}) []bool {
	out := make([]bool, len(chs))
	for i, ch := range chs {
		select {
		case <-ch:
			out[i] = true
		default:
		}
	}
	return out
}

// The gate waits for every registered test, starts the longest named
// first, then the others in the order they registered, never more than
// its lanes at once.
func TestGateOrderAndBound(t *testing.T) {
	g := &Gate{longest: []string{"TestLong", "TestLonger"}, free: 2, all: true}
	names := []string{"TestA", "TestLonger", "TestB", "TestLong"}
	ranks := make([]int, len(names))
	for i, n := range names {
		ranks[i] = g.register(n)
	}
	// They arrive in any order; none starts before the last arrives.
	chs := make([]<-chan struct{}, len(names))
	for _, i := range []int{2, 0, 1} {
		chs[i] = g.arrive(ranks[i])
	}
	if got := admitted(chs[:3]); slices.Contains(got, true) {
		t.Fatalf("admitted %v before every test arrived", got)
	}
	chs[3] = g.arrive(ranks[3])
	if got, want := admitted(chs), []bool{false, true, false, true}; !slices.Equal(got, want) {
		t.Fatalf("first admitted %v, want %v (the two longest)", got, want)
	}
	g.leave()
	if got, want := admitted(chs), []bool{true, true, false, true}; !slices.Equal(got, want) {
		t.Fatalf("after one left %v, want %v (TestA, registered first)", got, want)
	}
	g.leave()
	if got := admitted(chs); !slices.Equal(got, []bool{true, true, true, true}) {
		t.Fatalf("after two left %v", got)
	}
}

// With -parallel given, go test lets only some tests arrive: the gate
// admits them as they come.
func TestGateWithoutWaitingForAll(t *testing.T) {
	g := &Gate{free: 1}
	a, b := g.register("TestA"), g.register("TestB")
	chA := g.arrive(a)
	if got := admitted([]<-chan struct{}{chA}); !got[0] {
		t.Fatal("the first arrival waits for one that cannot arrive")
	}
	chB := g.arrive(b)
	if got := admitted([]<-chan struct{}{chB}); got[0] {
		t.Fatal("two admitted on one lane")
	}
	g.leave()
	if got := admitted([]<-chan struct{}{chB}); !got[0] {
		t.Fatal("the lane freed is not taken")
	}
}

func TestLanes(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  int
		err   bool
	}{{"", 3, false}, {"5", 5, false}, {"0", 0, true}, {"x", 0, true}, {"-2", 0, true}} {
		t.Setenv("TESTLANES_N", tt.value)
		n, err := Lanes("TESTLANES_N", 3)
		if (err != nil) != tt.err || n != tt.want {
			t.Errorf("%q: %d, %v", tt.value, n, err)
		}
	}
}

// A name of the longest-first list that no test entered is reported: a
// test renamed or removed would otherwise lose its rank unnoticed.
func TestUnenteredNames(t *testing.T) {
	g := &Gate{longest: []string{"TestLong", "TestGone", "TestLonger"}, free: 1}
	if got, want := g.Unentered(), []string{"TestLong", "TestGone", "TestLonger"}; !slices.Equal(got, want) {
		t.Errorf("before any test: %q, want %q", got, want)
	}
	for _, n := range []string{"TestLonger", "TestOther", "TestLong"} {
		g.register(n)
	}
	if got, want := g.Unentered(), []string{"TestGone"}; !slices.Equal(got, want) {
		t.Errorf("Unentered() = %q, want %q", got, want)
	}
}

// After a whole run that passed, an unentered name fails the run; a run
// that failed, or ran some tests only, keeps its code and says nothing.
func TestCheckedFailsAWholeRunWithAnUnenteredName(t *testing.T) {
	for _, tc := range []struct {
		name      string
		entered   []string
		code      int
		whole     bool
		want      int
		wantWords string
	}{
		{"every name entered", []string{"TestLong", "TestLonger"}, 0, true, 0, ""},
		{"one name unentered", []string{"TestLong"}, 0, true, 1, "names TestLonger, which no test entered"},
		{"some tests only", []string{"TestLong"}, 0, false, 0, ""},
		{"a failed run", []string{"TestLong"}, 1, true, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Gate{longest: []string{"TestLong", "TestLonger"}, free: 1}
			for _, n := range tc.entered {
				g.register(n)
			}
			var w strings.Builder
			if got := g.Checked(&w, tc.code, tc.whole); got != tc.want {
				t.Errorf("Checked = %d, want %d", got, tc.want)
			}
			if tc.wantWords == "" && w.Len() > 0 || !strings.Contains(w.String(), tc.wantWords) {
				t.Errorf("wrote %q, want %q", w.String(), tc.wantWords)
			}
		})
	}
}
