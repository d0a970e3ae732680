package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// sample is the repetitions of one tool in one measurement.
type sample struct {
	durs   []time.Duration
	calls  []int           // requests in moto's log, per repetition
	ops    map[string]int  // per operation, as the proxy saw them (first repetition)
	vcount string          // clusterctl's own -v summary, when it ran with -v
	rssKB  int64           // peak resident set size over the repetitions
	cpu    []time.Duration // user + system time of the tool's processes
	// From clusterctl's -v log: time spent waiting on AWS calls, in all
	// and per operation.
	inCalls []time.Duration
	opTime  map[string][]time.Duration
}

func (s *sample) add(r result) {
	s.durs = append(s.durs, r.dur)
	s.calls = append(s.calls, r.calls)
	if s.ops == nil {
		s.ops = r.ops
	}
	if r.vcount != "" && s.vcount == "" {
		s.vcount = r.vcount
	}
	s.rssKB = max(s.rssKB, r.rssKB)
	if r.cpu > 0 {
		s.cpu = append(s.cpu, r.cpu)
	}
	if r.callTime != nil {
		if s.opTime == nil {
			s.opTime = map[string][]time.Duration{}
		}
		var total time.Duration
		for op, d := range r.callTime {
			s.opTime[op] = append(s.opTime[op], d)
			total += d
		}
		s.inCalls = append(s.inCalls, total)
	}
}

func sorted(ds []time.Duration) []time.Duration {
	out := append([]time.Duration(nil), ds...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func median(ds []time.Duration) time.Duration {
	s := sorted(ds)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// p90 is the nearest-rank 90th percentile (the maximum below 10 samples).
func p90(ds []time.Duration) time.Duration {
	s := sorted(ds)
	if len(s) == 0 {
		return 0
	}
	return s[int(math.Ceil(0.9*float64(len(s))))-1]
}

func minDur(ds []time.Duration) time.Duration { return sorted(ds)[0] }

// medianOrDash is the median, or "—" without samples.
func medianOrDash(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	return fmtDur(median(ds))
}
func maxDur(ds []time.Duration) time.Duration { return sorted(ds)[len(ds)-1] }

func fmtDur(d time.Duration) string {
	switch a := d.Abs(); {
	case a < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	case a < 100*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	case a < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

func fmtCalls(calls []int) string {
	if len(calls) == 0 {
		return "-"
	}
	lo, hi := calls[0], calls[0]
	for _, c := range calls {
		lo, hi = min(lo, c), max(hi, c)
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// table is a markdown table.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) String() string {
	width := make([]int, len(t.header))
	for i, h := range t.header {
		width[i] = len([]rune(h))
	}
	for _, r := range t.rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i, c := range cells {
			fmt.Fprintf(&b, " %s%s |", c, strings.Repeat(" ", width[i]-len([]rune(c))))
		}
		b.WriteString("\n")
	}
	line(t.header)
	sep := make([]string, len(width))
	for i, w := range width {
		sep[i] = strings.Repeat("-", w)
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	return b.String()
}
