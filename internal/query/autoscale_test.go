package query

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// A group's autoscaling comes from its Auto Scaling group's tag, its
// last change from the cluster's snapshot; the AUTOSCALE column and the
// JSON say both.
func TestGroupAutoscale(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 4, 5, 0, time.UTC)
	tags := []asgtypes.TagDescription{{Key: aws.String(names.TagAutoscale), Value: aws.String("10m")}}
	groups := []Group{
		{Cluster: "core", Group: "web", Min: 1, Max: 4, Autoscale: asgAutoscale(tags)},
		{Cluster: "core", Group: "db", Min: 2, Max: 2, Autoscale: asgAutoscale(nil)},
		{Cluster: "core", Group: "batch", Min: 0, Max: 3, Autoscale: asgAutoscale(tags)},
	}
	snap := &Snapshot{Autoscale: []wire.ScalingDecision{
		{Time: at.Add(-time.Hour), Group: "web", From: 1, To: 3, Reason: "x"},
		{Time: at, Group: "web", From: 3, To: 2, Reason: "node n idle"},
		{Time: at, Group: "db", From: 2, To: 3, Reason: "not autoscaled now"},
	}}
	WithAutoscale(groups, map[string]Swarm{"core": {Cluster: "core", Snapshot: snap}})
	for i, want := range []string{"1–4, 3→2 at 10:04:05", "off", "0–3"} {
		if got := groups[i].AutoscaleText(); got != want {
			t.Errorf("%s: %q, want %q", groups[i].Group, got, want)
		}
	}
	// The default table has the bounds; -o wide the last change too.
	table := GroupsTable(groups, Columns{})
	if h := table.Header[len(table.Header)-1]; h != "AUTOSCALE" || table.Rows[0][len(table.Rows[0])-1] != "1–4" {
		t.Errorf("table %v %v", table.Header, table.Rows[0])
	}
	table = GroupsTable(groups, Columns{Wide: true})
	if at := slices.Index(table.Header, "AUTOSCALE"); at < 0 || table.Rows[0][at] != "1–4, 3→2 at 10:04:05" {
		t.Errorf("wide table %v %v", table.Header, table.Rows[0])
	}
	b, _ := json.Marshal(groups)
	var back []map[string]any
	json.Unmarshal(b, &back)
	a, _ := back[0]["autoscale"].(map[string]any)
	last, _ := a["lastChange"].(map[string]any)
	if a["scaleDownAfter"] != "10m" || last["to"] != 2.0 || back[1]["autoscale"] != nil {
		t.Errorf("JSON %s", b)
	}
}

// services says which pending tasks no group can hold.
func TestServicesUnplaceable(t *testing.T) {
	var snap Snapshot
	if err := json.Unmarshal([]byte(servicesSnapshot), &snap); err != nil {
		t.Fatal(err)
	}
	snap.Unplaceable = []wire.Unplaceable{{Service: "web", Tasks: 1, Reason: "reserves more than a node of any group offers (0 CPU, 64000 MiB)"}}
	got := ServicesOf(&snap)
	if got[1].Unplaceable != snap.Unplaceable[0].Reason || got[0].Unplaceable != "" {
		t.Fatalf("services %+v", got)
	}
	row := strings.Join(ServicesTable(got, false).Rows[1], "|")
	if !strings.HasSuffix(row, "|no group can hold them: reserves more than a node of any group offers (0 CPU, 64000 MiB)") {
		t.Errorf("row %s", row)
	}
}
