package host

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestMemoryUsed(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     float64
		err      bool
	}{
		{"meminfo", "MemTotal:       8000000 kB\nMemFree:         100000 kB\nMemAvailable:    2000000 kB\n", 75, false},
		{"no available", "MemTotal:       8000000 kB\n", 0, true},
		{"zero total", "MemTotal: 0 kB\nMemAvailable: 0 kB\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := memoryUsed([]byte(tc.in))
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("memoryUsed = %v, %v; want %v (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

// The disk figure is df's Use%, which rounds up.
func TestDiskUsedMatchesDf(t *testing.T) {
	out, err := exec.Command("df", "--output=pcent", "/").Output()
	if err != nil {
		t.Fatalf("df: %v", err)
	}
	f := strings.Fields(string(out))
	want, err := strconv.Atoi(strings.TrimSuffix(f[len(f)-1], "%"))
	if err != nil {
		t.Fatalf("df said %q", out)
	}
	got, err := Stats{}.DiskUsedPercent("/")
	if err != nil {
		t.Fatal(err)
	}
	if got > float64(want) || got < float64(want)-1.01 {
		t.Errorf("DiskUsedPercent(/) = %.2f, df says %d%%", got, want)
	}
}
