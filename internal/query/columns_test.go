package query

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/clusterctl/clusterctl/internal/wire"
)

// A typical cluster — its managers and 3 groups with 20-character names
// (one a spot mix of three types with an on-demand share, one autoscaled,
// 3 nodes each, with public IPs) — fits 120 columns in the default tables
// of a named cluster; -o wide still has every value in full.
func TestDefaultTablesFit120Columns(t *testing.T) {
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	launched := now.Add(-26 * time.Hour)
	ready := 3
	groups := []Group{
		{Cluster: "core", Group: "memory-workers-group", Status: "UPDATE_COMPLETE", InstanceType: "r5.large", Desired: 3, Min: 0, Max: 4, Running: 3, Ready: &ready, Joined: true, Updated: now.Add(-5 * time.Minute)},
		{Cluster: "core", Group: "spot-compute-workers", Status: "CREATE_COMPLETE", InstanceType: "m5.large,m5a.large,m6i.large", Spot: true, OnDemandBase: 1, OnDemandPercent: 25, Desired: 3, Min: 1, Max: 6, Running: 3, Ready: &ready, Joined: true, Updated: now.Add(-3 * time.Hour)},
		{Cluster: "core", Group: "autoscaled-web-front", Status: "UPDATE_COMPLETE", InstanceType: "c5.xlarge", Desired: 3, Min: 1, Max: 10, Running: 3, Ready: &ready, Joined: true, Updated: now.Add(-50 * time.Hour),
			Autoscale: &GroupAutoscale{LastChange: &wire.ScalingDecision{Time: now, From: 2, To: 3}}},
	}
	var nodes []Node
	for _, g := range append([]string{"control"}, "memory-workers-group", "spot-compute-workers", "autoscaled-web-front") {
		for i := range 3 {
			nodes = append(nodes, Node{Cluster: "core", Group: g, InstanceID: "i-0123456789abcdef" + string(rune('0'+i)), InstanceType: "m6i.large", Lifecycle: "on-demand", State: "running",
				PrivateIP: "172.31.100.200", PublicIP: "54.210.123.234", Zone: "us-east-1a", LaunchTime: &launched, ImageID: "ami-0123456789abcdef0",
				Swarm: &NodeSwarm{Status: "ready (reachable)"}, Labels: map[string]string{"role": "worker", "tier": "memory"}})
		}
	}
	for _, tt := range []struct {
		name  string
		table Table
		max   int
	}{
		{"list-groups -j core", GroupsTable(groups, Columns{OneCluster: true, Now: now}), 120},
		{"list-nodes -j core", NodesTable(nodes, Columns{OneCluster: true, Now: now}, true), 120},
		{"list-groups", GroupsTable(groups, Columns{Now: now}), 130},
		{"list-nodes", NodesTable(nodes, Columns{Now: now}, true), 130},
	} {
		var buf bytes.Buffer
		if err := WriteTable(&buf, tt.table); err != nil {
			t.Fatal(err)
		}
		width := 0
		for _, l := range strings.Split(buf.String(), "\n") {
			width = max(width, utf8.RuneCountInString(l))
		}
		t.Logf("%s: %d columns", tt.name, width)
		if width > tt.max {
			t.Errorf("%s is %d columns wide, want at most %d:\n%s", tt.name, width, tt.max, buf.String())
		}
	}
	// Shortened in the default table, in full in the wide one.
	wide := GroupsTable(groups, Columns{Wide: true, OneCluster: true, Now: now})
	def := GroupsTable(groups, Columns{OneCluster: true, Now: now})
	if got := strings.Join(def.Rows[1], " "); !strings.Contains(got, "m5.large+2 mixed") || !strings.Contains(got, " 3h ") {
		t.Errorf("default row %q", got)
	}
	if got := strings.Join(wide.Rows[1], " "); !strings.HasPrefix(got, "core ") || !strings.Contains(got, "m5.large,m5a.large,m6i.large spot, on-demand 1 + 25%") {
		t.Errorf("wide row %q", got)
	}
}

func TestShortAge(t *testing.T) {
	for d, want := range map[time.Duration]string{-time.Second: "0s", 45 * time.Second: "45s", 12 * time.Minute: "12m", 5 * time.Hour: "5h", 47 * time.Hour: "47h", 72 * time.Hour: "3d"} {
		if got := ShortAge(d); got != want {
			t.Errorf("ShortAge(%s) = %s, want %s", d, got, want)
		}
	}
}
