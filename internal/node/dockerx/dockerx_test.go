package dockerx

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/docker/docker/client"

	"github.com/clusterctl/clusterctl/internal/node"
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
 "Description":{"Hostname":"ip-10-0-1-1","Engine":{"EngineVersion":"20.10.24","Labels":{"clusterctl.instance-id":"i-1"}}},
 "Status":{"State":"ready","Addr":"0.0.0.0"},"ManagerStatus":{"Leader":true,"Reachability":"reachable","Addr":"10.0.1.1:2377"}}`

// What the engine says is what the agent's logic gets.
func TestRead(t *testing.T) {
	e, a := fake(t, map[string]string{
		"GET /info":       `{"DockerRootDir":"/var/lib/docker","Swarm":{"NodeID":"n1","LocalNodeState":"active","ControlAvailable":true}}`,
		"GET /nodes":      "[" + nodeJSON + "]",
		"GET /nodes/n1":   nodeJSON,
		"GET /tasks":      `[{"ID":"t1","NodeID":"n1","ServiceID":"s1","DesiredState":"running","Status":{"State":"pending","Err":"no suitable node"}}]`,
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
	if err != nil || len(tasks) != 1 || tasks[0] != (node.Task{ID: "t1", NodeID: "n1", ServiceID: "s1", State: "pending", DesiredState: "running", Err: "no suitable node"}) {
		t.Errorf("tasks %+v, %v", tasks, err)
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
