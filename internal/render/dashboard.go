package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
)

// dashboardData is what templates/core/dashboard.json.tmpl sees.
type dashboardData struct {
	Resource, Name string
	// Body is the DashboardBody, for Fn::Sub: ${C} is the cluster, ${A}
	// the ARN of its alarms but their kind; ${AWS::Region} the stack's.
	// Every byte counts against the core template's 51,200, with the
	// secrets' and the longest cluster name's (TestSecretsAtTheLimit):
	// the cluster is said once, widgets take CloudWatch's default size
	// and place, and a metric repeats its namespace and dimension as ".".
	Body string
	// AlarmARNPrefix is ${A}.
	AlarmARNPrefix string
}

// widget is one widget of a dashboard, as CloudWatch reads it.
type widget struct {
	Type       string         `json:"type"`
	Width      int            `json:"width,omitempty"`
	Properties map[string]any `json:"properties"`
}

// dashboardOf is the dashboard of cluster: its alarms' states, then a
// graph for each of the figures they watch, with what explains them.
func dashboardOf(cluster string) (dashboardData, error) {
	const swarm, nodes = "clusterctl/${C}/swarm", "clusterctl/${C}/nodes"
	if names.SwarmMetricNamespace(cluster) != strings.ReplaceAll(swarm, "${C}", cluster) || names.NodeMetricNamespace(cluster) != strings.ReplaceAll(nodes, "${C}", cluster) {
		return dashboardData{}, fmt.Errorf("the dashboard's namespaces are not names.SwarmMetricNamespace and NodeMetricNamespace")
	}
	var alarms []string
	for _, kind := range names.AlarmKinds() {
		alarms = append(alarms, "${A}"+kind)
	}
	widgets := []widget{{Type: "alarm", Width: 24, Properties: map[string]any{"title": "Alarms", "alarms": alarms}}}
	// metrics are the figures of one namespace published with the
	// Cluster dimension alone; the rows after the first repeat the
	// namespace and the dimension as ".".
	metrics := func(ns string, first string, more ...string) [][]string {
		rows := [][]string{{ns, first, names.DimCluster, "${C}"}}
		for _, m := range more {
			rows = append(rows, []string{".", m, ".", "."})
		}
		return rows
	}
	graphs := []struct {
		title   string
		metrics any
	}{
		{"Managers", metrics(swarm, names.MetricManagersReachable, names.MetricManagersExpected)},
		{"Down", metrics(swarm, names.MetricNodesDown, names.MetricServicesBelowDesired)},
		{"Tasks", metrics(swarm, names.MetricRunningTasks, names.MetricDesiredTasks, names.MetricTasksPending, names.MetricTasksUnplaceable)},
		{"Disk %", metrics(nodes, names.MetricDiskUsed)},
	}
	for _, g := range graphs {
		widgets = append(widgets, widget{Type: "metric", Properties: map[string]any{"title": g.title, "region": "${AWS::Region}", "metrics": g.metrics}})
	}
	body, err := json.Marshal(map[string]any{"widgets": widgets})
	if err != nil {
		return dashboardData{}, fmt.Errorf("encoding the dashboard: %w", err)
	}
	return dashboardData{
		Resource: names.ResourceDashboard, Name: names.DashboardName(cluster), Body: string(body),
		AlarmARNPrefix: "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:" + names.AlarmName(cluster, ""),
	}, nil
}
