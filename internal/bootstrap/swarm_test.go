package bootstrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// One control node and two agents, one of which boots before the control
// node, form one swarm from the rendered scripts; the agents carry their
// labels, and a service constrained to their group runs on both. The
// control node publishes the join material and the swarm's status.
func TestSwarmForms(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "forms")
	g := tc.deployGroup(t, "g", 2, spec.Labels{"role": "worker"})

	early := g.bootAgent(t, 0)
	// The early agent has looked for the join material before there was any.
	eventually(t, 3*time.Minute, "the early agent looks for the join material", func() (bool, string) {
		for _, c := range lab.AWS.Calls() {
			if c.From.String() == g.instances[0].ip && strings.HasSuffix(c.Action, "/"+names.SwarmPrefix+"/worker-token") {
				return true, ""
			}
		}
		return false, "no request for the worker token"
	})
	control := tc.bootControl(t)
	late := g.bootAgent(t, 1)
	for _, agent := range []*enginetest.Node{early, late} {
		g.readyAgent(t, agent)
	}

	nodes := swarmNodes(t, control)
	if len(nodes) != 3 {
		t.Fatalf("%d swarm nodes, want 3", len(nodes))
	}
	// Every engine says which node agent and engine version it runs.
	bin, _ := nodeAgent(t)
	runs := map[string]string{names.EngineLabelAgent: bin.SHA256, names.EngineLabelEngineVersion: spec.DefaultEngineVersion}
	agentIDs := map[string]bool{}
	for _, n := range nodes {
		// Managers run no workloads.
		if want := map[string]string{"manager": "drain", "worker": "active"}[n.Spec.Role]; n.Status.State != "ready" || n.Spec.Availability != want {
			t.Errorf("%s %s (%s) is %s, %s", n.Spec.Role, n.ID, n.Status.Addr, n.Status.State, n.Spec.Availability)
		}
		labels := n.Description.Engine.Labels
		if n.Spec.Role == "manager" {
			if !mapsEqual(labels, with(runs, map[string]string{"clusterctl.group": "control", "clusterctl.instance-type": "t3.medium", "clusterctl.instance-id": tc.control.id})) {
				t.Errorf("manager %s has labels %v", n.ID, labels)
			}
			continue
		}
		i := slices.IndexFunc(g.instances, func(i instance) bool { return i.ip == n.Status.Addr })
		if i < 0 || !mapsEqual(labels, with(runs, map[string]string{"role": "worker", "clusterctl.group": "g", "clusterctl.instance-type": "m5.large", "clusterctl.instance-id": g.instances[i].id, "clusterctl.lifecycle": "on-demand", "clusterctl.zone": availabilityZone})) {
			t.Errorf("agent %s at %s has labels %v", n.ID, n.Status.Addr, labels)
		}
		agentIDs[n.ID] = true
	}

	createService(t, control, "web", 2, "--constraint", "engine.labels.clusterctl.group==g")
	eventually(t, 3*time.Minute, "two replicas of web run on the two agents", func() (bool, string) {
		on := runningOn(serviceTasks(t, control, "web"))
		for id, n := range on {
			if !agentIDs[id] || n != 1 {
				return false, fmt.Sprintf("running per node: %v", on)
			}
		}
		return len(on) == 2, fmt.Sprintf("running per node: %v", on)
	})

	// The join material, encrypted, under the swarm prefix; the token
	// never in a boot log.
	token, sse := tc.getObject(t, names.SwarmPrefix+"/worker-token")
	if want := dockerOn(t, control, "swarm", "join-token", "-q", "worker"); strings.TrimSpace(string(token)) != want || sse != "AES256" {
		t.Errorf("published token %q (encryption %q), want the swarm's, AES256", token, sse)
	}
	if ca, sse := tc.getObject(t, names.SwarmPrefix+"/ca.pem"); strings.TrimSpace(string(ca)) != dockerOn(t, control, "swarm", "ca") || sse != "AES256" {
		t.Errorf("published CA certificate differs (encryption %q)", sse)
	}
	if managers, _ := tc.getObject(t, names.ManagersKey); string(managers) != tc.control.ip+":2377\n" {
		t.Errorf("published managers %q, want %s:2377", managers, tc.control.ip)
	}
	for _, n := range []*enginetest.Node{control, early, late} {
		if out := n.Logs(); strings.Contains(out, strings.TrimSpace(string(token))) {
			t.Errorf("the join token is in the logs of %s", n.Spec.Name)
		}
	}
	if env, err := os.ReadFile(late.Root("etc/clusterctl/node.env")); err != nil || !strings.Contains(string(env), "NODE_GROUP=g\n") ||
		!strings.Contains(string(env), "INSTANCE_ID="+g.instances[1].id+"\n") || !strings.Contains(string(env), "MANAGERS_KEY="+tc.join.ManagersKey+"\n") ||
		!strings.Contains(string(env), "BUCKET_NAME="+tc.bucket+"\n") {
		t.Errorf("agent node.env: %s %v", env, err)
	}

	// The status snapshot: every node as the swarm sees it.
	eventually(t, 3*time.Minute, "the status snapshot shows the service's tasks", func() (bool, string) {
		// On a loaded machine the leader may not have published it yet.
		if !tc.hasObject(names.StatusKey) {
			return false, "no status snapshot yet"
		}
		st := readStatus(t, tc)
		running := 0
		for _, n := range st.Nodes {
			running += n.RunningTasks
		}
		return running == 2, fmt.Sprintf("%d running tasks in the snapshot of %s", running, st.Time)
	})
	st := readStatus(t, tc)
	if st.Version != 1 || st.Cluster != tc.name || st.Publisher != tc.control.id || len(st.Nodes) != 3 {
		t.Errorf("snapshot %+v", st)
	}
	if sum := sha256.Sum256([]byte(dockerOn(t, control, "swarm", "ca") + "\n")); st.CADigest != hex.EncodeToString(sum[:]) {
		t.Errorf("snapshot CA digest %s, want the swarm's", st.CADigest)
	}
	if at, err := time.Parse(time.RFC3339, st.Time); err != nil || time.Since(at) > 2*time.Minute {
		t.Errorf("snapshot time %q: %v", st.Time, err)
	}
	for _, n := range st.Nodes {
		sn := byInstance(nodes, n.InstanceID)
		if sn == nil || sn.ID != n.NodeID || n.State != "ready" || n.Availability != sn.Spec.Availability || !mapsEqual(n.EngineLabels, sn.Description.Engine.Labels) {
			t.Errorf("snapshot node %+v does not match the swarm", n)
			continue
		}
		switch {
		case n.Role == "manager" && (n.ManagerStatus != "leader" || n.RunningTasks != 0 || n.Address != tc.control.ip):
			t.Errorf("snapshot manager %+v", n)
		case n.Role == "worker" && (n.ManagerStatus != "" || n.RunningTasks != 1 || n.Address != sn.Status.Addr):
			t.Errorf("snapshot worker %+v", n)
		}
	}
	// What the leader publishes is what the CLI reads and trusts: every
	// node, each instance Ready in the swarm, the lone manager leading.
	snap, err := query.ReadSnapshot(context.Background(), tc.c.s3, tc.bucket, tc.name)
	if err != nil || snap == nil {
		t.Fatalf("the CLI's reader refuses the published snapshot: %v", err)
	}
	w := query.Swarm{Cluster: tc.name, Snapshot: snap, Now: time.Now()}
	var listed []query.Node
	for _, i := range append([]instance{{id: tc.control.id}}, g.instances...) {
		listed = append(listed, query.Node{Cluster: tc.name, InstanceID: i.id})
	}
	for _, n := range query.WithSwarm(listed, w, "") {
		if want := map[bool]string{true: "ready (leader)", false: "ready"}[n.InstanceID == tc.control.id]; n.Swarm == nil || n.Swarm.Status != want || n.SwarmOnly {
			t.Errorf("the CLI sees %s as %+v, want %s", n.InstanceID, n.Swarm, want)
		}
	}
	if st := w.Status(); !w.Fresh() || st.Leader != tc.control.id || st.Quorum.String() != "1/1 reachable, tolerates 0 failures" {
		t.Errorf("the CLI's view of the managers: %+v", st)
	}
}

