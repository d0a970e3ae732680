package dockerx

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/docker/docker/client"

	"github.com/clusterctl/clusterctl/internal/node"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// api is a fake of the Docker Engine API: canned answers by path, and the
// requests it was sent.
type api struct {
	t    *testing.T
	seen []string
	body map[string]string
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if i := strings.Index(path[1:], "/"); strings.HasPrefix(path, "/v1.") && i > 0 {
		path = path[i+1:]
	}
	b, _ := io.ReadAll(r.Body)
	a.seen = append(a.seen, r.Method+" "+path+" "+r.URL.RawQuery+" "+string(b))
	w.Header().Set("Api-Version", "1.41")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case path == "/_ping":
		w.Write([]byte("OK"))
	case a.body[r.Method+" "+path] != "":
		w.Write([]byte(a.body[r.Method+" "+path]))
	case r.Method == "POST":
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"not found"}`))
	}
}

func fake(t *testing.T, body map[string]string) (*Engine, *api) {
	a := &api{t: t, body: body}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	c, err := client.NewClientWithOpts(client.WithHost("tcp://"+strings.TrimPrefix(srv.URL, "http://")), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	return &Engine{c: c}, a
}

const nodeJSON = `{"ID":"n1","Version":{"Index":42},"Spec":{"Role":"manager","Availability":"active"},
 "Description":{"Hostname":"ip-10-0-1-1","Platform":{"Architecture":"aarch64","OS":"linux"},"Resources":{"NanoCPUs":2000000000,"MemoryBytes":4294967296},"Engine":{"EngineVersion":"20.10.24","Labels":{"clusterctl.instance-id":"i-1"}}},
 "Status":{"State":"ready","Addr":"0.0.0.0"},"ManagerStatus":{"Leader":true,"Reachability":"reachable","Addr":"10.0.1.1:2377"}}`

// What the engine says is what the agent's logic gets.
func TestRead(t *testing.T) {
	e, a := fake(t, map[string]string{
		"GET /info":     `{"DockerRootDir":"/var/lib/docker","Swarm":{"NodeID":"n1","LocalNodeState":"active","ControlAvailable":true}}`,
		"GET /nodes":    "[" + nodeJSON + "]",
		"GET /nodes/n1": nodeJSON,
		"GET /tasks": `[{"ID":"t1","NodeID":"n1","ServiceID":"s1","DesiredState":"running","Status":{"State":"pending","Err":"no suitable node"},
		  "Spec":{"Placement":{"Constraints":["engine.labels.disk==ssd"],"Platforms":[{"Architecture":"arm64","OS":"linux"}]},
		  "Resources":{"Reservations":{"NanoCPUs":500000000,"MemoryBytes":1073741824}}}}]`,
		"GET /swarm":      `{"JoinTokens":{"Worker":"SWMTKN-w","Manager":"SWMTKN-m"},"TLSInfo":{"TrustRoot":"-----BEGIN CERTIFICATE-----\n"}}`,
		"GET /services/g": `{"ID":"g","Spec":{"Mode":{"Global":{}}}}`,
		"GET /services/r": `{"ID":"r","Spec":{"Mode":{"Replicated":{"Replicas":3}}}}`,
	})
	ctx := context.Background()
	self, err := e.Self(ctx)
	if err != nil || self != (node.Self{NodeID: "n1", LocalState: "active", ControlAvailable: true, RootDir: "/var/lib/docker"}) {
		t.Errorf("self %+v, %v", self, err)
	}
	nodes, err := e.Nodes(ctx)
	want := node.Node{ID: "n1", Hostname: "ip-10-0-1-1", Addr: "0.0.0.0", Role: "manager", State: "ready", Availability: "active",
		ManagerAddr: "10.0.1.1:2377", Leader: true, Reachability: "reachable", Labels: map[string]string{"clusterctl.instance-id": "i-1"}, EngineVersion: "20.10.24"}
	if err != nil || len(nodes) != 1 || nodes[0].ID != want.ID || nodes[0].ManagerAddr != want.ManagerAddr || !nodes[0].Leader || nodes[0].Labels["clusterctl.instance-id"] != "i-1" || nodes[0].EngineVersion != want.EngineVersion {
		t.Errorf("nodes %+v, %v", nodes, err)
	}
	if _, err := e.Node(ctx, "gone"); !errors.Is(err, node.ErrNoNode) {
		t.Errorf("a node gone: %v", err)
	}
	tasks, err := e.Tasks(ctx, node.TaskFilter{Node: "n1", DesiredRunning: true})
	if err != nil || len(tasks) != 1 || !reflect.DeepEqual(tasks[0], node.Task{ID: "t1", NodeID: "n1", ServiceID: "s1", State: "pending", DesiredState: "running", Err: "no suitable node",
		Constraints: []string{"engine.labels.disk==ssd"}, Platforms: []node.Platform{{Architecture: "arm64", OS: "linux"}}, NanoCPUs: 5e8, MemoryBytes: 1 << 30}) {
		t.Errorf("tasks %+v, %v", tasks, err)
	}
	if nodes[0].NanoCPUs != 2e9 || nodes[0].MemoryBytes != 4<<30 || nodes[0].Arch != "aarch64" {
		t.Errorf("node resources %+v", nodes[0])
	}
	var q string
	for _, s := range a.seen {
		if strings.HasPrefix(s, "GET /tasks ") {
			q = s
		}
	}
	if !strings.Contains(q, "desired-state") || !strings.Contains(q, "n1") {
		t.Errorf("task filter %q", q)
	}
	if w, m, err := e.JoinTokens(ctx); w != "SWMTKN-w" || m != "SWMTKN-m" || err != nil {
		t.Errorf("tokens %q %q %v", w, m, err)
	}
	if ca, _ := e.CA(ctx); ca != "-----BEGIN CERTIFICATE-----\n" {
		t.Errorf("ca %q", ca)
	}
	if n, ok, err := e.Replicas(ctx, "r"); n != 3 || !ok || err != nil {
		t.Errorf("replicated: %d %v %v", n, ok, err)
	}
	if _, ok, err := e.Replicas(ctx, "g"); ok || err != nil {
		t.Errorf("global: %v %v", ok, err)
	}
	if _, _, err := e.Replicas(ctx, "x"); !errors.Is(err, node.ErrNoService) {
		t.Errorf("gone: %v", err)
	}
}

// Changes are made at the version read, and say what Docker is asked.
func TestChanges(t *testing.T) {
	e, a := fake(t, map[string]string{"GET /nodes/n1": nodeJSON})
	ctx := context.Background()
	if err := e.SetAvailability(ctx, "n1", "drain"); err != nil {
		t.Fatal(err)
	}
	if err := e.Demote(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := e.Join(ctx, "SWMTKN-x", "10.0.2.5", "10.0.1.1:2377"); err != nil {
		t.Fatal(err)
	}
	var updates []map[string]any
	var join map[string]any
	for _, s := range a.seen {
		f := strings.SplitN(s, " ", 4)
		switch {
		case f[1] == "/nodes/n1/update":
			if f[2] != "version=42" {
				t.Errorf("update at %q", f[2])
			}
			var m map[string]any
			json.Unmarshal([]byte(f[3]), &m)
			updates = append(updates, m)
		case f[1] == "/swarm/join":
			json.Unmarshal([]byte(f[3]), &join)
		}
	}
	if len(updates) != 2 || updates[0]["Availability"] != "drain" || updates[0]["Role"] != "manager" || updates[1]["Role"] != "worker" {
		t.Errorf("updates %v", updates)
	}
	if join["AdvertiseAddr"] != "10.0.2.5" || join["JoinToken"] != "SWMTKN-x" || join["RemoteAddrs"].([]any)[0] != "10.0.1.1:2377" || join["ListenAddr"] != "0.0.0.0:2377" {
		t.Errorf("join %v", join)
	}
}

// The services and tasks the agent puts in the snapshot are what the
// shell managers' publish_status kept of the same engine's answers (its jq
// program's output, recorded): never the whole spec.
func TestServicesAsTheShellPublished(t *testing.T) {
	const services = `[{"ID":"s1","Version":{"Index":9},"Spec":{"Name":"web","Labels":{},
  "TaskTemplate":{"ContainerSpec":{"Image":"nginx:1.27@sha256:abc","Env":["SECRET=x"]},"Placement":{"Constraints":["node.role==worker"],"Platforms":[{"Architecture":"amd64","OS":"linux"}]}},
  "Mode":{"Replicated":{"Replicas":3}},"EndpointSpec":{"Mode":"vip","Ports":[{"Protocol":"tcp","TargetPort":80,"PublishedPort":8080,"PublishMode":"ingress"}]}},
  "Endpoint":{"Spec":{"Mode":"vip"},"Ports":[{"Protocol":"tcp","TargetPort":80,"PublishedPort":8080,"PublishMode":"ingress"}],"VirtualIPs":[{"NetworkID":"n","Addr":"10.0.0.5/24"}]}},
 {"ID":"s2","Spec":{"Name":"agent","TaskTemplate":{"ContainerSpec":{"Image":"busybox"}},"Mode":{"Global":{}}},"Endpoint":{"Spec":{}}},
 {"ID":"s3","Spec":{"Name":"once","TaskTemplate":{"ContainerSpec":{"Image":"alpine"}},"Mode":{"ReplicatedJob":{"MaxConcurrent":1,"TotalCompletions":2}}},"Endpoint":{"Spec":{}}}]`
	const tasks = `[{"ID":"t1","ServiceID":"s1","NodeID":"n1","DesiredState":"running","Status":{"Timestamp":"2026-01-01T00:00:00Z","State":"running","Message":"started","ContainerStatus":{"ContainerID":"c"}}},
 {"ID":"t2","ServiceID":"s1","DesiredState":"running","Status":{"State":"pending","Message":"pending task scheduling","Err":"no suitable node"}}]`
	e, _ := fake(t, map[string]string{"GET /services": services, "GET /tasks": tasks})
	ctx := context.Background()
	gotServices, err := e.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gotTasks, err := e.Tasks(ctx, node.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}

	// What the shell managers' publish_status (jq) made of these answers
	// before the port: the CLI reads snapshots of either.
	out := []byte(`{"services":[{"ID":"s1","Endpoint":{"Spec":{"Mode":"vip"},"Ports":[{"Protocol":"tcp","TargetPort":80,"PublishedPort":8080,"PublishMode":"ingress"}],"VirtualIPs":[{"NetworkID":"n","Addr":"10.0.0.5/24"}]},"Name":"web","Mode":{"Replicated":{"Replicas":3}},"Image":"nginx:1.27@sha256:abc","Placement":{"Constraints":["node.role==worker"],"Platforms":[{"Architecture":"amd64","OS":"linux"}]}},{"ID":"s2","Endpoint":{"Spec":{}},"Name":"agent","Mode":{"Global":{}},"Image":"busybox","Placement":null},{"ID":"s3","Endpoint":{"Spec":{}},"Name":"once","Mode":{"ReplicatedJob":{"MaxConcurrent":1,"TotalCompletions":2}},"Image":"alpine","Placement":null}],
 "tasks":[{"ServiceID":"s1","NodeID":"n1","DesiredState":"running","Status":{"Timestamp":"2026-01-01T00:00:00Z","State":"running","Message":"started","ContainerStatus":{"ContainerID":"c"}}},{"ServiceID":"s1","NodeID":null,"DesiredState":"running","Status":{"State":"pending","Message":"pending task scheduling","Err":"no suitable node"}}]}`)
	var shell struct {
		Services []wire.SnapshotService
		Tasks    []wire.SnapshotTask
	}
	if err := json.Unmarshal(out, &shell); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !reflect.DeepEqual(gotServices, shell.Services) {
		a, _ := json.Marshal(gotServices)
		b, _ := json.Marshal(shell.Services)
		t.Errorf("services\n%s\nthe shell's\n%s", a, b)
	}
	if len(gotTasks) != len(shell.Tasks) {
		t.Fatalf("tasks %+v, the shell's %+v", gotTasks, shell.Tasks)
	}
	for i, st := range shell.Tasks {
		g := gotTasks[i]
		if g.ServiceID != st.ServiceID || g.NodeID != st.NodeID || g.DesiredState != st.DesiredState ||
			g.State != st.Status.State || g.Message != st.Status.Message || g.Err != st.Status.Err {
			t.Errorf("task %d: %+v, the shell's %+v", i, g, st)
		}
	}
	if strings.Contains(string(mustJSON(t, gotServices)), "SECRET") {
		t.Error("the spec's environment in the snapshot")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The CA an engine trusts is read below the data directory of the answer
// the caller already has: no question to the engine, "" outside a swarm,
// and an answer that names no directory is an error, not "no CA".
func TestTrustedCA(t *testing.T) {
	root := t.TempDir()
	e := &Engine{}
	ctx := context.Background()
	if ca, err := e.TrustedCA(ctx, node.Self{RootDir: root}); ca != "" || err != nil {
		t.Errorf("outside a swarm: %q, %v", ca, err)
	}
	dir := filepath.Join(root, "swarm", "certificates")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "swarm-root-ca.crt"), []byte("PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ca, err := e.TrustedCA(ctx, node.Self{RootDir: root}); ca != "PEM" || err != nil {
		t.Errorf("in a swarm: %q, %v", ca, err)
	}
	if _, err := e.TrustedCA(ctx, node.Self{}); err == nil || !strings.Contains(err.Error(), "no data directory") {
		t.Errorf("no data directory: %v", err)
	}
}
