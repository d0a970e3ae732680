package query

import (
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// Secret is one declared secret as clusterctl secrets lists it: the
// declaration, and what the leader last said of it (never a value).
type Secret = wire.SecretStatus

// NotSyncedYet is the problem of a declared secret the snapshot does not
// mention yet.
const NotSyncedYet = "not synced yet: the leader reads the declaration within its next round"

// SecretsOf lists the declared secrets with their status in the snapshot
// (nil: none yet), in declared order.
func SecretsOf(declared spec.Secrets, snap *Snapshot) []Secret {
	byName := map[string]wire.SecretStatus{}
	if snap != nil {
		for _, s := range snap.Secrets {
			byName[s.Name] = s
		}
	}
	out := []Secret{}
	for _, d := range declared {
		st, ok := byName[d.Name]
		if !ok || st.Source != d.From || st.Key != d.Key {
			st = wire.SecretStatus{Name: d.Name, Source: d.From, Key: d.Key, Problem: NotSyncedYet}
		}
		out = append(out, st)
	}
	return out
}

// SecretsTable is the table of clusterctl secrets.
func SecretsTable(secrets []Secret, now time.Time) Table {
	t := Table{Header: []string{"NAME", "SOURCE", "AWS VERSION", "SWARM VERSION", "LAST SYNC", "SERVICES", "PROBLEM"}}
	for _, s := range secrets {
		source := s.Source
		if s.Key != "" {
			source += "#" + s.Key
		}
		swarm := s.SwarmVersion
		if s.SwarmSecret != "" {
			swarm = s.SwarmSecret + " (" + s.SwarmVersion + ")"
		}
		last := "-"
		if s.LastSync != nil {
			last = FormatAge(now.Sub(*s.LastSync)) + " ago"
		}
		t.Rows = append(t.Rows, []string{s.Name, source, dash(s.AWSVersion), dash(swarm), last, dash(strings.Join(s.Services, ",")), dash(s.Problem)})
	}
	return t
}