// status is the swarm's status snapshot, as docs/design.md describes it.
type status struct {
	Version   int
	Cluster   string
	Time      string
	Publisher string
	CADigest  string
	Nodes     []struct {
		NodeID, InstanceID, Hostname, Address, Role, State, Availability, ManagerStatus, EngineVersion string
		EngineLabels                                                                                   map[string]string
		RunningTasks                                                                                   int
	}
}

func readStatus(t *testing.T, tc *testCluster) status {
	t.Helper()
	body, sse := tc.getObject(t, names.StatusKey)
	var st status
	if err := json.Unmarshal(body, &st); err != nil || sse != "AES256" {
		t.Fatalf("status snapshot (encryption %q): %v\n%s", sse, err, body)
	}
	return st
}

func mapsEqual(a, b map[string]string) bool { return maps.Equal(a, b) }

// with returns the labels of both maps.
func with(a, b map[string]string) map[string]string {
	out := maps.Clone(b)
	maps.Copy(out, a)
	return out
}

// A replaced control plane: the control node's swarm is initialised anew.
// The agents notice that the published swarm is not theirs and join it on
// their own, without signalling again.
func TestAgentsRejoinReinitialisedSwarm(t *testing.T) {
	scenario(t)
	tc, g, control, agents := startCluster(t, "rejoin", 2, 2)
	before := map[string]string{}
	for _, i := range g.instances {
		before[i.id] = nodeOf(t, control, i.id)
	}
	oldCA := dockerOn(t, control, "swarm", "ca")

	dockerOn(t, control, "swarm", "leave", "--force")
	dockerOn(t, control, "swarm", "init", "--advertise-addr", tc.control.ip)
	newCA := dockerOn(t, control, "swarm", "ca")
	if newCA == oldCA {
		t.Fatal("the new swarm has the old CA")
	}
	eventually(t, 2*time.Minute, "both agents Ready in the new swarm", func() (bool, string) {
		nodes, err := trySwarmNodes(control)
		if err != nil {
			return false, err.Error()
		}
		var state []string
		for _, i := range g.instances {
			n := byInstance(nodes, i.id)
			if n == nil || n.Status.State != "ready" {
				return false, fmt.Sprintf("%d nodes: %v", len(nodes), state)
			}
			state = append(state, n.ID)
		}
		return len(nodes) == 3, fmt.Sprintf("%d nodes", len(nodes))
	})
	for _, i := range g.instances {
		if id := nodeOf(t, control, i.id); id == before[i.id] {
			t.Errorf("instance %s kept node id %s across swarms", i.id, id)
		}
	}
	if ca, _ := tc.getObject(t, names.SwarmPrefix+"/ca.pem"); strings.TrimSpace(string(ca)) != newCA {
		t.Error("the new swarm's CA certificate was not published")
	}
	for _, a := range agents {
		if calls := a.Calls("cfn-signal"); len(calls) != 1 {
			t.Errorf("%s signalled %d times", a.Spec.Name, len(calls))
		}
	}
}
