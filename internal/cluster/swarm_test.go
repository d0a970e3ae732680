package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// The core's health by its swarm's status snapshot: none, a stale one or
// one refused never reads healthy; a fresh one judges the quorum and the
// backup, of every swarm.
func TestSwarmProblems(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	manager := func(id, status string) query.SwarmNode {
		state := "ready"
		if status == "unreachable" {
			state = "down"
		}
		return query.SwarmNode{NodeID: id, InstanceID: "i-" + id, Role: "manager", State: state, Availability: "active", ManagerStatus: status}
	}
	three := []query.SwarmNode{manager("a", "leader"), manager("b", "reachable"), manager("c", "reachable")}
	swarm := func(age time.Duration, backup *time.Time, nodes ...query.SwarmNode) query.Swarm {
		return query.Swarm{Cluster: "core", Where: "s3://b/status/swarm.json", Now: at.Add(age),
			Snapshot: &query.Snapshot{Version: 1, Cluster: "core", Time: at, Nodes: nodes, LastBackup: backup}}
	}
	recent, old := at.Add(-10*time.Minute), at.Add(-50*time.Minute)
	withLoss := func(w query.Swarm, decision string, checked time.Time) query.Swarm {
		snap := *w.Snapshot
		snap.QuorumLoss = &wire.QuorumLoss{Since: at.Add(time.Minute), Checked: checked, Observer: "i-a", Decision: decision,
			Reason: "the manager at 10.0.1.2 is unreachable but its instance i-b is running"}
		w.Snapshot = &snap
		return w
	}
	for _, tt := range []struct {
		name   string
		w      query.Swarm
		health string
		reason string // of the one problem, "" for none
		repair string
	}{
		{"whole", swarm(time.Second, &recent, three...), "healthy", "", ""},
		{"three never backed up", swarm(time.Second, nil, three...), "degraded", "no backup of the swarm state yet", "journalctl -u clusterctl-housekeeping"},
		{"three, backup overdue", swarm(time.Second, &old, three...), "degraded",
			"the last backup of the swarm state is 50m1s old (the managers back up every 15m)", "by a follower while every manager is reachable"},
		{"no snapshot", query.Swarm{Cluster: "core", Missing: query.NoSnapshotYet("s3://b/status/swarm.json")}, "degraded",
			"the swarm's state is unknown: no status snapshot in s3://b/status/swarm.json yet", "`clusterctl list-nodes -j core -n control`"},
		{"refused", query.Swarm{Cluster: "core", Missing: "refused: untrusted swarm status: it is the status of cluster \"prod\""}, "degraded",
			"the swarm's state is unknown: refused", "journalctl -u clusterctl-housekeeping"},
		{"stale", swarm(3*time.Minute, nil, three...), "degraded", "is 3m old (stale after 2m)", "`clusterctl list-nodes -j core -n control`"},
		{"one unreachable", swarm(time.Second, &recent, manager("a", "leader"), manager("b", "reachable"), manager("c", "unreachable")), "degraded",
			"1 of 3 managers unreachable: the swarm tolerates 0 failures more", "Auto Scaling group replaces"},
		{"quorum lost", swarm(time.Second, &recent, manager("a", "reachable"), manager("b", "unreachable"), manager("c", "unreachable")), "broken",
			"the swarm lost its quorum: 1 of 3 managers reachable, 2 needed", "docker swarm init --force-new-cluster"},
		{"lone manager backed up", swarm(time.Second, &recent, manager("a", "leader")), "healthy", "", ""},
		{"quorum lost, stuck", withLoss(swarm(3*time.Minute, &recent, three...), "stuck", at.Add(3*time.Minute-10*time.Second)), "broken",
			"the swarm has had no leader (no quorum) since 2026-03-04T05:07:07Z, as manager i-a says: the manager at 10.0.1.2 is unreachable but its instance i-b is running",
			"terminate the lost managers' instances"},
		{"quorum lost, recovering", withLoss(swarm(3*time.Minute, &recent, three...), "waiting", at.Add(3*time.Minute-10*time.Second)), "broken",
			"as manager i-a says", "the managers recover the swarm on their own"},
		{"quorum loss noted long ago", withLoss(swarm(10*time.Minute, &recent, three...), "stuck", at.Add(time.Minute)), "degraded",
			"is 10m old (stale after 2m)", "journalctl"},
		{"lone manager never backed up", swarm(time.Second, nil, manager("a", "leader")), "degraded",
			"no backup of the swarm state yet", "journalctl -u clusterctl-housekeeping"},
		{"lone manager backup overdue", swarm(time.Second, &old, manager("a", "leader")), "degraded",
			"the last backup of the swarm state is 50m1s old (the managers back up every 15m)", "journalctl -u clusterctl-housekeeping"},
	} {
		problems := swarmProblems("core", tt.w)
		if h := healthOf("CREATE_COMPLETE", true, problems); h != tt.health {
			t.Errorf("%s: health %s, want %s (%+v)", tt.name, h, tt.health, problems)
		}
		if tt.reason == "" {
			if len(problems) != 0 {
				t.Errorf("%s: problems %+v", tt.name, problems)
			}
			continue
		}
		if len(problems) != 1 || !strings.Contains(problems[0].Reason, tt.reason) || !strings.Contains(problems[0].Repair, tt.repair) {
			t.Errorf("%s: problems %+v, want one saying %q, repaired by %q", tt.name, problems, tt.reason, tt.repair)
		}
	}
}
