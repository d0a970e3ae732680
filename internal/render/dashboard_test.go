package render

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
)

// The dashboard, as CloudFormation substitutes it, is JSON that shows
// every alarm of the cluster and graphs the figures in the cluster's own
// namespaces, with the Cluster dimension the nodes publish them with.
func TestDashboardBody(t *testing.T) {
	d, err := dashboardOf("prod")
	if err != nil {
		t.Fatal(err)
	}
	arn := strings.NewReplacer("${AWS::Partition}", "aws", "${AWS::Region}", "eu-west-1", "${AWS::AccountId}", "123456789012").Replace(d.AlarmARNPrefix)
	body := strings.NewReplacer("${C}", "prod", "${A}", arn, "${AWS::Region}", "eu-west-1").Replace(d.Body)
	if strings.Contains(body, "${") {
		t.Fatalf("a variable left unsubstituted: %s", body)
	}
	var dash struct {
		Widgets []struct {
			Type       string
			Properties struct {
				Alarms  []string
				Region  string
				Metrics [][]string
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &dash); err != nil {
		t.Fatalf("the body is not JSON: %v\n%s", err, body)
	}
	var alarms, metrics []string
	for _, w := range dash.Widgets {
		alarms = append(alarms, w.Properties.Alarms...)
		if w.Type == "metric" && w.Properties.Region != "eu-west-1" {
			t.Errorf("a graph without its region: %+v", w)
		}
		ns := ""
		for _, m := range w.Properties.Metrics {
			if m[0] != "." {
				ns = m[0]
				if m[2] != names.DimCluster || m[3] != "prod" {
					t.Errorf("metric %v: want the dimension Cluster=prod", m)
				}
			}
			metrics = append(metrics, ns+" "+m[1])
		}
	}
	for _, kind := range names.AlarmKinds() {
		if want := "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:" + names.AlarmName("prod", kind); !slices.Contains(alarms, want) {
			t.Errorf("the alarms widget lacks %s: %v", want, alarms)
		}
	}
	// The backup's age is the state of its alarm, in the alarms widget: a
	// graph of it would take the core template over CloudFormation's limit
	// with the most secrets (TestSecretsAtTheLimit).
	swarm, nodes := names.SwarmMetricNamespace("prod"), names.NodeMetricNamespace("prod")
	for _, want := range []string{swarm + " " + names.MetricManagersReachable, swarm + " " + names.MetricNodesDown, swarm + " " + names.MetricServicesBelowDesired,
		swarm + " " + names.MetricTasksPending, nodes + " " + names.MetricDiskUsed} {
		if !slices.Contains(metrics, want) {
			t.Errorf("no graph of %s: %v", want, metrics)
		}
	}
}
