package lease

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A lease is taken over at once only when its holder's identity (host,
// boot, PID namespace, pid and the process's start time) is checkable
// from here and that process is gone; otherwise it stands until it
// expires: a live process elsewhere, in another PID namespace of a host of
// the same name (a container), or a lease written without that identity
// (by an older clusterctl).
func TestLeaseOfDeadLocalProcessTakenOver(t *testing.T) {
	bucket := newBucket(t, false)
	self := thisProcess()
	if self.BootID == "" || self.PIDNamespace == "" || self.Start == 0 {
		t.Fatalf("this process's identity is not readable here: %+v", self)
	}
	// A process that ran here and is gone, with the identity it had.
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadPID := cmd.Process.Pid
	deadStart, err := processStart(deadPID)
	if err != nil || deadStart == 0 {
		t.Fatalf("start time of %d: %d, %v", deadPID, deadStart, err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	parent := os.Getppid()
	parentStart, err := processStart(parent)
	if err != nil {
		t.Fatal(err)
	}
	here := func(pid int, start uint64) func(*Options) {
		return func(o *Options) {
			o.Host, o.PID, o.BootID, o.PIDNamespace, o.ProcessStart = "", pid, self.BootID, self.PIDNamespace, start
		}
	}
	for _, tt := range []struct {
		name      string
		holder    func(*Options)
		takenOver bool
	}{
		{"dead process here", here(deadPID, deadStart), true},
		{"live process here", here(parent, parentStart), false},
		{"pid reused by another process", here(parent, parentStart+1), true},
		{"dead process elsewhere", func(o *Options) { here(deadPID, deadStart)(o); o.Host = "other-host" }, false},
		{"another pid namespace, same host name", func(o *Options) { here(deadPID, deadStart)(o); o.PIDNamespace = "pid:[4026532999]" }, false},
		{"another boot, same host name", func(o *Options) { here(deadPID, deadStart)(o); o.BootID = "00000000-0000-0000-0000-000000000000" }, false},
		{"written without the identity", func(o *Options) { o.Host, o.PID = "", deadPID }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scope := Group(strings.ReplaceAll(strings.ReplaceAll(tt.name, " ", "-"), ",", ""))
			holder := manager(bucket, "remove-group -n g -j core", tt.holder)
			l, err := holder.Acquire(t.Context(), scope)
			if err != nil {
				t.Fatal(err)
			}
			crash(l) // killed: no renewal, no release
			next, err := manager(bucket, "remove-group -n g -j core").Acquire(t.Context(), scope)
			switch {
			case tt.takenOver && err != nil:
				t.Fatalf("the dead run's lease was not taken over: %v", err)
			case !tt.takenOver && !errors.Is(err, ErrHeld):
				t.Fatalf("Acquire = %v, want ErrHeld", err)
			}
			if next != nil {
				next.Release(t.Context())
			}
			l.Release(t.Context())
		})
	}
}
