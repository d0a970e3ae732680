package enginetest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// standIn is a node whose engine socket is sock, served by h when h is not
// nil, absent otherwise.
func standIn(t *testing.T, h http.Handler) *Node {
	t.Helper()
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Fatal("docker CLI not found: apt-get install docker.io")
	}
	dir := t.TempDir()
	n := &Node{Spec: NodeSpec{Name: "stand-in"}, lab: &Lab{Tools: Tools{Docker: docker}}, dir: dir, sock: filepath.Join(dir, "docker.sock")}
	if h != nil {
		l, err := net.Listen("unix", n.sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: h}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}
	return n
}

// A question to an engine that is not there says so, by the CLI and by
// the API alike: the harness waits on that, and on nothing else.
func TestEngineNotThereIsUnreachable(t *testing.T) {
	n := standIn(t, nil)
	ctx := context.Background()
	if _, err := n.Docker(ctx, "info"); !errors.Is(err, ErrEngineUnreachable) {
		t.Errorf("docker info: %v, want ErrEngineUnreachable", err)
	}
	var v any
	if err := n.EngineGet(ctx, "/nodes", &v); !errors.Is(err, ErrEngineUnreachable) {
		t.Errorf("GET /nodes: %v, want ErrEngineUnreachable", err)
	}
}

func TestEngineGet(t *testing.T) {
	n := standIn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tasks":
			if got := r.URL.Query().Get("filters"); got != `{"service":["web"]}` {
				http.Error(w, "filters "+got, http.StatusBadRequest)
				return
			}
			w.Write([]byte(`[{"ID":"t1","Status":{"State":"running"}}]`))
		case "/nodes":
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"message":"This node is not a swarm manager."}`))
		default:
			w.Write([]byte(`not json`))
		}
	}))
	ctx := context.Background()
	var tasks []struct {
		ID     string
		Status struct{ State string }
	}
	if err := n.EngineGet(ctx, `/tasks?filters=%7B%22service%22%3A%5B%22web%22%5D%7D`, &tasks); err != nil || len(tasks) != 1 || tasks[0].ID != "t1" || tasks[0].Status.State != "running" {
		t.Errorf("tasks %+v, %v", tasks, err)
	}
	var v any
	err := n.EngineGet(ctx, "/nodes", &v)
	if err == nil || errors.Is(err, ErrEngineUnreachable) || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "not a swarm manager") {
		t.Errorf("a refusal: %v, want the engine's status and message, not unreachable", err)
	}
	if err := n.EngineGet(ctx, "/other", &v); err == nil || errors.Is(err, ErrEngineUnreachable) {
		t.Errorf("an unreadable answer: %v", err)
	}
}
