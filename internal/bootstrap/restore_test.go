package bootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// A live swarm of three managers restored from its newest backup, as
// clusterctl restore asks: the service created after the backup is gone,
// the objects of the backup are there with the same ids, the three
// managers are reachable managers of one swarm again, and the agent runs
// the backup's service in it.
func TestLiveSwarmRestored(t *testing.T) {
	scenario(t)
	tc := deployManagers(t, "restore", 3)
	g := tc.deployGroup(t, "g", 1, spec.Labels{"role": "worker"})
	fast := []string{"CLUSTERCTL_BACKUP_INTERVAL=20", "CLUSTERCTL_BACKUP_SPACING=5", "CLUSTERCTL_BACKUP_ORDER_WAIT=30", "CLUSTERCTL_IDLE=2"}
	managers := tc.bootManagers(t, fast...)
	agent := g.bootAgent(t, 0)
	g.readyAgent(t, agent)
	m := managers[0]
	dockerOn(t, m, "network", "create", "--driver", "overlay", "--attachable", "backend")
	dockerOn(t, m, "secret", "create", "token", "/etc/hostname")
	dockerOn(t, m, "config", "create", "settings", "/etc/hostname")
	createService(t, m, "web", 1, "--constraint", "engine.labels.clusterctl.group==g")
	before := objectIDs(t, m)
	swarmID := dockerOn(t, m, "info", "--format", "{{.Swarm.Cluster.ID}}")
	created := time.Now()
	var newest string
	eventually(t, 3*time.Minute, "a backup newer than the objects", func() (bool, string) {
		keys := tc.backups(t)
		if len(keys) == 0 {
			return false, "no backup"
		}
		newest = keys[len(keys)-1]
		out, err := tc.c.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(newest)})
		if err != nil {
			return false, err.Error()
		}
		taken, _ := strconv.ParseInt(out.Metadata["taken"], 10, 64)
		return taken > created.Unix()+1 && out.Metadata["managers"] == "3", fmt.Sprintf("%s: %v", newest, out.Metadata)
	})
	createService(t, m, "late", 1, "--constraint", "engine.labels.clusterctl.group==g")

	id := wire.NewRequestID()
	body, err := wire.NewRestoreRequest(wire.RestoreDetail{RequestID: id, Cluster: tc.name, Backup: newest}, time.Now(), "arn:aws:iam::"+account+":user/ops", region)
	if err != nil {
		t.Fatal(err)
	}
	asked := time.Now()
	tc.putNotice(t, body)
	eventually(t, 6*time.Minute, "the snapshot says the swarm is restored", func() (bool, string) {
		var st struct{ Restore *wire.RestoreStatus }
		b, err := tc.tryObject(names.StatusKey)
		if err != nil || json.Unmarshal(b, &st) != nil || st.Restore == nil {
			return false, fmt.Sprintf("status %.300s", b)
		}
		if st.Restore.RequestID == id && (st.Restore.Outcome == wire.RestoreRefused || st.Restore.Outcome == wire.RestoreFailed) {
			t.Fatalf("restore %+v", st.Restore)
		}
		return st.Restore.RequestID == id && st.Restore.Outcome == wire.RestoreRestored, fmt.Sprintf("%+v", st.Restore)
	})
	t.Logf("measured: restored %s after the request", time.Since(asked).Round(time.Second))
	eventually(t, 4*time.Minute, "three reachable managers, one leader", func() (bool, string) {
		q, err := tryQuorum(managers)
		return err == nil && q.managers == 3 && q.reachable == 3 && q.leaders == 1, fmt.Sprintf("%+v %v", q, err)
	})
	t.Logf("measured: three reachable managers %s after the request", time.Since(asked).Round(time.Second))
	leader := leaderOf(t, managers)
	if after := objectIDs(t, leader); after != before {
		t.Errorf("after the restore:\n%s\nwant\n%s", after, before)
	}
	if out := dockerOn(t, leader, "service", "ls", "--format", "{{.Name}}"); strings.Contains(out, "late") {
		t.Errorf("the service created after the backup is still there:\n%s", out)
	}
	for _, n := range managers {
		if got := dockerOn(t, n, "info", "--format", "{{.Swarm.Cluster.ID}} {{.Swarm.ControlAvailable}}"); got != swarmID+" true" {
			t.Errorf("%s: swarm and manager %q, want %q", n.Spec.Name, got, swarmID+" true")
		}
	}
	// Every manager left the swarm as it was: the leader last, once the
	// others had; the one that took the backup restored it.
	restorers := 0
	for _, n := range managers {
		logs := n.Logs()
		if !strings.Contains(logs, "leaving the swarm, to join the restored one") && !strings.Contains(logs, "the only manager of the swarm: leaving it for manager") {
			t.Errorf("%s did not leave the swarm as it was:\n%s", n.Spec.Name, logs)
		}
		if strings.Contains(logs, "restoring the backup "+newest+" it took") {
			restorers++
		}
		if strings.Contains(logs, "the swarm knows manager") {
			t.Errorf("%s reaches a manager at another address than its own:\n%s", n.Spec.Name, logs)
		}
	}
	if restorers != 1 {
		t.Errorf("%d managers restored the backup", restorers)
	}
	eventually(t, 3*time.Minute, "the agent Ready in the restored swarm, running the service", func() (bool, string) {
		id := dockerOn(t, agent, "info", "--format", "{{.Swarm.NodeID}}")
		out, err := leader.Docker(context.Background(), "node", "inspect", id, "--format", "{{.Status.State}}")
		tasks, terr := tryServiceTasks(leader, "web")
		running := 0
		for _, c := range runningOn(tasks) {
			running += c
		}
		return err == nil && terr == nil && strings.TrimSpace(out) == "ready" && running == 1, fmt.Sprint(id, out, err, terr, running)
	})
}
