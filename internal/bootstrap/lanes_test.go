package bootstrap

import (
	"testing"

	"github.com/clusterctl/clusterctl/internal/testlanes"
)

// The scenarios share one lab (bridge, moto, AWS endpoint) and run side
// by side: each deploys its own cluster under its own name, its nodes get
// the addresses moto gives its instances in the shared subnet, their own
// namespace, veth and directory (numbered by the lab under its lock), and
// whatever a scenario reads of the shared endpoint it filters by its own
// nodes' addresses, groups or tokens. They spend most of their time
// waiting on engines and the node programs' rounds, so more of them at
// once than the machine has cores pays, up to the point where the CPU
// the engines, moto and the AWS CLI take makes every wait longer. On two
// cores, beside the other packages' tests, six at a time took the package
// from 471 s to 378 s, and still passed with two busy loops beside it
// (docs/benchmarks.md, "Six scenarios at a time").
//
// lanesEnv sets how many run at once (defaultLanes when unset).
const (
	lanesEnv     = "CLUSTERCTL_ENGINE_SCENARIOS"
	defaultLanes = 6
)

// longestFirst are the scenarios that take longest, longest first, as
// measured (docs/benchmarks.md, "The longest first, measured"; go test -v
// logs each scenario's own time in its lane): they start first, so that
// the run does not end with one of them alone. It orders, nothing more: a
// scenario not named starts after these, in the order of the source.
var longestFirst = []string{
	"TestImpostorNotBelieved",
	"TestUpgradeRollsEveryNode",
	"TestDrainNodeCommand",
	"TestQuorumLossPartitionForcesNothing",
	"TestEveryManagerLostRestored",
	"TestAutoscale",
	"TestSingleManagerRestored",
	"TestLiveSwarmRestored",
	"TestQuorumLossHealed",
	"TestManagerLost",
	"TestSpotInterruption",
	"TestHealthMetricsPublished",
	"TestQuorumLossStoppedManagerFenced",
	"TestRollingReplacement",
}

// gate admits the scenarios; set by TestMain.
var gate *testlanes.Gate

// setLanes makes the gate, once the flags are parsed.
func setLanes() error {
	n, err := testlanes.Lanes(lanesEnv, defaultLanes)
	if err != nil {
		return err
	}
	gate, err = testlanes.New(n, longestFirst)
	return err
}

// scenario runs the test in parallel with the other scenarios, once the
// gate admits it, and lets the next in when it ends (after its nodes are
// gone: their cleanups were registered later, and run first). A test that
// cannot share the lab does not call it, and runs alone before the others.
func scenario(t *testing.T) {
	t.Helper()
	gate.Enter(t)
}
