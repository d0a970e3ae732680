package enginetest

import (
	"os/exec"
	"testing"
	"time"
)

// A process tree's CPU counts the children that ended and were waited for
// (in their parent's cutime) as well as those that run; its memory sums
// the processes that run.
func TestTreeUsage(t *testing.T) {
	// A subshell spins for a while and ends; then the shell waits on a
	// sleeping child, which is still there when the tree is read.
	cmd := exec.Command("bash", "-c", `(i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done); touch "$0"; sleep 30; true`, t.TempDir()+"/spun")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	spun := cmd.Args[3]
	deadline := time.Now().Add(30 * time.Second)
	for !fileExists(spun) {
		if time.Now().After(deadline) {
			t.Fatal("the subshell did not finish spinning within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the sleep has started
	use, ok := treeUsage(cmd.Process.Pid)
	if !ok {
		t.Fatal("the shell is gone")
	}
	own, _ := cpuTicks(cmd.Process.Pid)
	if use.Procs != 2 {
		t.Errorf("%d processes, want the shell and its sleep", use.Procs)
	}
	// The spinning took far more than the 10 ms tick; the shell's own
	// ticks are in the tree's sum.
	if use.CPU < 50*time.Millisecond || use.CPU < time.Duration(own)*clockTick {
		t.Errorf("CPU %v (the shell's own with its reaped children %v): the reaped subshell is not counted", use.CPU, time.Duration(own)*clockTick)
	}
	if use.RSS <= use.Largest || use.Largest <= 0 || use.PeakMain <= 0 {
		t.Errorf("memory %+v: want two resident processes summed and the shell's peak", use)
	}
	if _, ok := treeUsage(1 << 30); ok {
		t.Error("a process that does not exist has a usage")
	}
}
