package bootstrap

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwschemas "github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"
	"golang.org/x/sys/unix"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
)

// latest is the figure of a metric of cluster with exactly dims published
// in the last 15 seconds and at or after since (the nodes publish every
// 5): ok false while there is none, or while it changes. A node's own
// figures are in the cluster's node namespace, the swarm's in its swarm
// namespace.
func latest(t *testing.T, cw *cloudwatch.Client, cluster, metric string, since time.Time, dims ...string) (float64, bool) {
	t.Helper()
	var ds []cwtypes.Dimension
	for i := 0; i+1 < len(dims); i += 2 {
		ds = append(ds, cwtypes.Dimension{Name: aws.String(dims[i]), Value: aws.String(dims[i+1])})
	}
	namespace := names.SwarmMetricNamespace(cluster)
	if metric == names.MetricDiskUsed || metric == names.MetricMemoryUsed {
		namespace = names.NodeMetricNamespace(cluster)
	}
	out, err := cw.GetMetricStatistics(context.Background(), &cloudwatch.GetMetricStatisticsInput{
		Namespace: aws.String(namespace), MetricName: aws.String(metric), Dimensions: ds,
		StartTime: aws.Time(maxTime(since, time.Now().Add(-15*time.Second))), EndTime: aws.Time(time.Now().Add(time.Minute)), Period: aws.Int32(60),
		Statistics: []cwtypes.Statistic{cwtypes.StatisticMinimum, cwtypes.StatisticMaximum},
	})
	if err != nil || len(out.Datapoints) == 0 {
		return 0, false
	}
	p := slices.MaxFunc(out.Datapoints, func(a, b cwtypes.Datapoint) int { return aws.ToTime(a.Timestamp).Compare(aws.ToTime(b.Timestamp)) })
	return aws.ToFloat64(p.Maximum), aws.ToFloat64(p.Minimum) == aws.ToFloat64(p.Maximum)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// The leader publishes the swarm's health to CloudWatch, in the cluster's
// own namespaces, and the figures are the swarm's: the nodes ready, a service at 1 of its 2 tasks after a
// node's engine stopped, its other task pending; a node's disk figure is
// what df says of its engine's data root.
//
// The figure must hold still over the last datapoints to be compared with
// df, while the other scenarios' engines write to the lab's disk: the
// node's data root is a file system of its own.
func TestHealthMetricsPublished(t *testing.T) {
	scenario(t)
	fast := "CLUSTERCTL_METRICS_INTERVAL=5"
	tc := deployCore(t, "metrics")
	g := tc.deployGroup(t, "g", 2, nil)
	control := tc.bootControl(t, fast)
	own := g.agentSpec(0, fast)
	own.DataRootSize = "1g"
	agents := []*enginetest.Node{g.bootAgentAs(t, own), g.bootAgent(t, 1, fast)}
	for _, n := range agents {
		g.readyAgent(t, n)
	}
	cw := cloudwatch.NewFromConfig(awsConfig(), func(o *cloudwatch.Options) {
		o.Protocol = awsquery.New(cwschemas.GraniteServiceVersion20100801)
	})
	start := time.Now()
	eventually(t, 2*time.Minute, "2 nodes of group g ready in CloudWatch", func() (bool, string) {
		v, ok := latest(t, cw, "metrics", "NodesReady", start, "Cluster", "metrics", "Group", "g")
		return ok && v == 2, fmt.Sprint(v, ok)
	})

	// A node's disk: df of its engine's data root.
	root := dockerOn(t, agents[0], "info", "-f", "{{.DockerRootDir}}")
	var fs unix.Statfs_t
	if err := unix.Statfs(root, &fs); err != nil || fs.Type != unix.TMPFS_MAGIC {
		t.Fatalf("the node's data root %s is not on a tmpfs of its own (type %#x, %v)", root, fs.Type, err)
	}
	out, err := exec.Command("df", "--output=pcent", root).Output()
	if err != nil {
		t.Fatalf("df %s: %v", root, err)
	}
	f := strings.Fields(string(out))
	df, _ := strconv.Atoi(strings.TrimSuffix(f[len(f)-1], "%"))
	eventually(t, time.Minute, "the node's disk figure", func() (bool, string) {
		v, ok := latest(t, cw, "metrics", "DiskUsedPercent", start, "Cluster", "metrics", "Group", "g", "InstanceId", g.instances[0].id, "Filesystem", "data-root")
		return ok && v <= float64(df) && v > float64(df)-1.01, fmt.Sprintf("%v (df: %d%%)", v, df)
	})

	dockerOn(t, control, "swarm", "update", "--dispatcher-heartbeat", "1s")
	dockerOn(t, control, "service", "create", "-d", "--name", "web", "--replicas", "2", "--replicas-max-per-node", "1",
		"--no-resolve-image", "--network", "host", "--constraint", "node.role==worker", enginetest.Image, "sleep", "3600")
	eventually(t, 2*time.Minute, "web at 2 of 2 in CloudWatch", func() (bool, string) {
		v, ok := latest(t, cw, "metrics", "RunningTasks", start, "Cluster", "metrics", "Service", "web")
		return ok && v == 2, fmt.Sprint(v, ok)
	})
	agents[1].StopEngine()
	stopped := time.Now()
	for _, c := range []struct {
		metric string
		want   float64
		dims   []string
	}{
		{"RunningTasks", 1, []string{"Cluster", "metrics", "Service", "web"}},
		{"DesiredTasks", 2, []string{"Cluster", "metrics", "Service", "web"}},
		{"ServicesBelowDesired", 1, []string{"Cluster", "metrics"}},
		{"TasksPending", 1, []string{"Cluster", "metrics"}},
		{"NodesReady", 1, []string{"Cluster", "metrics", "Group", "g"}},
		// (moto matches a metric by any of its dimensions: the sum
		// NodesDown{Cluster} mixes with the groups' there, so the test
		// reads the group's; the sum is checked in process.)
		{"NodesDown", 1, []string{"Cluster", "metrics", "Group", "g"}},
		{"ManagersReachable", 1, []string{"Cluster", "metrics"}},
	} {
		eventually(t, 3*time.Minute, fmt.Sprintf("%s %v after a node's engine stopped", c.metric, c.want), func() (bool, string) {
			v, ok := latest(t, cw, "metrics", c.metric, stopped, c.dims...)
			return ok && v == c.want, fmt.Sprint(v, ok)
		})
	}
}
