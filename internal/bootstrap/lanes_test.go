package bootstrap

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// The scenarios share one lab (bridge, moto, AWS endpoint) and run side
// by side: each deploys its own cluster under its own name, its nodes get
// the addresses moto gives its instances in the shared subnet, their own
// namespace, veth and directory (numbered by the lab under its lock), and
// whatever a scenario reads of the shared endpoint it filters by its own
// nodes' addresses, groups or tokens. They spend most of their time
// waiting on engines and the node programs' rounds, so more of them at
// once than the machine has cores pays, up to the point where the CPU
// the engines, moto and the AWS CLI take makes every wait longer.
//
// lanesEnv sets how many run at once (defaultLanes when unset).
const (
	lanesEnv     = "CLUSTERCTL_ENGINE_SCENARIOS"
	defaultLanes = 4
)

// longestFirst are the scenarios that take longest, longest first, as
// measured (docs/benchmarks.md, "CI time"): they start first, so that the
// run does not end with one of them alone. It orders, nothing more: a
// scenario not named starts after these, in the order of the source.
var longestFirst = []string{
	"TestEveryManagerLostRestored",
	"TestQuorumLossPartitionForcesNothing",
	"TestSingleManagerRestored",
	"TestLiveSwarmRestored",
	"TestQuorumLossHealed",
	"TestSpotInterruption",
	"TestHealthMetricsPublished",
}

// lanes admits the scenarios, at most free at a time, by rank.
type lanes struct {
	mu   sync.Mutex
	free int
	// all: wait until every registered scenario has arrived before
	// admitting any, so that the ranks decide who starts (false when
	// -parallel bounds the run, which then lets only some arrive).
	all                 bool
	registered, arrived int
	waiting             []*waiter
}

type waiter struct {
	rank  int
	ready chan struct{}
}

var gate lanes

// setLanes sizes the gate from the environment and, unless -parallel was
// given, lifts go test's own bound (GOMAXPROCS) so that the gate is the
// one that counts. It is called once the flags are parsed.
func setLanes() error {
	n := defaultLanes
	if v := os.Getenv(lanesEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			return fmt.Errorf("%s=%q: not a positive number", lanesEnv, v)
		}
	}
	gate.free, gate.all = n, true
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			gate.all = false
		}
	})
	if gate.all {
		return flag.Set("test.parallel", "1000")
	}
	return nil
}

// scenario runs the test in parallel with the other scenarios, once the
// gate admits it, and lets the next in when it ends (after its nodes are
// gone: the cleanups run last registered first).
func scenario(t *testing.T) {
	t.Helper()
	gate.mu.Lock()
	rank := slices.Index(longestFirst, t.Name())
	if rank < 0 {
		rank = len(longestFirst) + gate.registered
	}
	gate.registered++
	gate.mu.Unlock()
	t.Parallel()
	w := &waiter{rank: rank, ready: make(chan struct{})}
	gate.mu.Lock()
	gate.arrived++
	gate.waiting = append(gate.waiting, w)
	gate.admit()
	gate.mu.Unlock()
	<-w.ready
	t.Cleanup(func() {
		gate.mu.Lock()
		defer gate.mu.Unlock()
		gate.free++
		gate.admit()
	})
}

// admit lets in the best ranked waiting scenarios while lanes are free.
// The caller holds mu.
func (g *lanes) admit() {
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
