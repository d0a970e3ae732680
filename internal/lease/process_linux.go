package lease

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// thisProcess is the identity of the running process: a pid means a
// process only within one PID namespace of one boot, and only until it is
// reused, so the boot id, the PID namespace and the start time go with it.
// A part that cannot be read stays empty, and the lease is then not
// checkable from elsewhere: it expires.
func thisProcess() Process {
	p := Process{PID: os.Getpid()}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		p.BootID = strings.TrimSpace(string(b))
	}
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		p.PIDNamespace = ns
	}
	if start, err := processStart(p.PID); err == nil {
		p.Start = start
	}
	return p
}

// processStart is when a process of this PID namespace started, in clock
// ticks since boot (the 22nd field of /proc/PID/stat).
func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces and parentheses:
	// the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("reading /proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	const startField = 22 - 3 // fields 1 (pid) and 2 (comm) come before
	if len(fields) <= startField {
		return 0, fmt.Errorf("reading /proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	return strconv.ParseUint(fields[startField], 10, 64)
}

// processGone tells whether the process pid that started at start (in
// this PID namespace and boot) no longer runs: no process has that pid,
// or the one that has it started at another time (the pid was reused).
// Anything else, such as a /proc that cannot be read, counts as running.
func processGone(pid int, start uint64) bool {
	now, err := processStart(pid)
	if err == nil {
		return now != start
	}
	if errors.Is(err, fs.ErrNotExist) {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	return false
}
