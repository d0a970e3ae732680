package cluster

import "testing"

// The plan's nodes line counts what the questions after it name: nodes a
// smaller capacity terminates as well as those replaced.
func TestNodesLineCountsTerminated(t *testing.T) {
	for _, tt := range []struct {
		plan Plan
		want string
	}{
		{Plan{}, "0 nodes will be replaced"},
		{Plan{NodesTerminated: 2}, "2 nodes will be terminated"},
		{Plan{NodesTerminated: 1}, "1 node will be terminated"},
		{Plan{NodesReplaced: 2, BatchSize: 1, NodesTerminated: 2}, "2 nodes will be replaced, 1 at a time; 2 other nodes will be terminated"},
		{Plan{NodesReplaced: 1, NodesTerminated: 1, NodeAgent: "node agent a → b"}, "1 node will be replaced: node agent a → b; 1 other node will be terminated"},
		{Plan{NodesReplaced: 3, BatchSize: 2}, "3 nodes will be replaced, 2 at a time"},
	} {
		if got := tt.plan.NodesLine(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.plan, got, tt.want)
		}
	}
}
