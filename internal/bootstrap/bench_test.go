//go:build bench

package bootstrap

// What the node programs cost on real engines: the leader's housekeeping
// CPU per round and its memory, and the agent service's, in steady state.
// `make bench-nodes` (and `make bench`) runs it with `-tags bench`; without
// the tag the file is not compiled, so `go test` and CI never run it, and
// nothing here asserts a time: it reports (docs/benchmarks.md).

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/node"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/spec"
)

const (
	housekeepingUnit = "clusterctl-housekeeping"
	agentUnit        = "clusterctl-agent"
)

// shellRecorded is the shell programs' cost as this benchmark measured it
// on 2026-11-26 (docs/benchmarks.md, "The node programs"), the mean of its
// runs, while they were still in the templates: once they are gone, the Go
// agent is set beside these figures.
var shellRecorded = nodeCost{
	Program: "shell (recorded 2026-11-26)", Rounds: 20,
	RoundWall: 12680 * time.Millisecond, CPUPerRound: 1923 * time.Millisecond,
	RSSMedian: mibs(58.4), RSSPeak: mibs(65.0), Largest: mibs(60.2), PeakMain: mibs(4.7),
	AgentCPUPerMin: 1407 * time.Millisecond, AgentRSSMedian: mibs(8.7), AgentRSSPeak: mibs(67.2),
}

// steadyTimings are the node programs' own defaults (the Go agent's, which
// are the shell programs'), set over the harness's shortened ones: the
// measurement is of a node as it runs on EC2.
func steadyTimings() []string {
	h, a := node.Defaults(), node.AgentDefaults()
	s := func(name string, d time.Duration) string { return fmt.Sprintf("%s=%d", name, int(d.Seconds())) }
	return []string{
		s("CLUSTERCTL_POLL_WAIT", h.PollWait), s("CLUSTERCTL_IDLE", h.Idle), s("CLUSTERCTL_STATUS_INTERVAL", h.StatusEvery),
		s("CLUSTERCTL_DEAD_NODE_INTERVAL", h.DeadEvery), s("CLUSTERCTL_DEAD_NODE_GRACE", h.DeadGrace),
		s("CLUSTERCTL_DRAIN_POLL", h.DrainPoll), s("CLUSTERCTL_HEARTBEAT_INTERVAL", h.HeartbeatEvery),
		s("CLUSTERCTL_NOTICE_VISIBILITY", h.Visibility),
		s("CLUSTERCTL_CHECK_INTERVAL", a.CheckEvery), s("CLUSTERCTL_REJOIN_AFTER", a.RejoinAfter),
	}
}

