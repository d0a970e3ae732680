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

// putRestoreSnapshot publishes a status snapshot of cluster core with
// services, backups and the last restore's outcome (nil: none), as its
// leader does.
func putRestoreSnapshot(t *testing.T, c clients, bucket string, restore map[string]any, backups ...map[string]any) {
	t.Helper()
	snap := map[string]any{
		"version": 1, "cluster": "core", "time": time.Now().UTC().Format(time.RFC3339), "publisher": "i-0000000000000000a",
		"caDigest": strings.Repeat("ab", 32), "lastBackup": nil, "nodes": []any{}, "backups": backups,
		"services": []any{map[string]any{"ID": "s1", "Name": "web"}, map[string]any{"ID": "s2", "Name": "api"}},
	}
	if restore != nil {
		snap["restore"] = restore
	}
	body, _ := json.Marshal(snap)
	if _, err := c.s3.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(names.StatusKey), Body: bytes.NewReader(body), ContentType: aws.String("application/json"),
	}); err != nil {
		t.Fatal(err)
	}
}

func backupOfCluster(at time.Time, by, cluster string) map[string]any {
	b := backupOf(at, 2621440, by)
	b["cluster"] = cluster
	return b
}

// restore plans from the backup's metadata, refuses bad input (exit 2,
// nothing sent), asks on a terminal, needs --yes off one, and puts the
// request on the core's queue; --wait reports the managers' outcome.
func TestRestoreCommand(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t)
	q := sqsClient(t)
	queue := stackResource(t, c, "core", names.ResourceLifecycleQueue)
	for _, args := range [][]string{
		{"restore", "-j", "core"},
		{"restore", "--from", "latest"},
		{"restore", "-j", "core", "--from", "yesterday"},
		{"restore", "-j", "core", "--from", "2026-13-01T00:00:00Z"},
		{"restore", "-j", "core", "--from", "2026-11-28"},
		{"restore", "-j", "9core", "--from", "latest"},
		{"restore", "-j", "core", "--from", "latest", "--from-cluster", "9prod"},
	} {
		if r := clusterctl(t, args...); r.code != 2 || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: want one line, exit 2\n%s", args, r)
		}
	}
	if r := clusterctl(t, "restore", "-j", "core", "--from", "latest", "--yes"); r.code != 1 || !strings.Contains(r.stderr, "no status snapshot yet") {
		t.Errorf("restore without a snapshot:\n%s", r)
	}
	queueEmpty(t, q, queue, "after the refusals")

	older, newer := time.Now().Add(-50*time.Minute).Truncate(time.Second), time.Now().Add(-5*time.Minute).Truncate(time.Second)
	prod := time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	backups := []map[string]any{backupOfCluster(older, "i-0cb7004dc1fb7b68f", "core"), backupOfCluster(prod, "i-0aaaaaaaaaaaaaaa", "prod"), backupOfCluster(newer, "i-0228b24300dc036a7", "core")}
	putRestoreSnapshot(t, c, bucket, nil, backups...)

	// Off a terminal without --yes: the plan, then the refusal.
	r := clusterctl(t, "restore", "-j", "core", "--from", "latest")
	if r.code != 2 || !strings.Contains(r.stderr, "pass --yes when not on a terminal") ||
		!strings.Contains(r.stderr, "Restore of the swarm of cluster core from the backup of "+newer.UTC().Format(time.RFC3339)+" (5m") ||
		!strings.Contains(r.stderr, "Lost: every change to the swarm of the last 5m") || !strings.Contains(r.stderr, "(since "+newer.UTC().Format(time.RFC3339)+")") ||
		!strings.Contains(r.stderr, "services now: web, api") || !strings.Contains(r.stderr, "taken by  i-0228b24300dc036a7") ||
		!strings.Contains(r.stderr, "swarm     q8v3k0f6y2n1c7x4m5b9z0a1s") || !strings.Contains(r.stderr, "managers  3 then, 0 now") {
		t.Errorf("restore off a terminal without --yes:\n%s", r)
	}
	// No backup at that time; another cluster's backup, not named.
	for _, c := range []struct{ from, fromCluster, want string }{
		{newer.Add(time.Second).UTC().Format(time.RFC3339), "", "has no backup of cluster core taken at"},
		{prod.UTC().Format(time.RFC3339), "", "restoring it needs --from-cluster prod"},
		{newer.UTC().Format(time.RFC3339), "prod", "taken by the managers of cluster core, not prod"},
	} {
		args := []string{"restore", "-j", "core", "--from", c.from, "--yes"}
		if c.fromCluster != "" {
			args = append(args, "--from-cluster", c.fromCluster)
		}
		if r := clusterctl(t, args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: want exit 2 and %q\n%s", args, c.want, r)
		}
	}
	queueEmpty(t, q, queue, "after the refusals of backups")

	// On a terminal: the plan, the question; declined, nothing is sent.
	term := startTerminal(t, envOf(t), binary, "restore", "-j", "core", "--from", "latest")
	term.expect("[y/N]: ")
	if !strings.Contains(term.screen(), "Really restore the swarm of cluster core from its backup of "+newer.UTC().Format(time.RFC3339)+" (every change since is undone)?") ||
		!strings.Contains(term.screen(), "Lost: every change to the swarm of the last 5m") {
		t.Errorf("the terminal:\n%s", term.screen())
	}
	term.typeText("n\n")
	if code := term.exit(); code != 1 {
		t.Errorf("declined: exit %d, want 1\n%s", code, term.screen())
	}
	queueEmpty(t, q, queue, "after declining")

	// By time (as its key says it), with --yes: the request names the backup.
	r = must(t, "restore", "-j", "core", "--from", older.UTC().Format(names.BackupTimeFormat), "--yes")
	if !strings.Contains(r.stdout, "Asked the managers of cluster core to restore the swarm from its backup of "+older.UTC().Format(time.RFC3339)) ||
		strings.Count(r.stdout+r.stderr, "Asked the managers") != 1 {
		t.Errorf("restore --yes, saying it once:\n%s", r)
	}
	detail := requestDetail(t, receive(t, q, queue))
	if detail["cluster"] != "core" || detail["backup"] != names.BackupKey(older, "i-0cb7004dc1fb7b68f") || detail["from-cluster"] != "" ||
		!strings.HasPrefix(detail["requested-by"], "arn:aws:") {
		t.Errorf("request %v", detail)
	}
	// Another cluster's backup, named: the plan says the tokens are rotated.
	r = must(t, "restore", "-j", "core", "--from", prod.UTC().Format(time.RFC3339), "--from-cluster", "prod", "--yes")
	if !strings.Contains(r.stderr, "cluster prod: the swarm's join tokens are rotated after the restore") {
		t.Errorf("restore --from-cluster:\n%s", r)
	}
	if d := requestDetail(t, receive(t, q, queue)); d["from-cluster"] != "prod" || d["backup"] != names.BackupKey(prod, "i-0aaaaaaaaaaaaaaa") {
		t.Errorf("request %v", d)
	}

	// --wait, with the test as the leader: restored, then refused.
	for _, outcome := range []string{"restored", "refused"} {
		b := startClusterctl(t, "restore", "-j", "core", "--from", "latest", "--yes", "--wait", "-o", "json", "--timeout", "5m")
		var m *sqstypes.Message
		b.until(t, "the request reaches the queue", func() bool {
			m = receive(t, q, queue)
			return m != nil
		})
		id := requestDetail(t, m)["request-id"]
		putRestoreSnapshot(t, c, bucket, map[string]any{"requestId": id, "backup": names.BackupKey(newer, "i-0228b24300dc036a7"), "outcome": "restoring", "time": time.Now().UTC()}, backups...)
		time.Sleep(3 * time.Second)
		if b.exited() {
			t.Fatalf("restore --wait ended while restoring:\n%s", b.res)
		}
		putRestoreSnapshot(t, c, bucket, map[string]any{"requestId": id, "backup": names.BackupKey(newer, "i-0228b24300dc036a7"), "outcome": outcome, "reason": "the manager x is unreachable", "time": time.Now().UTC()}, backups...)
		r := b.wait()
		if outcome == "refused" {
			if r.code != 1 || !strings.Contains(r.stderr, "did not restore the swarm (refused): the manager x is unreachable") {
				t.Errorf("restore --wait, refused:\n%s", r)
			}
			continue
		}
		res := decode[struct {
			RequestID, Outcome string
			Backup             struct{ Key string }
			Lost               struct{ Seconds float64 }
		}](t, r)
		if r.code != 0 || res.RequestID != id || res.Outcome != "restored" || res.Backup.Key != names.BackupKey(newer, "i-0228b24300dc036a7") || res.Lost.Seconds < 299 {
			t.Errorf("restore --wait: %+v\n%s", res, r)
		}
	}
	queueEmpty(t, q, queue, "after restore --wait")
}

// requestDetail is the detail of a request put on the queue.
func requestDetail(t *testing.T, msg *sqstypes.Message) map[string]string {
	t.Helper()
	if msg == nil {
		t.Fatal("no request on the queue")
	}
	var req struct {
		Source     string
		DetailType string `json:"detail-type"`
		Detail     map[string]string
	}
	if err := json.Unmarshal([]byte(aws.ToString(msg.Body)), &req); err != nil || req.Source != "clusterctl" || req.DetailType != names.RequestRestore {
		t.Fatalf("request %s: %v", aws.ToString(msg.Body), err)
	}
	return req.Detail
}
