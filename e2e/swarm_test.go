package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
)

// The managers' leader publishes the swarm's status to the cluster bucket;
// moto runs no managers, so these tests play the leader: they put the
// snapshot a leader would publish (the JSON of Manager.Snapshot in
// internal/node, wire.Snapshot) and run the real binary's list-nodes,
// list-groups and describe.

// instanceOf is one of a cluster's instances in moto.
type instanceOf struct{ id, ip, group, itype string }

// clusterInstances lists a cluster's live instances by group, each group's
// sorted by id.
func clusterInstances(t *testing.T, c clients, cluster string) map[string][]instanceOf {
	t.Helper()
	out, err := c.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + names.TagCluster), Values: []string{cluster}},
		{Name: aws.String("instance-state-name"), Values: []string{"running"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string][]instanceOf{}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			in := instanceOf{id: aws.ToString(i.InstanceId), ip: aws.ToString(i.PrivateIpAddress), itype: string(i.InstanceType)}
			for _, tg := range i.Tags {
				if aws.ToString(tg.Key) == names.TagGroup {
					in.group = aws.ToString(tg.Value)
				}
			}
			by[in.group] = append(by[in.group], in)
		}
	}
	for _, l := range by {
		sort.Slice(l, func(i, j int) bool { return l[i].id < l[j].id })
	}
	return by
}

// joined is the swarm node of an instance as the leader sees it: Ready and
// active; a manager's status is given.
func joined(in instanceOf, n int, managerStatus string) query.SwarmNode {
	role := "worker"
	if in.group == names.GroupControl {
		role = "manager"
	}
	return query.SwarmNode{
		NodeID: fmt.Sprintf("node%02d", n), InstanceID: in.id, Hostname: "ip-" + strings.ReplaceAll(in.ip, ".", "-"), Address: in.ip,
		Role: role, State: "ready", Availability: "active", ManagerStatus: managerStatus,
		EngineLabels: map[string]string{
			names.EngineLabelGroup: in.group, names.EngineLabelInstanceID: in.id, names.EngineLabelInstanceType: in.itype,
		},
		EngineVersion: "26.1.5", RunningTasks: n % 3,
	}
}

// everyoneReady is the swarm in which every instance of the cluster is a
// Ready node: the first manager leads.
func everyoneReady(insts map[string][]instanceOf) []query.SwarmNode {
	var out []query.SwarmNode
	for _, g := range sortedKeys(insts) {
		for _, in := range insts[g] {
			status := ""
			if g == names.GroupControl {
				status = "reachable"
				if len(out) == 0 {
					status = "leader"
				}
			}
			out = append(out, joined(in, len(out), status))
		}
	}
	return out
}

func sortedKeys(m map[string][]instanceOf) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// The managers first, so that the first of them leads.
	sort.Slice(keys, func(i, j int) bool {
		if (keys[i] == names.GroupControl) != (keys[j] == names.GroupControl) {
			return keys[i] == names.GroupControl
		}
		return keys[i] < keys[j]
	})
	return keys
}

// publish puts a status snapshot into the bucket, as the leader does.
func publish(t *testing.T, c clients, bucket, cluster string, at time.Time, lastBackup *time.Time, nodes []query.SwarmNode) {
	t.Helper()
	var backup any
	if lastBackup != nil {
		backup = lastBackup.UTC().Format(time.RFC3339)
	}
	body, err := json.Marshal(map[string]any{
		"version": 1, "cluster": cluster, "time": at.UTC().Format(time.RFC3339), "publisher": nodes[0].InstanceID,
		"caDigest": strings.Repeat("ab", 32), "lastBackup": backup, "nodes": nodes,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.s3.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(names.StatusKey), Body: strings.NewReader(string(body)), ContentType: aws.String("application/json"),
	}); err != nil {
		t.Fatal(err)
	}
}

