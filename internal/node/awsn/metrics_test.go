package awsn

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/node"
)

type cwAPI struct {
	in []*cloudwatch.PutMetricDataInput
}

func (c *cwAPI) PutMetricData(_ context.Context, in *cloudwatch.PutMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error) {
	c.in = append(c.in, in)
	return &cloudwatch.PutMetricDataOutput{}, nil
}

func TestMetricsPut(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		n     int
		calls int
		err   bool
	}{
		{"none", 0, 0, false},
		{"one", 1, 1, false},
		{"a call's worth", node.MaxMetricsPerCall, 1, false},
		{"more than a call", node.MaxMetricsPerCall + 1, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &cwAPI{}
			var figs []node.Metric
			for range tc.n {
				figs = append(figs, node.Metric{Name: "NodesDown", Dims: []node.Dim{{Name: "Cluster", Value: "core"}, {Name: "Group", Value: "web"}}, Value: 2, Unit: node.UnitCount})
			}
			err := Metrics{API: api, Namespace: names.SwarmMetricNamespace("core")}.Put(context.Background(), at, figs)
			if (err != nil) != tc.err || len(api.in) != tc.calls {
				t.Fatalf("Put: %v, %d calls; want error %v, %d calls", err, len(api.in), tc.err, tc.calls)
			}
			if tc.calls == 0 {
				return
			}
			in := api.in[0]
			d := in.MetricData[0]
			if aws.ToString(in.Namespace) != "clusterctl/core/swarm" || len(in.MetricData) != tc.n || aws.ToString(d.MetricName) != "NodesDown" ||
				aws.ToFloat64(d.Value) != 2 || string(d.Unit) != "Count" || !aws.ToTime(d.Timestamp).Equal(at) ||
				len(d.Dimensions) != 2 || aws.ToString(d.Dimensions[1].Value) != "web" {
				t.Errorf("put %+v", in)
			}
		})
	}
}

// A sink without its namespace puts nothing: the default namespace would be
// none the roles may write.
func TestMetricsPutNeedsNamespace(t *testing.T) {
	api := &cwAPI{}
	err := Metrics{API: api}.Put(context.Background(), time.Now(), []node.Metric{{Name: "NodesDown", Value: 1, Unit: node.UnitCount}})
	if err == nil || len(api.in) != 0 {
		t.Fatalf("Put without a namespace: %v, %d calls", err, len(api.in))
	}
}
