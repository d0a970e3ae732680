package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwschemas "github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"

	"github.com/clusterctl/clusterctl/internal/names"
)

// cloudWatch is a CloudWatch client of moto (which speaks the query
// protocol only).
func cloudWatch(t *testing.T) *cloudwatch.Client {
	return cloudwatch.NewFromConfig(motoConfig(t), func(o *cloudwatch.Options) {
		o.Protocol = awsquery.New(cwschemas.GraniteServiceVersion20100801)
	})
}

type alarmsSeen struct {
	Alarms []struct {
		Name, Kind, State string
		Since             time.Time
	} `json:"alarms"`
}

// create-core --notify makes the alarms on the swarm's metrics, an
// encrypted topic and the e-mail subscription; describe and list-clusters
// show the alarms' states as CloudWatch has them.
func TestAlarmsAndNotification(t *testing.T) {
	parallel(t)
	resetMoto(t)
	ctx := context.Background()
	cw, sn := cloudWatch(t), sns.NewFromConfig(motoConfig(t))
	r := must(t, "create-core", "core", "--notify", "ops@example.com", "-q")
	if !strings.Contains(r.stderr, "AWS e-mails ops@example.com a link to confirm the subscription") {
		t.Errorf("create-core --notify EMAIL does not say the subscription must be confirmed:\n%s", r)
	}

	topics, err := sn.ListTopics(ctx, &sns.ListTopicsInput{})
	if err != nil || len(topics.Topics) != 1 {
		t.Fatalf("topics %+v, %v", topics, err)
	}
	topic := aws.ToString(topics.Topics[0].TopicArn)
	attrs, err := sn.GetTopicAttributes(ctx, &sns.GetTopicAttributesInput{TopicArn: aws.String(topic)})
	if err != nil || attrs.Attributes["KmsMasterKeyId"] == "" {
		t.Errorf("topic %s not encrypted: %v, %v", topic, attrs, err)
	}
	subs, err := sn.ListSubscriptionsByTopic(ctx, &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil || len(subs.Subscriptions) != 1 || aws.ToString(subs.Subscriptions[0].Protocol) != "email" ||
		aws.ToString(subs.Subscriptions[0].Endpoint) != "ops@example.com" {
		t.Errorf("subscriptions %+v, %v", subs, err)
	}

	out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String("clusterctl-core-")})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		metric, stat, missing string
		threshold             float64
		periods               int32
		op                    cwtypes.ComparisonOperator
	}
	wants := map[string]want{
		"clusterctl-core-quorum-at-risk":         {"ManagersReachable", "Minimum", "ignore", 1, 3, cwtypes.ComparisonOperatorLessThanThreshold},
		"clusterctl-core-leader-silent":          {"ManagersReachable", "SampleCount", "breaching", 1, 5, cwtypes.ComparisonOperatorLessThanThreshold},
		"clusterctl-core-nodes-down":             {"NodesDown", "Minimum", "notBreaching", 0, 10, cwtypes.ComparisonOperatorGreaterThanThreshold},
		"clusterctl-core-services-below-desired": {"ServicesBelowDesired", "Minimum", "notBreaching", 0, 10, cwtypes.ComparisonOperatorGreaterThanThreshold},
		"clusterctl-core-disk-full":              {"DiskUsedPercent", "Maximum", "notBreaching", 85, 5, cwtypes.ComparisonOperatorGreaterThanThreshold},
		"clusterctl-core-backup-overdue":         {"BackupAgeSeconds", "Minimum", "notBreaching", 1800, 1, cwtypes.ComparisonOperatorGreaterThanThreshold},
	}
	if len(out.MetricAlarms) != len(wants) {
		t.Errorf("%d alarms, want %d", len(out.MetricAlarms), len(wants))
	}
	for _, a := range out.MetricAlarms {
		w, ok := wants[aws.ToString(a.AlarmName)]
		if !ok {
			t.Errorf("alarm %s unexpected", aws.ToString(a.AlarmName))
			continue
		}
		// The swarm's figures in the namespace only the managers write;
		// the nodes' own disk figure in the one the agents write too.
		ns := names.SwarmMetricNamespace("core")
		if w.metric == names.MetricDiskUsed {
			ns = names.NodeMetricNamespace("core")
		}
		if aws.ToString(a.Namespace) != ns || aws.ToString(a.MetricName) != w.metric || string(a.Statistic) != w.stat ||
			aws.ToString(a.TreatMissingData) != w.missing || aws.ToFloat64(a.Threshold) != w.threshold ||
			aws.ToInt32(a.EvaluationPeriods) != w.periods || aws.ToInt32(a.DatapointsToAlarm) != w.periods || a.ComparisonOperator != w.op ||
			len(a.Dimensions) != 1 || aws.ToString(a.Dimensions[0].Name) != "Cluster" || aws.ToString(a.Dimensions[0].Value) != "core" {
			t.Errorf("alarm %s: %+v, want %+v", aws.ToString(a.AlarmName), a, w)
		}
		if len(a.AlarmActions) != 1 || a.AlarmActions[0] != topic || len(a.OKActions) != 1 || a.OKActions[0] != topic {
			t.Errorf("alarm %s notifies %v / %v, want %s", aws.ToString(a.AlarmName), a.AlarmActions, a.OKActions, topic)
		}
	}

	if _, err := cw.SetAlarmState(ctx, &cloudwatch.SetAlarmStateInput{AlarmName: aws.String("clusterctl-core-nodes-down"),
		StateValue: cwtypes.StateValueAlarm, StateReason: aws.String("test")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cw.SetAlarmState(ctx, &cloudwatch.SetAlarmStateInput{AlarmName: aws.String("clusterctl-core-disk-full"),
		StateValue: cwtypes.StateValueOk, StateReason: aws.String("test")}); err != nil {
		t.Fatal(err)
	}
	seen := decode[alarmsSeen](t, must(t, "describe", "core", "-o", "json"))
	states := map[string]string{}
	for _, a := range seen.Alarms {
		states[a.Kind] = a.State
		if a.Since.IsZero() {
			t.Errorf("alarm %s: no time of its state", a.Name)
		}
	}
	if len(seen.Alarms) != 6 || states["nodes-down"] != "ALARM" || states["disk-full"] != "OK" {
		t.Errorf("describe's alarms %+v", seen.Alarms)
	}
	// The e-mail subscription, as SNS has it (moto confirms at once; a
	// pending one is internal/alarms' test).
	notified := decode[struct {
		Notification *struct{ Target, Topic string }
	}](t, must(t, "describe", "core", "-o", "json"))
	if n := notified.Notification; n == nil || n.Target != "ops@example.com" || n.Topic != topic {
		t.Errorf("describe's notification %+v, want ops@example.com on %s", n, topic)
	}
	text := must(t, "describe", "core").stdout
	if !strings.Contains(text, "Notify: ops@example.com") {
		t.Errorf("describe does not show the subscription:\n%s", text)
	}
	if !strings.Contains(text, "Alarms:") || !strings.Contains(text, "nodes-down") || !strings.Contains(text, "ALARM") {
		t.Errorf("describe does not show the alarms:\n%s", text)
	}
	list := decode[[]struct {
		Cluster string
		Alarms  *int
	}](t, must(t, "list-clusters", "-o", "json"))
	if len(list) != 1 || list[0].Alarms == nil || *list[0].Alarms != 1 {
		t.Errorf("list-clusters %+v, want 1 alarm in ALARM", list)
	}
	if table := must(t, "list-clusters").stdout; !strings.Contains(table, "ALARMS") {
		t.Errorf("list-clusters has no column of alarms:\n%s", table)
	}
}

// --alarms off makes none; describe says so.
func TestAlarmsOff(t *testing.T) {
	parallel(t)
	resetMoto(t)
	must(t, "create-core", "core", "--alarms", "off", "-q")
	out, err := cloudWatch(t).DescribeAlarms(context.Background(), &cloudwatch.DescribeAlarmsInput{})
	if err != nil || len(out.MetricAlarms) != 0 {
		t.Errorf("alarms with --alarms off: %+v, %v", out, err)
	}
	if d := decode[alarmsSeen](t, must(t, "describe", "core", "-o", "json")); len(d.Alarms) != 0 {
		t.Errorf("describe's alarms %+v", d.Alarms)
	}
}

// A target that is neither an e-mail address nor a topic's ARN, or one
// with the alarms off, is refused before anything is made.
func TestNotifyRefused(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	for _, args := range [][]string{
		{"--notify", "ops"},
		{"--notify", "arn:aws:sqs:us-east-1:123456789012:q"},
		{"--alarms", "off", "--notify", "ops@example.com"},
		{"--alarms", "maybe"},
	} {
		r := clusterctl(t, append([]string{"create-core", "core"}, args...)...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("create-core %v: %s; want exit 2 and one line", args, r)
		}
	}
	if names := c.stackNames(t); len(names) != 0 {
		t.Errorf("stacks after refusals: %v", names)
	}
}

// update-core adds the notification and changes it, and its plan says so.
func TestUpdateCoreNotify(t *testing.T) {
	parallel(t)
	resetMoto(t)
	ctx := context.Background()
	must(t, "create-core", "core", "-q")
	const pager = "arn:aws:sns:us-east-1:123456789012:pager"
	// The topic must exist, in the cluster's region: refused otherwise,
	// the core untouched.
	for _, bad := range []string{pager, "arn:aws:sns:eu-west-1:123456789012:pager"} {
		r := clusterctl(t, "update-core", "core", "--notify", bad, "--yes")
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "SNS topic "+bad) {
			t.Errorf("update-core --notify %s: %s; want exit 2 and one line", bad, r)
		}
	}
	if r := clusterctl(t, "create-core", "other", "--notify", pager); r.code != 2 || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("create-core --notify %s: %s; want exit 2", pager, r)
	}
	if names := newClients(t).stackNames(t); len(names) != 1 {
		t.Errorf("stacks after refusals: %v", names)
	}
	if _, err := sns.NewFromConfig(motoConfig(t)).CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("pager")}); err != nil {
		t.Fatal(err)
	}
	r := must(t, "update-core", "core", "--notify", pager, "--yes")
	if plan := r.stdout + r.stderr; !strings.Contains(plan, "notify") || !strings.Contains(plan, pager) {
		t.Errorf("the plan does not say the notification changes:\n%s", r)
	}
	out, err := cloudWatch(t).DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{"clusterctl-core-quorum-at-risk"}})
	if err != nil || len(out.MetricAlarms) != 1 || len(out.MetricAlarms[0].AlarmActions) != 1 || out.MetricAlarms[0].AlarmActions[0] != pager {
		t.Fatalf("after update-core --notify: %+v, %v", out, err)
	}
	r = must(t, "update-core", "core", "--notify", "", "--yes")
	if plan := r.stdout + r.stderr; !strings.Contains(plan, "notify") {
		t.Errorf("the plan does not say the notification stops:\n%s", r)
	}
	out, err = cloudWatch(t).DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{"clusterctl-core-quorum-at-risk"}})
	if err != nil || len(out.MetricAlarms) != 1 || len(out.MetricAlarms[0].AlarmActions) != 0 {
		t.Errorf("after update-core --notify '': %+v, %v", out, err)
	}
}
