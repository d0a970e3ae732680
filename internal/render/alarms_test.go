package render

import (
	"slices"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// The core's alarms carry the names internal/names gives them (describe
// reads them back by the stack's resources), the backup alarm's threshold
// follows the backups' period, and the nodes may publish metrics in the
// project's namespace only.
func TestCoreAlarms(t *testing.T) {
	if names.BackupOverdueAfter != 2*wire.BackupEvery {
		t.Errorf("backup overdue after %s, want twice the backups' period %s", names.BackupOverdueAfter, wire.BackupEvery)
	}
	for _, v := range variants() {
		if v.core == nil {
			continue
		}
		r, err := v.render()
		if err != nil {
			t.Fatal(err)
		}
		res := obj(decode(t, r.Template)["Resources"])
		var got []string
		for _, x := range res {
			x := obj(x)
			if x["Type"] != "AWS::CloudWatch::Alarm" {
				continue
			}
			p := obj(x["Properties"])
			got = append(got, p["AlarmName"].(string))
			if x["Condition"] != "AlarmsOn" || p["Namespace"] != names.MetricNamespace {
				t.Errorf("%s: alarm %v: condition %v, namespace %v", v.name, p["AlarmName"], x["Condition"], p["Namespace"])
			}
			if p["AlarmName"] == names.AlarmName(v.cluster, names.AlarmBackupOverdue) && p["Threshold"] != names.BackupOverdueAfter.Seconds() {
				t.Errorf("%s: backup alarm threshold %v", v.name, p["Threshold"])
			}
		}
		var want []string
		for _, k := range names.AlarmKinds() {
			want = append(want, names.AlarmName(v.cluster, k))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: alarms %v, want %v", v.name, got, want)
		}
		pol := obj(obj(obj(res["MetricsPolicy"])["Properties"])["PolicyDocument"])
		st := obj(pol["Statement"].([]any)[0])
		cond := obj(obj(st["Condition"])["StringEquals"])
		if st["Action"] != "cloudwatch:PutMetricData" || cond["cloudwatch:namespace"] != names.MetricNamespace {
			t.Errorf("%s: metrics policy %v", v.name, st)
		}
		if v.name == "core-notify-topic" && (r.Parameters[names.ParamNotifyTopic] == "" || r.Parameters[names.ParamNotifyEmail] != "") ||
			v.name == "core-notify-email" && (r.Parameters[names.ParamNotifyEmail] == "" || r.Parameters[names.ParamNotifyTopic] != "") {
			t.Errorf("%s: parameters %v", v.name, r.Parameters)
		}
	}
}
