package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clusterctl/clusterctl/internal/names"
)

// putBackups publishes a status snapshot of cluster core listing backups,
// the newest at lastBackup, as its leader does.
func putBackups(t *testing.T, c clients, bucket string, lastBackup time.Time, backups ...map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"version": 1, "cluster": "core", "time": time.Now().UTC().Format(time.RFC3339), "publisher": "i-0000000000000000a",
		"caDigest": strings.Repeat("ab", 32), "lastBackup": lastBackup.UTC().Format(time.RFC3339), "nodes": []any{}, "backups": backups,
	})
	if _, err := c.s3.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(names.StatusKey), Body: bytes.NewReader(body), ContentType: aws.String("application/json"),
	}); err != nil {
		t.Fatal(err)
	}
}

func backupOf(at time.Time, size int, by string) map[string]any {
	return map[string]any{"key": names.BackupKey(at, by), "size": size, "time": at.UTC().Format(time.RFC3339),
		"swarm": "q8v3k0f6y2n1c7x4m5b9z0a1s", "managers": 3, "takenBy": by}
}

// backups lists what the snapshot lists, newest first; backup sends a
// request through the core's queue and, with --wait, waits until the
// snapshot shows a backup taken since.
func TestBackupCommands(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t)
	q := sqsClient(t)
	queue := stackResource(t, c, "core", names.ResourceLifecycleQueue)
	for _, args := range [][]string{{"backups"}, {"backup"}, {"backups", "-j", "9core"}, {"backup", "-j", "core", "--wait", "x"}} {
		if r := clusterctl(t, args...); r.code != 2 || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: want one line, exit 2\n%s", args, r)
		}
	}
	queueEmpty(t, q, queue, "after the refusals")
	if r := clusterctl(t, "backups", "-j", "core"); r.code != 1 || !strings.Contains(r.stderr, "no status snapshot yet") {
		t.Errorf("backups without a snapshot:\n%s", r)
	}

	older, newer := time.Now().Add(-20*time.Minute).Truncate(time.Second), time.Now().Add(-5*time.Minute).Truncate(time.Second)
	putBackups(t, c, bucket, newer, backupOf(older, 171009, "i-0cb7004dc1fb7b68f"), backupOf(newer, 2621440, "i-0228b24300dc036a7"))
	r := must(t, "backups", "-j", "core")
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(rows) != 3 || !strings.HasPrefix(rows[0], "TIME") || !strings.Contains(rows[0], "TAKEN BY") ||
		!strings.HasPrefix(rows[1], newer.UTC().Format(time.RFC3339)) || !strings.Contains(rows[1], "2.5 MiB") || !strings.Contains(rows[1], "i-0228b24300dc036a7") ||
		!strings.Contains(rows[2], "167 KiB") || !strings.Contains(rows[2], "20m") {
		t.Errorf("backups:\n%s", r)
	}
	list := decode[[]struct {
		Time       time.Time
		AgeSeconds float64
		Size       int64
		Swarm      string
		Managers   int
		TakenBy    string
		Key        string
	}](t, must(t, "backups", "-j", "core", "-o", "json"))
	if len(list) != 2 || !list[0].Time.Equal(newer) || list[0].Size != 2621440 || list[0].Managers != 3 || list[0].Swarm != "q8v3k0f6y2n1c7x4m5b9z0a1s" ||
		list[0].TakenBy != "i-0228b24300dc036a7" || list[0].AgeSeconds < 299 || list[0].Key != names.BackupKey(newer, "i-0228b24300dc036a7") {
		t.Errorf("backups -o json: %+v", list)
	}

	// backup, not waiting: the request is on the queue.
	r = must(t, "backup", "-j", "core")
	if !strings.Contains(r.stdout, "Asked the managers of cluster core for a backup") || strings.Count(r.stdout+r.stderr, "Asked the managers") != 1 {
		t.Errorf("backup, saying it once:\n%s", r)
	}
	msg := receive(t, q, queue)
	if msg == nil {
		t.Fatal("no request on the queue")
	}
	var req struct {
		Source     string
		DetailType string `json:"detail-type"`
		Detail     map[string]string
	}
	if err := json.Unmarshal([]byte(aws.ToString(msg.Body)), &req); err != nil || req.Source != "clusterctl" || req.DetailType != names.RequestBackup ||
		req.Detail["cluster"] != "core" || !strings.HasPrefix(req.Detail["requested-by"], "arn:aws:") {
		t.Errorf("request %s: %v", aws.ToString(msg.Body), err)
	}

	// --wait, with the test as the leader.
	b := startClusterctl(t, "backup", "-j", "core", "--wait", "-o", "json", "--timeout", "5m")
	var m *sqstypes.Message
	b.until(t, "the request reaches the queue", func() bool {
		m = receive(t, q, queue)
		return m != nil
	})
	time.Sleep(3 * time.Second)
	if b.exited() {
		t.Fatalf("backup --wait ended before a backup was taken:\n%s", b.res)
	}
	taken := time.Now().Truncate(time.Second)
	putBackups(t, c, bucket, taken, backupOf(newer, 2621440, "i-0228b24300dc036a7"), backupOf(taken, 2621440, "i-0cb7004dc1fb7b68f"))
	r = b.wait()
	res := decode[struct {
		Cluster, RequestID string
		Taken              *time.Time
	}](t, r)
	if r.code != 0 || res.Cluster != "core" || res.Taken == nil || !res.Taken.Equal(taken) || !strings.Contains(aws.ToString(m.Body), res.RequestID) {
		t.Errorf("backup --wait: %s", r)
	}
	queueEmpty(t, q, queue, "after backup --wait")

	// An update that replaces the managers asks for a backup first; one
	// that replaces none does not.
	must(t, "update-core", "core", "--ssh-cidr", "203.0.113.0/24", "--yes", "-q")
	queueEmpty(t, q, queue, "after an update that replaces no manager")
	putBackups(t, c, bucket, taken)
	r = must(t, "update-core", "core", "--instance-type", "m6i.large", "--yes")
	if msg := receive(t, q, queue); msg == nil || !strings.Contains(aws.ToString(msg.Body), names.RequestBackup) ||
		!strings.Contains(r.stdout+r.stderr, "Asked the managers of cluster core for a backup before the managers change") {
		t.Errorf("update-core replacing the managers: no backup asked for first (%v):\n%s", msg, r)
	}
}