// tableRows reads a table the way a person does: each cell under its
// header, by position (cells may hold spaces: "ready (leader)"; headers
// do not).
func tableRows(t *testing.T, out string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := strings.Fields(lines[0])
	starts := []int{0}
	for _, m := range regexp.MustCompile(` {2,}\S`).FindAllStringIndex(lines[0], -1) {
		starts = append(starts, m[1]-1)
	}
	if len(starts) != len(header) {
		t.Fatalf("header %q", lines[0])
	}
	var rows []map[string]string
	for _, l := range lines[1:] {
		row := map[string]string{}
		for i, start := range starts {
			end := len(l)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(l))
			}
			if start < end {
				row[header[i]] = strings.TrimSpace(l[start:end])
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// column maps a table's INSTANCE (or GROUP when keyed so) to one column.
func column(t *testing.T, out, key, name string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, r := range tableRows(t, out) {
		m[r[key]] = r[name]
	}
	return m
}

// listed is a node as list-nodes -o json prints it, with its swarm.
type listed struct {
	Group      string     `json:"group"`
	InstanceID string     `json:"instanceId"`
	State      string     `json:"state"`
	LaunchTime *time.Time `json:"launchTime"`
	SwarmOnly  bool       `json:"swarmOnly"`
	Swarm      *struct {
		Status        string    `json:"status"`
		NodeID        string    `json:"nodeId"`
		State         string    `json:"state"`
		Availability  string    `json:"availability"`
		Role          string    `json:"role"`
		ManagerStatus string    `json:"managerStatus"`
		RunningTasks  int       `json:"runningTasks"`
		EngineVersion string    `json:"engineVersion"`
		SnapshotTime  time.Time `json:"snapshotTime"`
		Stale         bool      `json:"stale"`
	} `json:"swarm"`
}

type readyGroup struct {
	Group string `json:"group"`
	Ready *int   `json:"ready"`
}

type swarmDescription struct {
	Health   string `json:"health"`
	Problems []struct {
		Reason, Repair string
		Broken         bool
	} `json:"problems"`
	Groups []struct {
		Group    string `json:"group"`
		Health   string `json:"health"`
		Ready    *int   `json:"ready"`
		Problems []struct{ Reason, Repair string }
	} `json:"groups"`
	Swarm *struct {
		SnapshotTime time.Time `json:"snapshotTime"`
		AgeSeconds   float64   `json:"ageSeconds"`
		Stale        bool      `json:"stale"`
		Leader       string    `json:"leader"`
		Managers     []struct {
			InstanceID, Address, Status string
		} `json:"managers"`
		Quorum struct {
			Managers, Reachable, Needed, Tolerates int
			Lost                                   bool
		} `json:"quorum"`
		Backup struct {
			Needed, Overdue bool
			Last            *time.Time
			AgeSeconds      *float64
		} `json:"backup"`
	} `json:"swarm"`
}

func (d swarmDescription) problem(s string) bool {
	for _, p := range d.Problems {
		if strings.Contains(p.Reason, s) {
			return true
		}
	}
	return false
}

func readyOf(gs []readyGroup) map[string]string {
	m := map[string]string{}
	for _, g := range gs {
		m[g.Group] = "null"
		if g.Ready != nil {
			m[g.Group] = fmt.Sprint(*g.Ready)
		}
	}
	return m
}

// list-nodes, list-groups and describe show what the swarm's status
// snapshot says: nothing ready without one, each node's swarm state and the
// managers' quorum with a fresh one, and "stale", never ready, with an old
// one; a snapshot of another cluster is refused. The snapshot costs one S3
// read.
func TestInventoryShowsTheSwarm(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "--managers", "3", "-q")
	must(t, "add-agents", "-n", "web", "-t", "t3.small", "-j", "core", "-c", "3", "-q")
	must(t, "add-agents", "-n", "batch", "-t", "t3.small", "-j", "core", "-c", "1", "-q")
	bucket := outputs(describeStack(t, c, "core"))["BucketName"]
	where := "s3://" + bucket + "/" + names.StatusKey
	insts := clusterInstances(t, c, "core")
	if len(insts["control"]) != 3 || len(insts["web"]) != 3 || len(insts["batch"]) != 1 {
		t.Fatalf("instances %v", insts)
	}
	m0, m1, m2 := insts["control"][0], insts["control"][1], insts["control"][2]
	w0, w1, w2 := insts["web"][0], insts["web"][1], insts["web"][2]
	b0 := insts["batch"][0]

	// No snapshot yet: the swarm is unknown everywhere, and the cluster is
	// not healthy.
	r := must(t, "list-nodes", "-j", "core")
	for id, s := range column(t, r.stdout, "INSTANCE", "SWARM") {
		if s != "?" {
			t.Errorf("%s: SWARM %q without a snapshot", id, s)
		}
	}
	if want := "Note: cluster core: the swarm's state is unknown: no status snapshot in " + where + " yet"; !strings.Contains(r.stderr, want) {
		t.Errorf("list-nodes does not say why the swarm is unknown:\n%s", r)
	}
	for _, n := range decode[[]listed](t, must(t, "list-nodes", "-j", "core", "-o", "json")) {
		if n.Swarm != nil || n.SwarmOnly {
			t.Errorf("%s: swarm %+v without a snapshot", n.InstanceID, n.Swarm)
		}
	}
	if got := readyOf(decode[[]readyGroup](t, must(t, "list-groups", "-j", "core", "-o", "json"))); got["web"] != "null" || got["batch"] != "null" {
		t.Errorf("list-groups ready without a snapshot: %v", got)
	}
	if got := column(t, must(t, "list-groups", "-j", "core").stdout, "GROUP", "READY"); got["web"] != "?" || got["batch"] != "?" {
		t.Errorf("list-groups READY without a snapshot: %v", got)
	}
	d := decode[swarmDescription](t, must(t, "describe", "core", "-o", "json"))
	if d.Health == "healthy" || d.Swarm != nil || !d.problem("the swarm's state is unknown: no status snapshot in "+where+" yet") ||
		!strings.Contains(d.Problems[len(d.Problems)-1].Repair, "`clusterctl list-nodes -j core -n control`") {
		t.Errorf("describe without a snapshot: %+v", d)
	}

	// The leader sees: managers m0 leading, m1 reachable, m2 unreachable;
	// web w0 ready, w1 drained, w2 down, and a node whose instance is gone;
	// batch's instance never joined.
	gone := query.SwarmNode{NodeID: "node99", InstanceID: "i-0123456789abcdef0", Hostname: "ip-gone", Address: "172.31.9.9", Role: "worker", State: "down", Availability: "active",
		EngineLabels: map[string]string{names.EngineLabelGroup: "web", names.EngineLabelInstanceID: "i-0123456789abcdef0", names.EngineLabelInstanceType: "t3.small", "tier": "front"}}
	seen := func() []query.SwarmNode {
		nodes := []query.SwarmNode{joined(m0, 0, "leader"), joined(m1, 1, "reachable"), joined(m2, 2, "unreachable"), joined(w0, 3, ""), joined(w1, 4, ""), joined(w2, 5, ""), gone}
		nodes[2].State = "down"
		nodes[4].Availability = "drain"
		nodes[5].State = "down"
		return nodes
	}
	publish(t, c, bucket, "core", time.Now(), nil, seen())
	r = must(t, "list-nodes", "-j", "core")
	want := map[string]string{
		m0.id: "ready (leader)", m1.id: "ready (reachable)", m2.id: "down (unreachable)",
		w0.id: "ready", w1.id: "drain", w2.id: "down", b0.id: "not joined", gone.InstanceID: "down (no instance)",
	}
	rows := tableRows(t, r.stdout)
	if len(rows) != len(want) {
		t.Errorf("list-nodes lists %d nodes, want %d:\n%s", len(rows), len(want), r.stdout)
	}
	for _, row := range rows {
		if row["SWARM"] != want[row["INSTANCE"]] {
			t.Errorf("%s: SWARM %q, want %q", row["INSTANCE"], row["SWARM"], want[row["INSTANCE"]])
		}
		if row["INSTANCE"] == gone.InstanceID && (row["GROUP"] != "web" || row["STATE"] != "-" || row["PRIVATE-IP"] != "172.31.9.9" || row["AGE"] != "-") {
			t.Errorf("the swarm node without an instance: %v", row)
		}
		if strings.HasPrefix(row["INSTANCE"], "i-") && row["INSTANCE"] != gone.InstanceID && row["STATE"] != "running" {
			t.Errorf("%v", row)
		}
	}
	if strings.Contains(r.stderr, "swarm") {
		t.Errorf("list-nodes with a fresh snapshot says more:\n%s", r.stderr)
	}
	nodes := decode[[]listed](t, must(t, "list-nodes", "-j", "core", "-o", "json"))
	for _, n := range nodes {
		switch {
		case n.Swarm == nil:
			t.Errorf("%s: no swarm object with a snapshot", n.InstanceID)
		case n.InstanceID == w1.id:
			if n.Swarm.Status != "drain" || n.Swarm.State != "ready" || n.Swarm.Availability != "drain" || n.Swarm.Role != "worker" || n.Swarm.NodeID != "node04" ||
				n.Swarm.RunningTasks != 1 || n.Swarm.EngineVersion != "26.1.5" || n.Swarm.Stale || n.SwarmOnly || time.Since(n.Swarm.SnapshotTime) > time.Hour {
				t.Errorf("drained node: %+v", *n.Swarm)
			}
		case n.InstanceID == m0.id:
			if n.Group != "control" || n.Swarm.ManagerStatus != "leader" || n.Swarm.Role != "manager" {
				t.Errorf("leader: %+v", *n.Swarm)
			}
		case n.InstanceID == b0.id:
			if n.Swarm.Status != "not joined" || n.Swarm.NodeID != "" || n.SwarmOnly {
				t.Errorf("node that never joined: %+v", *n.Swarm)
			}
		case n.InstanceID == gone.InstanceID:
			if !n.SwarmOnly || n.State != "" || n.LaunchTime != nil || n.Group != "web" || n.Swarm.Status != "down (no instance)" {
				t.Errorf("swarm node without an instance: %+v %+v", n, *n.Swarm)
			}
		}
	}
	if r := must(t, "list-nodes", "-j", "core", "-n", "web", "--query", `map(select(.swarmOnly)) | .[].instanceId`); strings.TrimSpace(r.stdout) != gone.InstanceID {
		t.Errorf("list-nodes -n web does not list the swarm's node without an instance:\n%s", r)
	}
	if got := column(t, must(t, "list-nodes", "-j", "core", "-n", "control").stdout, "INSTANCE", "SWARM"); len(got) != 3 || got[m0.id] != "ready (leader)" || got[m2.id] != "down (unreachable)" {
		t.Errorf("list-nodes -n control: %v", got)
	}
	if r := must(t, "list-nodes", "-j", "core", "-o", "yaml", "--query", `.[] | select(.instanceId == "`+w2.id+`") | .swarm.status`); strings.TrimSpace(r.stdout) != "down" {
		t.Errorf("list-nodes -o yaml --query: %q", r.stdout)
	}
	// The floor: the EC2 page, and one S3 read from the bucket the
	// instances name (no CloudFormation call to find it).
	if r := must(t, "list-nodes", "-j", "core", "-v"); !strings.Contains(r.stderr, "aws calls: 2 (EC2.DescribeInstances=1 S3.GetObject=1)") {
		t.Errorf("list-nodes -v:\n%s", r.stderr)
	}
	if r := must(t, "list-nodes", "-v", "-o", "wide"); !strings.Contains(r.stderr, "aws calls: 2 (EC2.DescribeInstances=1 S3.GetObject=1)") || !strings.Contains(r.stdout, "tier=front") {
		t.Errorf("list-nodes of every cluster:\n%s", r)
	}

	if got := readyOf(decode[[]readyGroup](t, must(t, "list-groups", "-j", "core", "-o", "json"))); got["web"] != "1" || got["batch"] != "0" {
		t.Errorf("list-groups ready: %v", got)
	}
	r = must(t, "list-groups", "-j", "core", "-v")
	if got := column(t, r.stdout, "GROUP", "READY"); got["web"] != "1" || got["batch"] != "0" {
		t.Errorf("list-groups READY: %v", got)
	}
	if !strings.Contains(r.stderr, "aws calls: 5 (Auto Scaling.DescribeAutoScalingGroups=1 CloudFormation.DescribeStacks=1 CloudFormation.ListStackResources=1 S3.GetBucketTagging=1 S3.GetObject=1)") {
		t.Errorf("list-groups -v:\n%s", r.stderr)
	}

	d = decode[swarmDescription](t, must(t, "describe", "core", "-o", "json"))
	if s := d.Swarm; s == nil || s.Stale || s.Leader != m0.id || len(s.Managers) != 3 || s.Quorum.Managers != 3 || s.Quorum.Reachable != 2 || s.Quorum.Tolerates != 0 || s.Quorum.Lost ||
		!s.Backup.Needed || !s.Backup.Overdue || s.AgeSeconds > 60 {
		t.Errorf("describe swarm: %+v", d.Swarm)
	}
	if d.Health != "degraded" || !d.problem("1 of 3 managers unreachable: the swarm tolerates 0 failures more") {
		t.Errorf("describe with a manager unreachable: %+v", d)
	}
	for _, g := range d.Groups {
		want := map[string]string{"web": "2 of 3 nodes in service are not Ready in the swarm", "batch": "1 of 1 nodes in service is not Ready in the swarm"}[g.Group]
		if g.Health != "degraded" || len(g.Problems) != 1 || g.Problems[0].Reason != want || !strings.Contains(g.Problems[0].Repair, "clusterctl list-nodes -j core -n "+g.Group) {
			t.Errorf("group %s: %+v", g.Group, g)
		}
	}
	text := must(t, "describe", "core").stdout
	for _, want := range []string{
		"Status:   CREATE_COMPLETE (degraded)", "Quorum:   2/3 reachable, tolerates 0 failures", "Leader:   " + m0.id,
		"Backup:   none yet", "Managers:\nINSTANCE", m2.id + "   " + m2.ip + "   unreachable   down",
		"Problem: 1 of 3 managers unreachable", "RUNNING   READY   JOINED",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("describe does not say %q:\n%s", want, text)
		}
	}
	if !regexp.MustCompile(`(?m)^Swarm:    snapshot \d+s old$`).MatchString(text) {
		t.Errorf("describe does not give the snapshot's age:\n%s", text)
	}

	// Every node Ready, a recent backup: healthy again.
	publish(t, c, bucket, "core", time.Now(), aws.Time(time.Now().Add(-time.Minute)), everyoneReady(insts))
	d = decode[swarmDescription](t, must(t, "describe", "core", "-o", "json"))
	if d.Health != "healthy" || len(d.Problems) != 0 || d.Swarm.Quorum.Tolerates != 1 {
		t.Errorf("describe of a whole swarm: %+v", d)
	}
	for _, g := range d.Groups {
		if g.Health != "healthy" || g.Ready == nil || *g.Ready != len(insts[g.Group]) {
			t.Errorf("group %s of a whole swarm: %+v", g.Group, g)
		}
	}
	if !strings.Contains(must(t, "describe", "core").stdout, "Quorum:   3/3 reachable, tolerates 1 failure\n") {
		t.Error("describe does not give a whole quorum")
	}

	// The same snapshot ten minutes old: stale, never ready, never healthy.
	publish(t, c, bucket, "core", time.Now().Add(-10*time.Minute), nil, everyoneReady(insts))
	r = must(t, "list-nodes", "-j", "core")
	for id, s := range column(t, r.stdout, "INSTANCE", "SWARM") {
		if s != "stale" {
			t.Errorf("%s: SWARM %q with a stale snapshot", id, s)
		}
	}
	if !strings.Contains(r.stderr, "Note: cluster core: the swarm's status snapshot "+where+" is 10m") || !strings.Contains(r.stderr, "old (stale after 2m)") {
		t.Errorf("list-nodes does not say the snapshot is stale:\n%s", r.stderr)
	}
	for _, n := range decode[[]listed](t, must(t, "list-nodes", "-j", "core", "-o", "json")) {
		if n.Swarm == nil || !n.Swarm.Stale || n.Swarm.Status != "stale" || n.Swarm.State != "ready" {
			t.Errorf("%s: swarm %+v with a stale snapshot", n.InstanceID, n.Swarm)
		}
	}
	if got := readyOf(decode[[]readyGroup](t, must(t, "list-groups", "-j", "core", "-o", "json"))); got["web"] != "null" || got["batch"] != "null" {
		t.Errorf("list-groups ready with a stale snapshot: %v", got)
	}
	d = decode[swarmDescription](t, must(t, "describe", "core", "-o", "json"))
	if d.Health == "healthy" || d.Swarm == nil || !d.Swarm.Stale || d.Swarm.AgeSeconds < 600 || !d.problem("old (stale after 2m): no leader has published it since") {
		t.Errorf("describe with a stale snapshot: %+v", d)
	}
	for _, g := range d.Groups {
		if g.Ready != nil {
			t.Errorf("group %s ready %d by a stale snapshot", g.Group, *g.Ready)
		}
	}
	if text := must(t, "describe", "core").stdout; !strings.Contains(text, "STALE (over 2m)") || strings.Contains(text, "(healthy)") {
		t.Errorf("describe with a stale snapshot:\n%s", text)
	}

	// Another cluster's snapshot in this bucket: refused.
	publish(t, c, bucket, "prod", time.Now(), nil, everyoneReady(insts))
	r = must(t, "list-nodes", "-j", "core")
	refusal := `refused: untrusted swarm status: ` + where + ` is the status of cluster "prod", not of "core"`
	if !strings.Contains(r.stderr, refusal) {
		t.Errorf("list-nodes does not refuse another cluster's snapshot:\n%s", r)
	}
	for id, s := range column(t, r.stdout, "INSTANCE", "SWARM") {
		if s != "?" {
			t.Errorf("%s: SWARM %q from another cluster's snapshot", id, s)
		}
	}
	if d := decode[swarmDescription](t, must(t, "describe", "core", "-o", "json")); d.Health == "healthy" || d.Swarm != nil || !d.problem(refusal) {
		t.Errorf("describe with another cluster's snapshot: %+v", d)
	}
}

