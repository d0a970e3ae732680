package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
)

func TestRestoreRequest(t *testing.T) {
	key := names.BackupKey(at, instance)
	body, err := NewRestoreRequest(RestoreDetail{RequestID: reqID, Cluster: "core", Backup: key, FromCluster: "prod"}, at, "arn:aws:sts::123456789012:assumed-role/ops/alice", "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	e, err := ParseEvent(body)
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.RestoreRequest("core")
	if err != nil || d.Backup != key || d.FromCluster != "prod" || d.RequestID != reqID || e.Account != "123456789012" || !e.Sent().Equal(at) ||
		d.RequestedBy != "arn:aws:sts::123456789012:assumed-role/ops/alice" {
		t.Errorf("request %+v, %v; envelope %+v", d, err, e)
	}
	if _, err := e.RestoreRequest("stage"); err == nil || !strings.Contains(err.Error(), `for cluster "core", not "stage"`) {
		t.Errorf("another cluster's request: %v", err)
	}
	if _, err := e.BackupRequest("core"); err == nil {
		t.Error("a restore request taken for a backup request")
	}
	for _, tt := range []struct{ id, backup, want string }{
		{"1", key, "id"},
		{reqID, "control/swarm-backup.tar.gz", "backup"},
		{reqID, "control/backups/yesterday-i-1.tar.gz", "backup"},
		{reqID, "", "backup"},
	} {
		if _, err := NewRestoreRequest(RestoreDetail{RequestID: tt.id, Cluster: "core", Backup: tt.backup}, at, "", "eu-west-1"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v", tt, err)
		}
		// One written by hand with these values is dropped by housekeeping.
		detail, _ := json.Marshal(RestoreDetail{RequestID: tt.id, Cluster: "core", Backup: tt.backup})
		e := Event{DetailType: names.RequestRestore, Source: names.RequestSource, Detail: detail}
		if _, err := e.RestoreRequest("core"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("taken %+v: %v", tt, err)
		}
	}
}

func TestRestoreMarker(t *testing.T) {
	m := RestoreMarker{RequestID: reqID, Leader: instance, Backup: "k", Demoted: []string{"a", "b"}, Time: at, Done: true}
	got, err := ParseRestoreMarker(m.Marshal())
	if err != nil || got.RequestID != reqID || !got.Done || len(got.Demoted) != 2 || !got.Time.Equal(at) {
		t.Errorf("%+v, %v", got, err)
	}
	for _, b := range []string{"{", `{"requestId":"1"}`, `{}`} {
		if _, err := ParseRestoreMarker([]byte(b)); err == nil {
			t.Errorf("%s was read", b)
		}
	}
}
