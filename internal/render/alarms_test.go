package render

import (
	"slices"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// The core's alarms carry the names internal/names gives them (describe
// reads them back by the stack's resources), the backup alarm's threshold
// follows the backups' period, and each reads the cluster's namespace of
// its metric (who may write there: TestRolesWriteTheirOwnFigures).
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
			ns := names.SwarmMetricNamespace(v.cluster)
			if p["MetricName"] == names.MetricDiskUsed {
				ns = names.NodeMetricNamespace(v.cluster)
			}
			if x["Condition"] != "AlarmsOn" || p["Namespace"] != ns {
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
		if v.name == "core-notify-topic" && (r.Parameters[names.ParamNotifyTopic] == "" || r.Parameters[names.ParamNotifyEmail] != "") ||
			v.name == "core-notify-email" && (r.Parameters[names.ParamNotifyEmail] == "" || r.Parameters[names.ParamNotifyTopic] != "") {
			t.Errorf("%s: parameters %v", v.name, r.Parameters)
		}
	}
}
