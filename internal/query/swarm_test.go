package query

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// fakeS3 answers GetObject with body, or err, and records the calls.
type fakeS3 struct {
	body  string
	err   error
	calls []*s3.GetObjectInput
}

func (f *fakeS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.calls = append(f.calls, in)
	if f.err != nil {
		return nil, f.err
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(strings.NewReader(f.body))}, nil
}

var snapTime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// snapshotJSON is a snapshot as the leader publishes it, with nodes.
func snapshotJSON(cluster string, version int, nodes ...SwarmNode) string {
	b, err := json.Marshal(map[string]any{
		"version": version, "cluster": cluster, "time": snapTime.Format(time.RFC3339), "publisher": "i-m1",
		"caDigest": "abc", "lastBackup": nil, "nodes": nodes,
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestReadSnapshot(t *testing.T) {
	worker := SwarmNode{NodeID: "n1", InstanceID: "i-1", Role: "worker", State: "ready", Availability: "active", EngineLabels: map[string]string{"clusterctl.group": "web"}}
	for _, tt := range []struct {
		name      string
		s3        *fakeS3
		nodes     int    // when read
		untrusted string // refused, saying this
		err       string // failed otherwise, saying this
	}{
		{name: "fresh", s3: &fakeS3{body: snapshotJSON("core", 1, worker)}, nodes: 1},
		{name: "missing", s3: &fakeS3{err: &s3types.NoSuchKey{}}, nodes: -1},
		{name: "missing, by code", s3: smithyErr("NoSuchKey"), nodes: -1},
		{name: "foreign cluster", s3: &fakeS3{body: snapshotJSON("prod", 1, worker)}, untrusted: `is the status of cluster "prod", not of "core"`},
		{name: "newer format", s3: &fakeS3{body: snapshotJSON("core", 2, worker)}, untrusted: "has format version 2; this clusterctl reads version 1"},
		{name: "not JSON", s3: &fakeS3{body: "<html>"}, untrusted: "is not a status snapshot"},
		{name: "no time", s3: &fakeS3{body: `{"version":1,"cluster":"core","nodes":[]}`}, untrusted: "has no time"},
		{name: "node without id", s3: &fakeS3{body: snapshotJSON("core", 1, SwarmNode{InstanceID: "i-1"})}, untrusted: "lists a node without an id"},
		{name: "too large", s3: &fakeS3{body: strings.Repeat(" ", wire.MaxSnapshot+1)}, untrusted: "larger than 16 MiB"},
		{name: "access denied", s3: smithyErr("AccessDenied"), err: "reading the swarm status s3://b/status/swarm.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := ReadSnapshot(context.Background(), tt.s3, "b", "core")
			if len(tt.s3.calls) != 1 || aws.ToString(tt.s3.calls[0].Bucket) != "b" || aws.ToString(tt.s3.calls[0].Key) != names.StatusKey {
				t.Errorf("calls %+v, want one GetObject of b/%s", tt.s3.calls, names.StatusKey)
			}
			switch {
			case tt.untrusted != "":
				if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), tt.untrusted) || snap != nil {
					t.Errorf("got %v, %v; want refused, %q", snap, err, tt.untrusted)
				}
			case tt.err != "":
				if err == nil || errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("got %v; want an error saying %q", err, tt.err)
				}
			case tt.nodes < 0:
				if snap != nil || err != nil {
					t.Errorf("got %v, %v; want no snapshot and no error", snap, err)
				}
			default:
				if err != nil || snap == nil || len(snap.Nodes) != tt.nodes || !snap.Time.Equal(snapTime) || snap.Publisher != "i-m1" || snap.Nodes[0].EngineLabels["clusterctl.group"] != "web" {
					t.Errorf("got %+v, %v", snap, err)
				}
			}
		})
	}
}

func smithyErr(code string) *fakeS3 {
	return &fakeS3{err: &smithy.GenericAPIError{Code: code, Message: code}}
}

