package cluster

import (
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// Creating what another run is still creating is refused with the command
// that follows that run, rather than only its status.
func TestAlreadyExistsInProgressSaysWait(t *testing.T) {
	e := fakeService(t)
	e.seed(t)
	e.fake.Seed(cfnfake.Seed{Name: "core-g", Status: "UPDATE_IN_PROGRESS",
		Tags: map[string]string{names.TagCluster: "core", names.TagRole: names.RoleAgents, names.TagGroup: "g"}})
	g := spec.Group{Name: "g", InstanceType: spec.InstanceTypes{"t3.small"}}
	if err := g.Complete("core"); err != nil {
		t.Fatal(err)
	}
	_, err := NewGroups(e.s).AddAgents(t.Context(), "core", g, CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "follow the operation in progress with `clusterctl wait core -n g`") {
		t.Errorf("add-agents of a group being updated: %v", err)
	}
}
