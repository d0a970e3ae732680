package enginetest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Usage is what the processes of one unit have used, read from /proc: the
// unit's main process and every process below it.
type Usage struct {
	PID    int // the unit's main process
	Starts int // how many times the unit's process was started
	Procs  int // processes of the unit now
	// CPU is user plus system time of the unit's processes so far: of
	// those that run now, and of those that ended and were waited for by
	// one of them (the kernel adds a child's time to its parent's when the
	// parent reaps it). Only the time of a process whose parent ended
	// before it is lost, and the node programs do not leave such orphans.
	CPU time.Duration
	// RSS is the resident memory of the unit's processes now, summed;
	// Largest the largest of them; PeakMain the main process's peak
	// (VmHWM).
	RSS, Largest, PeakMain int64
}

// clockTick is the unit of /proc/PID/stat's times: USER_HZ, 100 on Linux.
const clockTick = 10 * time.Millisecond

// UnitUsage reads what the running unit name's processes have used.
func (n *Node) UnitUsage(name string) (Usage, error) {
	name = unitName(name)
	n.mu.Lock()
	u := n.units[name]
	var p *process
	var starts int
	if u != nil {
		p, starts = u.proc, u.starts
	}
	n.mu.Unlock()
	if p == nil {
		return Usage{}, fmt.Errorf("unit %s does not run on %s", name, n.Spec.Name)
	}
	select {
	case <-p.done:
		return Usage{}, fmt.Errorf("unit %s on %s has ended", name, n.Spec.Name)
	default:
	}
	use, ok := treeUsage(p.cmd.Process.Pid)
	if !ok {
		return Usage{}, fmt.Errorf("unit %s on %s: process %d is gone", name, n.Spec.Name, use.PID)
	}
	use.Starts = starts
	return use, nil
}

// treeUsage reads what process pid and every process below it have used;
// false when pid is gone.
func treeUsage(pid int) (Usage, bool) {
	use := Usage{PID: pid}
	kids := children()
	pageSize := int64(os.Getpagesize())
	var walk func(int)
	walk = func(pid int) {
		if ticks, ok := cpuTicks(pid); ok {
			use.CPU += time.Duration(ticks) * clockTick
			use.Procs++
		}
		if rss, ok := residentPages(pid); ok {
			rss *= pageSize
			use.RSS += rss
			use.Largest = max(use.Largest, rss)
		}
		for _, c := range kids[pid] {
			walk(c)
		}
	}
	walk(pid)
	if use.Procs == 0 {
		return use, false
	}
	use.PeakMain = peakResident(pid)
	return use, true
}

// cpuTicks returns utime+stime+cutime+cstime of a process, in clock ticks.
func cpuTicks(pid int) (int64, bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// The command name in parentheses may hold spaces; after it, the
	// state is field 3, utime field 14 ... cstime field 17.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 15 {
		return 0, false
	}
	var sum int64
	for _, s := range f[11:15] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, false
		}
		sum += v
	}
	return sum, true
}

// residentPages returns the resident set of a process, in pages.
func residentPages(pid int) (int64, bool) {
	statm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "statm"))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(statm))
	if len(f) < 2 {
		return 0, false
	}
	v, err := strconv.ParseInt(f[1], 10, 64)
	return v, err == nil
}

// peakResident returns a process's VmHWM in bytes, 0 when unknown.
func peakResident(pid int) int64 {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// StopUnit stops a unit as `systemctl stop` does. A node's Close finds the
// processes to kill by their command line naming the node's directory: a
// unit whose program lives elsewhere (a binary shared by the lab's nodes)
// is stopped this way first.
func (n *Node) StopUnit(name string) { n.stopUnit(name) }
