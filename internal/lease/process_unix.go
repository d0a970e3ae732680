//go:build unix

package lease

import (
	"errors"
	"syscall"
)

// processAlive tells whether a process of that id exists on this host
// (signal 0 checks without sending anything; EPERM: it exists, another
// user's).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
