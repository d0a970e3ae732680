package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
)

// dashboards are the names of the account's dashboards.
func dashboards(t *testing.T) []string {
	t.Helper()
	out, err := cloudWatch(t).ListDashboards(context.Background(), &cloudwatch.ListDashboardsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range out.DashboardEntries {
		names = append(names, aws.ToString(d.DashboardName))
	}
	return names
}

// A core with its alarms has a dashboard of them and of the swarm's
// figures, whose console address describe shows; with the alarms off it
// has none; deleting the core deletes it.
func TestDashboard(t *testing.T) {
	newCluster(t)
	const url = "https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1#dashboards:name=clusterctl-core"
	if got := dashboards(t); !sameSet(got, []string{"clusterctl-core"}) {
		t.Fatalf("dashboards %v, want clusterctl-core", got)
	}
	body, err := cloudWatch(t).GetDashboard(context.Background(), &cloudwatch.GetDashboardInput{DashboardName: aws.String("clusterctl-core")})
	if err != nil {
		t.Fatal(err)
	}
	var dash struct{ Widgets []json.RawMessage }
	if err := json.Unmarshal([]byte(aws.ToString(body.DashboardBody)), &dash); err != nil || len(dash.Widgets) < 5 {
		t.Errorf("dashboard body %v, %s", err, aws.ToString(body.DashboardBody))
	}
	if b := aws.ToString(body.DashboardBody); strings.Contains(b, "${") || !strings.Contains(b, "clusterctl/core/swarm") || !strings.Contains(b, ":alarm:clusterctl-core-nodes-down") {
		t.Errorf("dashboard body, substituted: %s", b)
	}
	if r := must(t, "describe", "core"); !strings.Contains(r.stdout, "DashboardUrl ") || !strings.Contains(r.stdout, url+"\n") {
		t.Errorf("describe: want the dashboard's address:\n%s", r)
	}
	if r := must(t, "describe", "core", "--query", ".outputs.DashboardUrl"); r.stdout != url+"\n" {
		t.Errorf("describe --query .outputs.DashboardUrl:\n%s", r)
	}
	must(t, "delete-core", "core", "--yes", "-q")
	if got := dashboards(t); len(got) != 0 {
		t.Errorf("dashboards after delete-core: %v", got)
	}
	// Created with the alarms off: none. (moto keeps a resource whose
	// condition an update turns false, so the update is the templates'
	// golden files' to show: the dashboard is under AlarmsOn.)
	must(t, "create-core", "quiet", "--alarms", "off", "-q")
	if got := dashboards(t); len(got) != 0 {
		t.Errorf("dashboards of a core with the alarms off: %v", got)
	}
	if r := must(t, "describe", "quiet"); strings.Contains(r.stdout, "DashboardUrl") {
		t.Errorf("describe with the alarms off shows a dashboard:\n%s", r)
	}
}
