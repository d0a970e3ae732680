package bootstrap

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
)

// buildClusterctl builds the clusterctl binary for one test, as the
// release builds it (no cgo, trimmed paths), so that it shares its
// packages' compilation with make test's and e2e's.
func buildClusterctl(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "clusterctl")
	build := exec.Command("go", "build", "-trimpath", "-o", path, "../../cmd/clusterctl")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building clusterctl: %v\n%s", err, out)
	}
	return path
}

// clusterctl runs the binary against moto.
func clusterctl(binary string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+endpoint, "AWS_REGION="+region, "AWS_ACCESS_KEY_ID=testing",
		"AWS_SECRET_ACCESS_KEY=testing", "AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%v: %s", err, errOut.String())
	}
	return out.String(), nil
}

// talk creates a service on one node that prints a numbered line a second.
func talk(t *testing.T, m *enginetest.Node, service, instanceID string) {
	t.Helper()
	dockerOn(t, m, "service", "create", "--detach", "--name", service, "--replicas", "1", "--no-resolve-image", "--network", "host",
		"--constraint", "engine.labels.clusterctl.instance-id=="+instanceID, enginetest.Image,
		"sh", "-c", `i=0; while true; do i=$((i+1)); echo "`+service+` says $i"; sleep 1; done`)
}

// The engines' awslogs driver, as the node configuration sets it up,
// ships a real service's output to the cluster's log group (on moto, with
// the node role's credentials from the instance metadata), and clusterctl
// logs prints it as task@node; the agent service's own lines go to its
// node's stream. With the logs endpoint unreachable, the
// container keeps running and docker logs on its node still shows it.
func TestContainerLogsShipped(t *testing.T) {
	scenario(t)
	bin := buildClusterctl(t)
	tc := deployCore(t, "logs")
	g := tc.deployGroup(t, "g", 2, nil)
	m := tc.bootControl(t)
	shipping := g.bootAgent(t, 0)
	// A closed port of the lab's gateway: the logs endpoint refuses.
	cut := g.bootAgent(t, 1, "CLUSTERCTL_LOGS_ENDPOINT=http://"+lab.Gateway.String()+":9")
	g.readyAgent(t, shipping)
	g.readyAgent(t, cut)

	talk(t, m, "talker", shipping.Spec.InstanceID)
	prefix := "@" + shipping.Spec.InstanceID + " | talker says "
	eventually(t, 2*time.Minute, "clusterctl logs printing the service's output", func() (bool, string) {
		out, err := clusterctl(bin, "logs", "-j", "logs", "talker")
		if err != nil {
			return false, err.Error()
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return strings.HasPrefix(lines[0], "talker.1.") && strings.Contains(lines[0], prefix+"1") && len(lines) >= 2, out
	})
	// The agent service's own lines go to the node's stream.
	eventually(t, time.Minute, "the agent's decisions in its node's stream", func() (bool, string) {
		out, err := clusterctl(bin, "logs", "-j", "logs", "--node", shipping.Spec.InstanceID, "--grep", "joined")
		if err != nil {
			return false, err.Error()
		}
		return strings.HasPrefix(out, "clusterctl@"+shipping.Spec.InstanceID+" | clusterctl: joined the swarm at "), out
	})
	// So do the managers': their boot and housekeeping run the same agent.
	eventually(t, time.Minute, "the manager's decisions in its node's stream", func() (bool, string) {
		out, err := clusterctl(bin, "logs", "-j", "logs", "--node", m.Spec.InstanceID, "--grep", "initialised")
		if err != nil {
			return false, err.Error()
		}
		return strings.HasPrefix(out, "clusterctl@"+m.Spec.InstanceID+" | clusterctl: initialised the swarm on "), out
	})
	// Each stream is under the role of the node that wrote it, the only
	// prefix that role's policy lets it write: the agent's container's,
	// and the manager's own lines.
	for _, c := range []struct {
		args   []string
		prefix string
	}{
		{[]string{"talker"}, names.LogStreamAgents + names.LogStreamService + "talker/"},
		{[]string{"--node", m.Spec.InstanceID, "--grep", "initialised"}, names.LogStreamManagers + names.LogStreamNode + m.Spec.InstanceID},
	} {
		out, err := clusterctl(bin, append([]string{"logs", "-j", "logs", "--tail", "1", "-o", "json", "--query", ".stream"}, c.args...)...)
		if stream := strings.Trim(strings.TrimSpace(out), `"`); err != nil || !strings.HasPrefix(stream, c.prefix) {
			t.Errorf("logs %v: stream %q (%v), want under %s", c.args, stream, err, c.prefix)
		}
	}
	// The engine's calls are signed with its node's role credentials (the
	// node agent's own, with the test's). The lab is shared with the
	// other tests running in parallel: only this cluster's nodes count.
	ours := map[netip.Addr]string{}
	for _, n := range []*enginetest.Node{m, shipping, cut} {
		ours[n.Spec.IP] = enginetest.NodeKeyID(n.Spec.InstanceID)
	}
	var signed, other []string
	for _, c := range lab.AWS.Calls() {
		key, mine := ours[c.From]
		if c.Service != "logs" || c.KeyID == "testing" || !mine {
			continue
		}
		switch {
		case c.KeyID != key:
			other = append(other, fmt.Sprintf("%s %s from %s", c.Action, c.KeyID, c.From))
		case c.Action == "PutLogEvents" && c.From == shipping.Spec.IP:
			signed = append(signed, c.KeyID)
		}
	}
	if len(signed) == 0 || len(other) > 0 {
		t.Errorf("the engine's PutLogEvents with its node role's key: %d; calls signed with another key: %q", len(signed), other)
	}

	talk(t, m, "mute", cut.Spec.InstanceID)
	eventually(t, 2*time.Minute, "the service's output in docker logs on its node", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		id, err := docker(ctx, cut, "ps", "-q", "--filter", "label=com.docker.swarm.service.name=mute")
		if err != nil || strings.TrimSpace(id) == "" {
			return false, fmt.Sprintf("no container yet (%v)", err)
		}
		out, err := docker(ctx, cut, "logs", strings.TrimSpace(id))
		return err == nil && strings.Contains(out, "mute says 5\n"), out
	})
	for _, tk := range serviceTasks(t, m, "mute") {
		if tk.State != "running" {
			t.Errorf("task %s of mute is %s, want running: the unreachable endpoint blocked it", tk.ID, tk.State)
		}
	}
	// (Its loader fetches the agent with the same role credentials.)
	for _, c := range lab.AWS.Calls() {
		if c.Service == "logs" && c.From == cut.Spec.IP && c.KeyID == enginetest.NodeKeyID(cut.Spec.InstanceID) {
			t.Errorf("the cut node's engine reached CloudWatch Logs: %+v", c)
		}
	}
	if out, err := clusterctl(bin, "logs", "-j", "logs", "mute"); err != nil || out != "" {
		t.Errorf("logs of the cut node's service: %q (%v)", out, err)
	}
}
