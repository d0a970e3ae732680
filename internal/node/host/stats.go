package host

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Stats are the node's disk and memory use (node.HostStats). Meminfo is
// /proc/meminfo ("" for it; tests give another).
type Stats struct{ Meminfo string }

// DiskUsedPercent is the use of the filesystem holding path as df gives
// it: the blocks used over those used and those available to users (the
// blocks reserved for root are neither).
func (Stats) DiskUsedPercent(path string) (float64, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(path, &fs); err != nil {
		return 0, fmt.Errorf("the filesystem of %s: %w", path, err)
	}
	used := fs.Blocks - fs.Bfree
	if used+fs.Bavail == 0 {
		return 0, nil
	}
	return 100 * float64(used) / float64(used+fs.Bavail), nil
}

// MemoryUsedPercent is the memory in use: MemTotal less MemAvailable, over
// MemTotal.
func (s Stats) MemoryUsedPercent() (float64, error) {
	path := s.Meminfo
	if path == "" {
		path = "/proc/meminfo"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("the memory: %w", err)
	}
	return memoryUsed(b)
}

func memoryUsed(b []byte) (float64, error) {
	kb := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		f := strings.Fields(v)
		if !ok || len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseFloat(f[0], 64); err == nil {
			kb[k] = n
		}
	}
	total, ok1 := kb["MemTotal"]
	avail, ok2 := kb["MemAvailable"]
	if !ok1 || !ok2 || total <= 0 {
		return 0, fmt.Errorf("the memory: no MemTotal and MemAvailable in /proc/meminfo")
	}
	return 100 * (total - avail) / total, nil
}
