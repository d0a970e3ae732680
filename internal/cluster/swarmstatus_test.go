package cluster

import (
	"testing"

	"github.com/clusterctl/clusterctl/internal/query"
)

// The swarm nodes of an instance are those whose label names it, at its
// private IP, that the managers found no problem with: another node
// labelled with the instance's id is not one of them, so drain-node and
// replace-node never wait on it nor report it as the instance's.
func TestNodesOfProvesIdentity(t *testing.T) {
	const id = "i-00000000000000a01"
	st := &swarmStatus{Snapshot: query.Snapshot{Nodes: []SwarmNode{
		{NodeID: "real", InstanceID: id, Address: "10.0.0.1", State: "ready"},
		{NodeID: "impostor", InstanceID: id, Address: "10.0.0.2", State: "ready"},
		{NodeID: "flagged", InstanceID: id, Address: "10.0.0.1", State: "ready", IdentityProblem: "nodes [flagged x] all claim it"},
		{NodeID: "other", InstanceID: "i-00000000000000a02", Address: "10.0.0.1", State: "ready"},
	}}}
	for _, tt := range []struct {
		ip   string
		want []string
	}{
		{"10.0.0.1", []string{"real"}},
		{"", []string{"real", "impostor"}}, // the IP not known: the managers' word only
		{"10.0.0.9", nil},
	} {
		var got []string
		for _, n := range st.nodesOf(id, tt.ip) {
			got = append(got, n.NodeID)
		}
		if len(got) != len(tt.want) || len(got) > 0 && got[0] != tt.want[0] || len(got) > 1 && got[1] != tt.want[1] {
			t.Errorf("nodesOf(%s, %q) = %v, want %v", id, tt.ip, got, tt.want)
		}
	}
}
