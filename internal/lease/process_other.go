//go:build !linux

package lease

import (
	"errors"
	"os"
)

// thisProcess is the pid alone: without a boot id, a PID namespace and a
// start time to go with it, a holder is never judged gone from here, and
// its lease expires with its TTL.
func thisProcess() Process { return Process{PID: os.Getpid()} }

func processStart(int) (uint64, error) {
	return 0, errors.New("process start times are not read on this system")
}

func processGone(int, uint64) bool { return false }