// A lone manager backs the swarm state up; describe gives the last
// backup's age, and a missing or overdue backup is a problem.
func TestInventoryLoneManagerBackup(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "solo", "-q")
	bucket := outputs(describeStack(t, c, "solo"))["BucketName"]
	nodes := everyoneReady(clusterInstances(t, c, "solo"))
	if len(nodes) != 1 {
		t.Fatalf("nodes %+v", nodes)
	}
	for _, tt := range []struct {
		name    string
		backup  *time.Time
		health  string
		text    string
		problem string
	}{
		{"no backup yet", nil, "degraded", "Backup:   none yet\n", "no backup of the swarm state yet: were every manager lost, the services, secrets, configs and networks since would be lost"},
		{"recent backup", aws.Time(time.Now().Add(-5 * time.Minute)), "healthy", "Backup:   5m", ""},
		{"overdue backup", aws.Time(time.Now().Add(-2 * time.Hour)), "degraded", "Backup:   2h", "the last backup of the swarm state is 2h"},
	} {
		publish(t, c, bucket, "solo", time.Now(), tt.backup, nodes)
		d := decode[swarmDescription](t, must(t, "describe", "solo", "-o", "json"))
		if d.Health != tt.health || d.Swarm == nil || !d.Swarm.Backup.Needed || d.Swarm.Quorum.Managers != 1 || d.Swarm.Quorum.Tolerates != 0 {
			t.Errorf("%s: %+v", tt.name, d)
		}
		if (tt.backup == nil) != (d.Swarm.Backup.Last == nil) || tt.backup != nil && *d.Swarm.Backup.AgeSeconds < 299 {
			t.Errorf("%s: backup %+v", tt.name, d.Swarm.Backup)
		}
		if tt.problem != "" && (!d.problem(tt.problem) || !strings.Contains(d.Problems[0].Repair, "journalctl -u clusterctl-housekeeping")) {
			t.Errorf("%s: problems %+v", tt.name, d.Problems)
		}
		if text := must(t, "describe", "solo").stdout; !strings.Contains(text, tt.text) || !strings.Contains(text, "Quorum:   1/1 reachable, tolerates 0 failures") {
			t.Errorf("%s: describe does not say %q:\n%s", tt.name, tt.text, text)
		}
	}
}
