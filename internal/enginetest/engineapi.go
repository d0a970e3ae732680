package enginetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrEngineUnreachable is a question the node's engine did not take: its
// socket refused it or is not there (the engine stopped, or restarting).
// Docker and EngineGet both say so, for callers that wait for the engine.
var ErrEngineUnreachable = errors.New("the engine is not answering")

// Docker runs the docker CLI against the node's engine.
func (n *Node) Docker(ctx context.Context, args ...string) (string, error) {
	out, err := n.DockerCommand(ctx, args...).CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("Cannot connect to the Docker daemon")) {
			err = fmt.Errorf("%w: %w", ErrEngineUnreachable, err)
		}
		return string(out), fmt.Errorf("docker %s on %s: %w: %s", strings.Join(args, " "), n.Spec.Name, err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// DockerCommand returns the docker CLI against the node's engine, not
// started: for commands that stream (docker events).
func (n *Node) DockerCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, n.lab.Tools.Docker, append([]string{"-H", "unix://" + n.sock}, args...)...)
	cmd.Env = append(baseEnv(), "PATH="+os.Getenv("PATH"), "HOME="+filepath.Join(n.dir, "home"))
	return cmd
}

// engineClient is an HTTP client of the node's engine socket.
func (n *Node) engineClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", n.sock)
	}}}
}

// EngineGet reads the engine's API at path (e.g. /nodes, or /tasks with a
// filter) into v: what `docker node inspect` or `docker inspect` would
// print, in one request. The scenarios poll the swarm several times a
// second, and a docker CLI process costs about 0.1 s of CPU each time.
func (n *Node) EngineGet(ctx context.Context, path string, v any) error {
	client := n.engineClient()
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker"+path, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return fmt.Errorf("GET %s on %s: %w: %v", path, n.Spec.Name, ErrEngineUnreachable, err)
		}
		return fmt.Errorf("GET %s on %s: %w", path, n.Spec.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s on %s: %w", path, n.Spec.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Message string }
		if json.Unmarshal(body, &e) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(body))
		}
		return fmt.Errorf("GET %s on %s: %s: %s", path, n.Spec.Name, resp.Status, e.Message)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s on %s: %w", path, n.Spec.Name, err)
	}
	return nil
}