// nodeCost is one measurement of a cluster of one manager and one agent.
type nodeCost struct {
	Program   string
	Rounds    int
	RoundWall time.Duration // mean wall time of a round
	// CPUPerRound is the housekeeping unit's CPU (its process and every
	// child: docker, aws, jq, ... for the shell) over the rounds, divided
	// by them.
	CPUPerRound time.Duration
	Calls       map[string]int // the manager's AWS calls in the window
	// RSSMedian and RSSPeak: the housekeeping unit's resident memory
	// (its processes summed), sampled every 100 ms: the median and the
	// largest sample; Largest the largest single process sampled;
	// PeakMain the main process's own peak over its life (VmHWM).
	RSSMedian, RSSPeak, Largest, PeakMain int64
	// The agent service over the same window.
	AgentCPUPerMin time.Duration
	AgentChecks    int // reads of the status snapshot
	AgentCPU       time.Duration
	AgentRSSMedian int64
	AgentRSSPeak   int64
	Backups        int
	Load           [2]string // /proc/loadavg at the start and the end
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestBenchNodePrograms measures the leader's housekeeping and an agent's
// service, booted through the loader as on a node, and prints them beside
// the shell programs' cost, measured the same way before the port
// (shellRecorded).
func TestBenchNodePrograms(t *testing.T) {
	rounds := envInt("CLUSTERCTL_BENCH_ROUNDS", 20)
	reps := envInt("CLUSTERCTL_BENCH_REPS", 1)
	settle := time.Duration(envInt("CLUSTERCTL_BENCH_SETTLE", 45)) * time.Second
	nodeAgent(t)
	var results []nodeCost
	for r := 1; r <= reps; r++ {
		t.Run(fmt.Sprintf("go-%d", r), func(t *testing.T) {
			results = append(results, measureNodes(t, "go", fmt.Sprintf("benchgo%d", r), rounds, settle))
		})
	}
	report(results, false)
}

// measureNodes deploys a core and a group of one, boots the manager and
// the agent with program, waits for the steady state, and measures.
func measureNodes(t *testing.T, program, name string, rounds int, settle time.Duration) nodeCost {
	tc := deployCore(t, name)
	g := tc.deployGroup(t, "g", 1, spec.Labels{"role": "worker"})
	// Through the user data rendered for the stack: the loader.
	m := tc.bootManager(t, tc.control, steadyTimings()...)
	tc.readyManager(t, m)
	a := g.bootAgent(t, 0, steadyTimings()...)
	// Stopped before the nodes close (cleanups run last first): the Go
	// agent's binary is outside the node's directory, where Close looks
	// for what to kill, and would run on through the next measurement.
	t.Cleanup(func() { m.StopUnit(housekeepingUnit); a.StopUnit(agentUnit) })
	g.readyAgent(t, a)
	eventually(t, 3*time.Minute, "the status snapshot shows both nodes Ready", func() (bool, string) {
		snap, err := query.ReadSnapshot(context.Background(), tc.c.s3, tc.bucket, tc.name)
		if err != nil || snap == nil {
			return false, fmt.Sprint(snap, err)
		}
		ready := 0
		for _, n := range snap.Nodes {
			if n.State == "ready" {
				ready++
			}
		}
		return ready == 2, fmt.Sprintf("%+v", snap.Nodes)
	})
	// The lone manager backs up once members changed (the agent joined);
	// then nothing but the rounds until its next backup, 15 minutes on.
	time.Sleep(settle)
	for try := 1; ; try++ {
		c := measureWindow(t, m, a, rounds)
		c.Program = program
		if c.Backups == 0 || try == 3 {
			return c
		}
		t.Logf("%s: a backup fell in the window: measuring again", name)
	}
}

// measureWindow measures from one of the leader's receives on the
// lifecycle queue (the end of a round, where it waits) to the one rounds
// later.
func measureWindow(t *testing.T, m, a *enginetest.Node, rounds int) nodeCost {
	receives := func() []time.Time {
		var at []time.Time
		for _, c := range lab.AWS.Calls() {
			if c.From == m.Spec.IP && c.Service == "sqs" && c.Action == "ReceiveMessage" {
				at = append(at, c.Time)
			}
		}
		return at
	}
	// A round takes the queue's long poll and the work before it: two
	// minutes without a new receive is a stuck housekeeping.
	waitFor := func(n int) time.Time {
		seen, deadline := 0, time.Now()
		for {
			at := receives()
			if len(at) >= n {
				return at[n-1]
			}
			if len(at) > seen {
				seen, deadline = len(at), time.Now().Add(2*time.Minute)
			}
			if time.Now().After(deadline) {
				t.Fatalf("housekeeping made no receive for 2 minutes (%d of %d):\n%s", seen, n, m.Logs())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	first := len(receives()) + 1
	t0 := waitFor(first)
	load0 := loadavg()
	m0, a0 := unitUsage(t, m, housekeepingUnit), unitUsage(t, a, agentUnit)

	var mu sync.Mutex
	var mRSS, aRSS []int64
	var largest int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			mu.Lock()
			if u, err := m.UnitUsage(housekeepingUnit); err == nil {
				mRSS = append(mRSS, u.RSS)
				largest = max(largest, u.Largest)
			}
			if u, err := a.UnitUsage(agentUnit); err == nil {
				aRSS = append(aRSS, u.RSS)
			}
			mu.Unlock()
		}
	}()
	t1 := waitFor(first + rounds)
	m1, a1 := unitUsage(t, m, housekeepingUnit), unitUsage(t, a, agentUnit)
	close(stop)
	<-done
	if m1.Starts != m0.Starts || a1.Starts != a0.Starts {
		t.Fatalf("a unit restarted during the measurement:\n%s\n%s", m.Logs(), a.Logs())
	}
	wall := t1.Sub(t0)
	c := nodeCost{
		Rounds: rounds, RoundWall: wall / time.Duration(rounds),
		CPUPerRound: (m1.CPU - m0.CPU) / time.Duration(rounds),
		Calls:       map[string]int{},
		RSSMedian:   median(mRSS), RSSPeak: slices.Max(append(mRSS, m1.RSS)), Largest: max(largest, m1.Largest), PeakMain: m1.PeakMain,
		AgentCPU:       a1.CPU - a0.CPU,
		AgentRSSMedian: median(aRSS), AgentRSSPeak: slices.Max(append(aRSS, a1.RSS)),
		Load: [2]string{load0, loadavg()},
	}
	c.AgentCPUPerMin = time.Duration(float64(c.AgentCPU) * float64(time.Minute) / float64(wall))
	for _, call := range lab.AWS.Calls() {
		if call.Time.Before(t0) || !call.Time.Before(t1) {
			continue
		}
		switch {
		case call.From == m.Spec.IP:
			c.Calls[callName(call)]++
			if call.Service == "s3" && strings.HasPrefix(call.Action, "PUT ") && strings.Contains(call.Action, names.ControlKey(names.BackupsPrefix)+"/") {
				c.Backups++
			}
		case call.From == a.Spec.IP:
			if call.Service == "s3" && strings.HasPrefix(call.Action, "GET ") && strings.HasSuffix(call.Action, "/"+names.StatusKey) {
				c.AgentChecks++
			}
		}
	}
	return c
}

func unitUsage(t *testing.T, n *enginetest.Node, unit string) enginetest.Usage {
	t.Helper()
	u, err := n.UnitUsage(unit)
	if err != nil {
		t.Fatalf("%v:\n%s", err, n.Logs())
	}
	return u
}

// callName names a call by service and action; an S3 call by method and
// key, without the bucket.
func callName(c enginetest.Call) string {
	if c.Service == "s3" {
		method, path, _ := strings.Cut(c.Action, " ")
		parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 2)
		key := "(bucket)"
		if len(parts) == 2 {
			key = parts[1]
		}
		return "s3:" + method + " " + key
	}
	return c.Service + ":" + c.Action
}

func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// mibs is v MiB in bytes.
func mibs(v float64) int64 { return int64(v * (1 << 20)) }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func secs(d time.Duration) string {
	switch {
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// report prints the measurements as a table, the calls of each, and the
// Go agent's cost against the shell programs': measured in this run while
// they exist, the recorded figures after.
func report(results []nodeCost, shellMeasured bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nnode programs, one manager and one agent, steady state, default timings (%d-core machine)\n\n", runtime.NumCPU())
	fmt.Fprintln(&b, "| program | rounds | wall per round | housekeeping CPU per round | housekeeping RSS median / peak (processes summed) | largest process | agent CPU per minute | agent CPU per check | agent RSS median / peak | load average (start; end) |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	row := func(c nodeCost) {
		perCheck := "—"
		if c.AgentChecks > 0 {
			perCheck = fmt.Sprintf("%s (%d checks)", secs(c.AgentCPU/time.Duration(c.AgentChecks)), c.AgentChecks)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s / %s | %s | %s | %s | %s / %s | %s; %s |\n", c.Program, c.Rounds, secs(c.RoundWall), secs(c.CPUPerRound),
			mib(c.RSSMedian), mib(c.RSSPeak), mib(c.Largest), secs(c.AgentCPUPerMin), perCheck, mib(c.AgentRSSMedian), mib(c.AgentRSSPeak), c.Load[0], c.Load[1])
	}
	for _, c := range results {
		row(c)
	}
	if !shellMeasured {
		row(shellRecorded)
	}
	fmt.Fprintln(&b)
	for _, c := range results {
		var calls []string
		for _, k := range slices.Sorted(maps.Keys(c.Calls)) {
			calls = append(calls, fmt.Sprintf("%s=%.1f", k, float64(c.Calls[k])/float64(c.Rounds)))
		}
		fmt.Fprintf(&b, "- %s: the leader's AWS calls per round: %s; backups in the window: %d; main process peak RSS (VmHWM) %s\n",
			c.Program, strings.Join(calls, " "), c.Backups, mib(c.PeakMain))
	}
	goCost, shellCost := pick(results, "go"), pick(results, "shell")
	baseline := "measured in this run"
	if !shellMeasured {
		shellCost, baseline = []nodeCost{shellRecorded}, "recorded before the port: the shell programs are no longer in the tree"
	}
	if len(goCost) > 0 && len(shellCost) > 0 {
		cpu := func(c nodeCost) time.Duration { return c.CPUPerRound }
		agent := func(c nodeCost) time.Duration { return c.AgentCPUPerMin }
		g, gLo, gHi := spread(goCost, cpu)
		s, sLo, sHi := spread(shellCost, cpu)
		ratio := float64(s) / float64(g)
		met := "met"
		if ratio < 10 {
			met = "not met"
		}
		fmt.Fprintf(&b, "\nhousekeeping CPU per round (mean of %d and %d runs, range): Go %s (%s–%s), shell %s (%s–%s; %s): the Go agent uses 1/%.0f of the shell's; goal a tenth: %s\n",
			len(goCost), len(shellCost), secs(g), secs(gLo), secs(gHi), secs(s), secs(sLo), secs(sHi), baseline, ratio, met)
		rss := func(cs []nodeCost) int64 {
			var sum int64
			for _, c := range cs {
				sum += c.RSSMedian
			}
			return sum / int64(len(cs))
		}
		fmt.Fprintf(&b, "housekeeping memory, median over the window: Go %s, shell %s (its processes summed; its largest process %s)\n",
			mib(rss(goCost)), mib(rss(shellCost)), mib(slices.MaxFunc(shellCost, func(a, b nodeCost) int { return cmp.Compare(a.Largest, b.Largest) }).Largest))
		if ga, _, _ := spread(goCost, agent); ga > 0 {
			sa, _, _ := spread(shellCost, agent)
			fmt.Fprintf(&b, "agent service CPU per minute: Go %s, shell %s: 1/%.0f\n", secs(ga), secs(sa), float64(sa)/float64(ga))
		}
	}
	fmt.Print(b.String())
}

func pick(results []nodeCost, program string) []nodeCost {
	var out []nodeCost
	for _, c := range results {
		if c.Program == program {
			out = append(out, c)
		}
	}
	return out
}

// spread is the mean, the least and the largest of one figure of runs.
func spread(cs []nodeCost, f func(nodeCost) time.Duration) (mean, lo, hi time.Duration) {
	lo, hi = f(cs[0]), f(cs[0])
	for _, c := range cs {
		mean += f(c)
		lo, hi = min(lo, f(c)), max(hi, f(c))
	}
	return mean / time.Duration(len(cs)), lo, hi
}
