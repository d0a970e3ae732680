// Package testlanes runs a package's long tests side by side: a bounded
// number at a time, the longest known first, so that a run does not end
// with one long test alone.
//
// A test calls Enter first; the gate calls t.Parallel, then waits for a
// lane. go test's own bound (-parallel, GOMAXPROCS by default) is lifted
// unless given on the command line, and when given it bounds the run too.
package testlanes

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Gate admits the tests that Enter it, at most lanes at a time, by rank.
type Gate struct {
	longest []string

	mu      sync.Mutex
	entered map[string]bool // the names registered, for Unentered
	free    int
	// all: admit none until every test that entered has arrived past
	// t.Parallel, so that the ranks decide who starts (false when
	// -parallel bounds the run: then only some arrive).
	all                 bool
	registered, arrived int
	waiting             []*waiter
}

type waiter struct {
	rank  int
	ready chan struct{}
}

// Lanes reads the number of lanes from the environment variable env, def
// when it is unset.
func Lanes(env string, def int) (int, error) {
	v := os.Getenv(env)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: not a positive number", env, v)
	}
	return n, nil
}

// New returns a gate of n lanes that starts the tests named in longest
// first, in that order, then the others in the order they entered. Call it
// from TestMain once the flags are parsed.
func New(n int, longest []string) (*Gate, error) {
	if n < 1 {
		return nil, fmt.Errorf("%d lanes", n)
	}
	g := &Gate{longest: longest, free: n, all: true}
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			g.all = false
		}
	})
	if g.all {
		if err := flag.Set("test.parallel", "1000"); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Enter runs the top-level test t in parallel with the other tests that
// enter, once a lane is free, and frees the lane when t ends, after the
// cleanups t registers after Enter (they run last registered first).
func (g *Gate) Enter(t *testing.T) {
	t.Helper()
	if strings.Contains(t.Name(), "/") {
		// Its parent would hold a lane while it waits for one.
		t.Fatal("testlanes: Enter is for top-level tests")
	}
	rank := g.register(t.Name())
	t.Parallel()
	queued := time.Now()
	<-g.arrive(rank)
	admitted := time.Now()
	t.Cleanup(func() {
		// go test's own time for t counts the queue too: this line
		// (go test -v) is what a longest-first list is ranked by.
		t.Logf("testlanes: %v in its lane, after %v in the queue",
			time.Since(admitted).Round(100*time.Millisecond), admitted.Sub(queued).Round(100*time.Millisecond))
		g.leave()
	})
}

// register ranks the test name before it pauses in t.Parallel.
func (g *Gate) register(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.entered == nil {
		g.entered = map[string]bool{}
	}
	g.entered[name] = true
	rank := slices.Index(g.longest, name)
	if rank < 0 {
		rank = len(g.longest) + g.registered
	}
	g.registered++
	return rank
}

// arrive queues a registered test, once past t.Parallel; the channel is
// closed when it may run.
func (g *Gate) arrive(rank int) <-chan struct{} {
	w := &waiter{rank: rank, ready: make(chan struct{})}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.arrived++
	g.waiting = append(g.waiting, w)
	g.admit()
	return w.ready
}

// leave frees the lane of a test that ended.
func (g *Gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.free++
	g.admit()
}

// admit lets in the best ranked waiting tests while lanes are free. The
// caller holds mu.
func (g *Gate) admit() {
	if g.all && g.arrived < g.registered {
		return
	}
	slices.SortStableFunc(g.waiting, func(a, b *waiter) int { return a.rank - b.rank })
	for g.free > 0 && len(g.waiting) > 0 {
		g.free--
		close(g.waiting[0].ready)
		g.waiting = g.waiting[1:]
	}
}

// Unentered returns the names of the longest-first list that no test
// entered. After a whole run (WholeRun) each is a test renamed or removed,
// and the list no longer ranks what it was measured to.
func (g *Gate) Unentered() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, name := range g.longest {
		if !g.entered[name] {
			out = append(out, name)
		}
	}
	return out
}

// Checked returns code, m.Run's, or 1 when the run was whole (WholeRun),
// passed, and left names of the longest-first list unentered, which it
// writes to w.
func (g *Gate) Checked(w io.Writer, code int, whole bool) int {
	if code != 0 || !whole {
		return code
	}
	if names := g.Unentered(); len(names) > 0 {
		fmt.Fprintf(w, "testlanes: FAIL: the longest-first list names %s, which no test entered: renamed or removed?\n", strings.Join(names, ", "))
		return 1
	}
	return code
}

// WholeRun says whether go test runs every test of the package: no -run,
// -skip or -short.
func WholeRun() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return !testing.Short()
}
