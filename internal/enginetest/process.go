package enginetest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// processAge is how long ago process pid started: its start time in
// clock ticks (100 a second on Linux) since boot, against the uptime.
func processAge(pid string) (time.Duration, bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	uptime, err2 := os.ReadFile("/proc/uptime")
	if err != nil || err2 != nil {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after it; the start time is field 22 of the line.
	_, rest, ok := strings.Cut(string(stat), ") ")
	fields := strings.Fields(rest)
	up := strings.Fields(string(uptime))
	if !ok || len(fields) < 20 || len(up) == 0 {
		return 0, false
	}
	ticks, err := strconv.ParseFloat(fields[19], 64)
	secs, err2 := strconv.ParseFloat(up[0], 64)
	if err != nil || err2 != nil {
		return 0, false
	}
	return time.Duration((secs - ticks/100) * float64(time.Second)), true
}