// node is an EC2 node of cluster core.
func ec2Node(id, group string) Node {
	return Node{Cluster: "core", Group: group, InstanceID: id, State: "running", Labels: map[string]string{}}
}

func swarmNode(id, instance, group, state, availability, manager string) SwarmNode {
	role := "worker"
	if manager != "" {
		role = "manager"
	}
	return SwarmNode{NodeID: id, InstanceID: instance, Address: "10.0.0." + id[1:], Role: role, State: state, Availability: availability, ManagerStatus: manager,
		EngineLabels: map[string]string{names.EngineLabelGroup: group, names.EngineLabelInstanceID: instance, names.EngineLabelInstanceType: "t3.small", "tier": "db"}, RunningTasks: 2}
}

func TestWithSwarm(t *testing.T) {
	nodes := func() []Node {
		return []Node{ec2Node("i-m1", "control"), ec2Node("i-m2", "control"), ec2Node("i-m3", "control"),
			ec2Node("i-1", "web"), ec2Node("i-2", "web"), ec2Node("i-3", "web"), ec2Node("i-4", "batch"),
			{Cluster: "other", Group: "web", InstanceID: "i-9", Labels: map[string]string{}}}
	}
	swarm := []SwarmNode{
		// Managers are drained: they run no workloads.
		swarmNode("n1", "i-m1", "control", "ready", "drain", "leader"),
		swarmNode("n2", "i-m2", "control", "ready", "drain", "reachable"),
		swarmNode("n3", "i-m3", "control", "down", "drain", "unreachable"),
		swarmNode("n4", "i-1", "web", "ready", "active", ""),
		swarmNode("n5", "i-2", "web", "ready", "drain", ""),
		swarmNode("n6", "i-3", "web", "down", "active", ""),
		// i-4 has no node: not joined. An instance gone, still in the swarm.
		swarmNode("n7", "i-gone", "web", "down", "active", ""),
		// i-1's earlier node, left behind when it joined again.
		swarmNode("n0", "i-1", "web", "down", "active", ""),
		// A manager whose instance is gone.
		swarmNode("n8", "i-m0", "control", "down", "active", "unreachable"),
		// Another cluster's instance id: never matched across clusters.
		swarmNode("n9", "i-9", "batch", "ready", "active", ""),
	}
	// One row per node, in the order listed: group, instance/swarm node,
	// SWARM.
	fresh := []string{
		"control i-m0/n8 down (unreachable, no instance)", "control i-m1/n1 ready (leader)", "control i-m2/n2 ready (reachable)", "control i-m3/n3 down (unreachable)",
		"batch i-4/ not joined", "batch i-9/n9 ready (no instance)",
		"web i-1/n0 down (duplicate)", "web i-1/n4 ready", "web i-2/n5 drain", "web i-3/n6 down", "web i-gone/n7 down (no instance)",
		"web i-9/ ?", // of cluster other: untouched
	}
	stale := []string{
		"control i-m0/n8 stale (no instance)", "control i-m1/n1 stale", "control i-m2/n2 stale", "control i-m3/n3 stale",
		"batch i-4/ stale", "batch i-9/n9 stale (no instance)",
		"web i-1/n0 stale (duplicate)", "web i-1/n4 stale", "web i-2/n5 stale", "web i-3/n6 stale", "web i-gone/n7 stale (no instance)",
		"web i-9/ ?",
	}
	for _, tt := range []struct {
		name  string
		age   time.Duration
		group string
		snap  bool
		want  []string
	}{
		{name: "fresh", age: 10 * time.Second, snap: true, want: fresh},
		{name: "two minutes is still fresh", age: StaleAfter, snap: true, want: fresh},
		{name: "stale", age: StaleAfter + time.Second, snap: true, want: stale},
		{name: "dated ahead within the margin", age: -time.Minute, snap: true, want: fresh},
		{name: "dated too far ahead", age: -StaleAfter - time.Second, snap: true, want: stale},
		{name: "one group", age: time.Second, snap: true, group: "web",
			want: []string{"web i-1/n0 down (duplicate)", "web i-1/n4 ready", "web i-2/n5 drain", "web i-3/n6 down", "web i-gone/n7 down (no instance)", "web i-9/ ?"}},
		{name: "managers", age: time.Second, snap: true, group: "control",
			want: []string{"control i-m0/n8 down (unreachable, no instance)", "control i-m1/n1 ready (leader)", "control i-m2/n2 ready (reachable)", "control i-m3/n3 down (unreachable)"}},
		{name: "no snapshot", snap: false,
			want: []string{"control i-m1/ ?", "control i-m2/ ?", "control i-m3/ ?", "batch i-4/ ?", "web i-1/ ?", "web i-2/ ?", "web i-3/ ?", "web i-9/ ?"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := Swarm{Cluster: "core", Now: snapTime.Add(tt.age), Where: "s3://b/status/swarm.json", Missing: "none"}
			if tt.snap {
				w.Snapshot = &Snapshot{Version: 1, Cluster: "core", Time: snapTime, Nodes: slices.Clone(swarm)}
			}
			in := nodes()
			if tt.group != "" {
				in = slices.DeleteFunc(in, func(n Node) bool { return n.Group != tt.group })
			}
			sortNodes(in)
			got := WithSwarm(in, w, tt.group)
			var rows []string
			for _, n := range got {
				word := n.Swarm.word()
				rows = append(rows, fmt.Sprintf("%s %s/%s %s", n.Group, n.InstanceID, n.swarmID(), word))
				if n.Swarm != nil && (n.Swarm.Stale != w.Stale() || !n.Swarm.SnapshotTime.Equal(snapTime)) {
					t.Errorf("%s: stale %v at %s, want %v at %s", n.InstanceID, n.Swarm.Stale, n.Swarm.SnapshotTime, w.Stale(), snapTime)
				}
				if only := strings.Contains(word, "no instance") || strings.Contains(word, "duplicate"); n.SwarmOnly != only {
					t.Errorf("%s: swarm only %v, status %q", n.InstanceID, n.SwarmOnly, word)
				}
				if n.SwarmOnly && (n.Labels["tier"] != "db" || len(n.Labels) != 1 || n.InstanceType != "t3.small" || n.PrivateIP == "" || n.LaunchTime != nil || n.State != "") {
					t.Errorf("swarm-only node %+v", n)
				}
			}
			if !slices.Equal(rows, tt.want) {
				t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// READY counts a group's nodes Ready and active in a fresh snapshot; with
// none, or a stale one, it is unknown.
func TestReady(t *testing.T) {
	snap := &Snapshot{Cluster: "core", Time: snapTime, Nodes: []SwarmNode{
		swarmNode("n1", "i-1", "web", "ready", "active", ""),
		swarmNode("n2", "i-2", "web", "ready", "drain", ""),
		swarmNode("n3", "i-3", "web", "down", "active", ""),
		swarmNode("n4", "i-4", "web", "ready", "active", ""),
		swarmNode("n5", "i-5", "batch", "ready", "active", ""),
		swarmNode("n6", "i-m1", "control", "ready", "active", "leader"),
	}}
	for _, tt := range []struct {
		name string
		w    Swarm
		want map[string]string // group → READY
	}{
		{"fresh", Swarm{Cluster: "core", Snapshot: snap, Now: snapTime.Add(time.Minute)}, map[string]string{"web": "2", "batch": "1", "empty": "0"}},
		{"stale", Swarm{Cluster: "core", Snapshot: snap, Now: snapTime.Add(3 * time.Minute)}, map[string]string{"web": "?", "batch": "?", "empty": "?"}},
		{"missing", Swarm{Cluster: "core", Missing: "none yet", Now: snapTime}, map[string]string{"web": "?", "batch": "?", "empty": "?"}},
	} {
		groups := []Group{{Cluster: "core", Group: "batch"}, {Cluster: "core", Group: "empty"}, {Cluster: "core", Group: "web"}, {Cluster: "other", Group: "web"}}
		WithReady(groups, map[string]Swarm{"core": tt.w})
		for _, g := range groups {
			want := tt.want[g.Group]
			if g.Cluster == "other" {
				want = "?" // no snapshot of its cluster
			}
			if got := ReadyText(g.Ready); got != want {
				t.Errorf("%s: %s/%s READY %s, want %s", tt.name, g.Cluster, g.Group, got, want)
			}
		}
		var buf bytes.Buffer
		if err := WriteTable(&buf, GroupsTable(groups, Columns{})); err != nil {
			t.Fatal(err)
		}
		if header := strings.Fields(strings.SplitN(buf.String(), "\n", 2)[0]); !slices.Equal(header[5:7], []string{"DESIRED", "READY"}) {
			t.Errorf("header %v", header)
		}
		out, _ := NewOutput("json", ".[] | select(.group == \"web\" and .cluster == \"core\") | .ready")
		buf.Reset()
		if err := out.Write(&buf, groups, nil); err != nil {
			t.Fatal(err)
		}
		if want := map[string]string{"2": "2", "?": "null"}[tt.want["web"]]; strings.TrimSpace(buf.String()) != want {
			t.Errorf("%s: JSON ready %s, want %s", tt.name, buf.String(), want)
		}
	}
}

// describe's view of the managers: quorum, leader, backup.
func TestSwarmStatus(t *testing.T) {
	m := func(id, status string) SwarmNode {
		state := "ready"
		if status == "unreachable" {
			state = "down"
		}
		return swarmNode(id, "i-"+id, "control", state, "active", status)
	}
	agent := swarmNode("a1", "i-a1", "web", "ready", "active", "")
	backup := func(ago time.Duration) *time.Time { t := snapTime.Add(-ago); return &t }
	for _, tt := range []struct {
		name    string
		nodes   []SwarmNode
		backup  *time.Time
		quorum  string
		leader  string
		lost    bool
		needed  bool // a backup
		overdue bool
		text    string // the backup's
	}{
		{"three", []SwarmNode{m("m1", "leader"), m("m2", "reachable"), m("m3", "reachable"), agent}, nil,
			"3/3 reachable, tolerates 1 failure", "i-m1", false, true, true, "none yet"},
		{"three, one unreachable", []SwarmNode{m("m1", "reachable"), m("m2", "leader"), m("m3", "unreachable")}, backup(0),
			"2/3 reachable, tolerates 0 failures", "i-m2", false, true, false, "1m ago (2026-03-04T05:06:07Z)"},
		{"three, two unreachable", []SwarmNode{m("m1", "reachable"), m("m2", "unreachable"), m("m3", "unreachable")}, backup(30 * time.Minute),
			"1/3 reachable, quorum lost (2 needed)", "", true, true, true, "31m ago (2026-03-04T04:36:07Z)"},
		{"five, one unreachable", []SwarmNode{m("m1", "leader"), m("m2", "reachable"), m("m3", "reachable"), m("m4", "reachable"), m("m5", "unreachable")}, backup(10 * time.Minute),
			"4/5 reachable, tolerates 1 failure", "i-m1", false, true, false, "11m ago (2026-03-04T04:56:07Z)"},
		{"one, backed up", []SwarmNode{m("m1", "leader"), agent}, backup(10 * time.Minute),
			"1/1 reachable, tolerates 0 failures", "i-m1", false, true, false, "11m ago (2026-03-04T04:56:07Z)"},
		{"one, no backup yet", []SwarmNode{m("m1", "leader")}, nil,
			"1/1 reachable, tolerates 0 failures", "i-m1", false, true, true, "none yet"},
		{"one, backup overdue", []SwarmNode{m("m1", "leader")}, backup(30 * time.Minute),
			"1/1 reachable, tolerates 0 failures", "i-m1", false, true, true, "31m ago (2026-03-04T04:36:07Z)"},
	} {
		w := Swarm{Cluster: "core", Now: snapTime.Add(time.Minute), Snapshot: &Snapshot{Cluster: "core", Time: snapTime, Publisher: "i-m1", Nodes: tt.nodes, LastBackup: tt.backup}}
		st := w.Status()
		if got := st.Quorum.String(); got != tt.quorum || st.Quorum.Lost != tt.lost {
			t.Errorf("%s: quorum %q (lost %v), want %q", tt.name, got, st.Quorum.Lost, tt.quorum)
		}
		if st.Leader != tt.leader || st.Backup.Needed != tt.needed || st.Backup.Overdue != tt.overdue || st.Backup.Text(len(st.Managers)) != tt.text {
			t.Errorf("%s: leader %q, backup %+v %q", tt.name, st.Leader, st.Backup, st.Backup.Text(len(st.Managers)))
		}
		if st.AgeSeconds != 60 || st.Stale || st.Publisher != "i-m1" {
			t.Errorf("%s: %+v", tt.name, st)
		}
		for _, mg := range st.Managers {
			if !strings.HasPrefix(mg.InstanceID, "i-m") || mg.Address == "" || mg.Status == "" {
				t.Errorf("%s: manager %+v", tt.name, mg)
			}
		}
		managers := slices.DeleteFunc(slices.Clone(tt.nodes), func(n SwarmNode) bool { return n.Role != "manager" })
		if len(st.Managers) != len(managers) {
			t.Errorf("%s: %d managers, want %d", tt.name, len(st.Managers), len(managers))
		}
	}
	if (Swarm{Cluster: "core", Missing: "none"}).Status() != nil {
		t.Error("a status without a snapshot")
	}
}

func TestSwarmProblem(t *testing.T) {
	snap := &Snapshot{Cluster: "core", Time: snapTime}
	where := "s3://b/status/swarm.json"
	for _, tt := range []struct {
		w    Swarm
		want string
	}{
		{Swarm{Snapshot: snap, Where: where, Now: snapTime.Add(time.Minute)}, ""},
		{Swarm{Snapshot: snap, Where: where, Now: snapTime.Add(7*time.Minute + 3*time.Second)}, "the swarm's status snapshot s3://b/status/swarm.json is 7m3s old (stale after 2m): no leader has published it since"},
		{Swarm{Snapshot: snap, Where: where, Now: snapTime.Add(-time.Hour)}, "is dated 1h ahead of this machine's clock: stale"},
		{Swarm{Where: where, Missing: NoSnapshotYet(where), Now: snapTime}, "the swarm's state is unknown: no status snapshot in s3://b/status/swarm.json yet (the swarm's leader publishes it every 15 s)"},
	} {
		if got := tt.w.Problem(); tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("problem %q, want %q", got, tt.want)
		}
	}
}

func TestFormatAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 1400 * time.Millisecond: "1s", 59*time.Second + 600*time.Millisecond: "1m", 2 * time.Minute: "2m", 7*time.Minute + 3*time.Second: "7m3s",
		time.Hour: "1h", 2*time.Hour + 5*time.Minute: "2h5m", 47*time.Hour + 59*time.Minute + 50*time.Second: "2d",
		76 * time.Hour: "3d4h", -90 * time.Second: "1m30s",
	} {
		if got := FormatAge(d); got != want {
			t.Errorf("FormatAge(%s) = %s, want %s", d, got, want)
		}
	}
}

// The SWARM column sits after STATE, and the JSON form of a node carries
// its swarm object with the public keys; -o wide adds what the node runs:
// its engine and the short hash of its node agent.
func TestSwarmColumnAndJSON(t *testing.T) {
	w := Swarm{Cluster: "core", Now: snapTime.Add(time.Second), Snapshot: &Snapshot{Cluster: "core", Time: snapTime,
		Nodes: []SwarmNode{swarmNode("n1", "i-1", "web", "ready", "drain", ""), swarmNode("n7", "i-gone", "web", "down", "active", "")}}}
	w.Snapshot.Nodes[0].EngineVersion = "25.0.8"
	w.Snapshot.Nodes[0].EngineLabels[names.EngineLabelAgent] = strings.Repeat("cd0d6cfbafc2", 5) + "abcd"
	n := nodeFrom(instance("i-1", "core", "web"))
	nodes := WithSwarm([]Node{n}, w, "")
	var buf bytes.Buffer
	if err := WriteTable(&buf, NodesTable(nodes, Columns{Wide: true}, true)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if h := strings.Fields(lines[0]); !slices.Equal(h[5:7], []string{"STATE", "SWARM"}) {
		t.Errorf("header %q", lines[0])
	}
	for i, want := range []string{
		"core web i-1 r3.large on-demand running drain 10.0.0.1 - us-east-1a 2026-01-02T03:04:05Z ami-1 25.0.8 cd0d6cfbafc2 -",
		"core web i-gone t3.small - - down (no instance) 10.0.0.7 - - - - - - tier=db",
	} {
		if got := strings.Join(strings.Fields(lines[i+1]), " "); got != want {
			t.Errorf("row %d %q, want %q", i+1, got, want)
		}
	}
	out, _ := NewOutput("json", "")
	buf.Reset()
	if err := out.Write(&buf, nodes, nil); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	sw, _ := got[0]["swarm"].(map[string]any)
	var keys []string
	for k := range sw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := "agent availability engineVersion managerStatus nodeId role runningTasks snapshotTime stale state status"; strings.Join(keys, " ") != want {
		t.Errorf("swarm keys %v, want %s", keys, want)
	}
	if sw["status"] != "drain" || sw["availability"] != "drain" || sw["runningTasks"] != 2.0 || got[0]["swarmOnly"] != false || got[1]["swarmOnly"] != true || got[1]["launchTime"] != nil {
		t.Errorf("JSON %s", buf.String())
	}
	// Without a snapshot (add-agents prints nodes so), swarm is null.
	buf.Reset()
	if err := out.Write(&buf, []Node{n}, nil); err != nil || !strings.Contains(buf.String(), `"swarm": null`) {
		t.Errorf("JSON without a snapshot %s (%v)", buf.String(), err)
	}
}

// A swarm node is joined to an instance only when the swarm sees it at
// the instance's private IP and the managers found no problem with it:
// an agent labelled with another instance's id gets a row of its own,
// marked, with no instance.
func TestWithSwarmProvesIdentity(t *testing.T) {
	victim := ec2Node("i-00000000000000a01", "web")
	victim.PrivateIP = "10.0.0.1"
	other := ec2Node("i-00000000000000a03", "web")
	other.PrivateIP = "10.0.0.3"
	impostor := swarmNode("n2", "i-00000000000000a01", "web", "ready", "active", "") // at 10.0.0.2
	real := swarmNode("n1", "i-00000000000000a01", "web", "ready", "drain", "")      // at 10.0.0.1
	flagged := swarmNode("n3", "i-00000000000000a03", "web", "ready", "active", "")  // at 10.0.0.3
	flagged.IdentityProblem = "nodes [n3 n4] all claim instance i-00000000000000a03 from its address"
	w := Swarm{Cluster: "core", Snapshot: &Snapshot{Time: time.Now(), Nodes: []SwarmNode{impostor, real, flagged}}, Now: time.Now()}
	got := WithSwarm([]Node{victim, other}, w, "")
	var rows []string
	for _, n := range got {
		rows = append(rows, n.InstanceID+"/"+n.Swarm.NodeID+" "+n.Swarm.Status)
	}
	want := []string{
		"/n2 ready (claims i-00000000000000a01, not proven)", "/n3 ready (claims i-00000000000000a03, not proven)",
		"i-00000000000000a01/n1 drain", "i-00000000000000a03/ not joined",
	}
	slices.Sort(rows)
	slices.Sort(want)
	if !slices.Equal(rows, want) {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}
