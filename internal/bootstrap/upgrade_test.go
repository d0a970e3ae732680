package bootstrap

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// Every node installs exactly the cluster's engine version (the dnf
// stand-in records the package asked for) and labels its engine with the
// hash of the node agent it runs and that version; the leader's status
// snapshot carries the labels, which list-nodes and upgrade's plan read.
func TestUpgradeNodesReportWhatTheyRun(t *testing.T) {
	scenario(t)
	tc := deployCoreSpec(t, "runs", spec.Core{EngineVersion: "24.0.9"})
	g := tc.deployGroup(t, "g", 1, nil)
	control := tc.bootControl(t)
	agent := g.bootAgent(t, 0)
	g.readyAgent(t, agent)
	bin, _ := nodeAgent(t)
	for _, n := range []*enginetest.Node{control, agent} {
		if calls := n.Calls("dnf"); !slices.Contains(calls, "install -y docker-24.0.9") {
			t.Errorf("%s: dnf calls %q, want the engine of the cluster's version installed", n.Spec.Name, calls)
		}
		var labels []string
		if err := json.Unmarshal([]byte(dockerOn(t, n, "info", "--format", "{{json .Labels}}")), &labels); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{names.EngineLabelAgent + "=" + bin.SHA256, names.EngineLabelEngineVersion + "=24.0.9"} {
			if !slices.Contains(labels, want) {
				t.Errorf("%s: engine labels %q lack %s", n.Spec.Name, labels, want)
			}
		}
	}
	eventually(t, time.Minute, "the snapshot shows every node's agent", func() (bool, string) {
		var st struct {
			Nodes []struct{ EngineLabels map[string]string }
		}
		body, err := tc.tryObject(names.StatusKey)
		if err != nil || json.Unmarshal(body, &st) != nil || len(st.Nodes) != 2 {
			return false, string(body)
		}
		for _, n := range st.Nodes {
			if n.EngineLabels[names.EngineLabelAgent] != bin.SHA256 {
				return false, string(body)
			}
		}
		return true, ""
	})
}
