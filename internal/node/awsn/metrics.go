package awsn

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/clusterctl/clusterctl/internal/node"
)

// CloudWatchAPI is what the metrics need of CloudWatch.
type CloudWatchAPI interface {
	PutMetricData(ctx context.Context, in *cloudwatch.PutMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error)
}

// Metrics publishes figures in one namespace of the cluster
// (names.SwarmMetricNamespace or NodeMetricNamespace: the roles may write
// in no other); it satisfies node.Metrics.
type Metrics struct {
	API       CloudWatchAPI
	Namespace string
}

// Put publishes the figures in one PutMetricData call: more than the call
// takes is refused here rather than split (the publishers stay within it).
func (m Metrics) Put(ctx context.Context, at time.Time, figs []node.Metric) error {
	if len(figs) == 0 {
		return nil
	}
	if m.Namespace == "" {
		return fmt.Errorf("putting metric data: no namespace")
	}
	if len(figs) > node.MaxMetricsPerCall {
		return fmt.Errorf("%d metrics: over the %d PutMetricData takes", len(figs), node.MaxMetricsPerCall)
	}
	data := make([]cwtypes.MetricDatum, 0, len(figs))
	for _, f := range figs {
		d := cwtypes.MetricDatum{MetricName: aws.String(f.Name), Value: aws.Float64(f.Value), Unit: cwtypes.StandardUnit(f.Unit),
			Timestamp: aws.Time(at)}
		for _, x := range f.Dims {
			d.Dimensions = append(d.Dimensions, cwtypes.Dimension{Name: aws.String(x.Name), Value: aws.String(x.Value)})
		}
		data = append(data, d)
	}
	if _, err := m.API.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{Namespace: aws.String(m.Namespace), MetricData: data}); err != nil {
		return fmt.Errorf("putting metric data: %w", err)
	}
	return nil
}
