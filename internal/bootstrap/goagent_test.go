package bootstrap

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/spec"
)

var (
	agentOnce sync.Once
	agentPath string
	agentErr  error
)

// nodeAgent builds the node agent (cmd/clusterctl-node) once per run.
func nodeAgent(t *testing.T) string {
	t.Helper()
	agentOnce.Do(func() {
		dir := filepath.Join(lab.Dir, "agent")
		agentPath = filepath.Join(dir, "clusterctl-node")
		module, err := filepath.Abs("../..")
		if err != nil {
			agentErr = err
			return
		}
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-trimpath", "-o", agentPath, "./cmd/clusterctl-node")
		cmd.Dir = module
		cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentErr = fmt.Errorf("building the node agent: %v: %s", err, out)
		}
	})
	if agentErr != nil {
		t.Fatal(agentErr)
	}
	return agentPath
}

// goUserData boots a node with the Go node agent as the loader does once
// it has the agent: the node's settings, the engine's labels, the engine,
// then a manager's boot and housekeeping service, or an agent's service.
func goUserData(agent, role, stack string, settings map[string]string) string {
	var env strings.Builder
	for _, k := range []string{"CLUSTER_NAME", "NODE_GROUP", "NODE_LABELS", "STACK_NAME", "AWS_REGION", "BUCKET_NAME", "LIFECYCLE_QUEUE_URL", "MANAGERS_KEY"} {
		if v, ok := settings[k]; ok {
			fmt.Fprintf(&env, "%s=%s\n", k, v)
		}
	}
	unit := "clusterctl-agent"
	command := "agent"
	if role == "manager" {
		unit, command = "clusterctl-housekeeping", "housekeeping"
	}
	s := `#!/bin/bash
set -euo pipefail
root=${CLUSTERCTL_ROOT:-}
agent=` + agent + `
install -d -m 0755 "$root/etc/clusterctl" "$root/etc/systemd/system"
cat >"$root/etc/clusterctl/node.env" <<'CLUSTERCTL_SETTINGS'
` + env.String() + `CLUSTERCTL_SETTINGS
"$agent" setup
systemctl enable --now docker
`
	if role == "manager" {
		s += `if ! "$agent" boot; then
  cfn-signal --exit-code 1 --reason "clusterctl: control node failed" --stack ` + stack + ` --resource ` + names.ResourceManagerGroup + ` --region ` + region + `
  exit 1
fi
`
	}
	s += `printf '%s\n' '[Unit]' '[Service]' "ExecStart=$agent ` + command + `" 'Restart=always' 'RestartSec=1' >"$root/etc/systemd/system/` + unit + `.service"
systemctl daemon-reload
systemctl enable --now ` + unit + `
`
	if role == "manager" {
		s += `cfn-signal --exit-code 0 --reason "control node ready" --stack ` + stack + ` --resource ` + names.ResourceManagerGroup + ` --region ` + region + "\n"
	}
	return s
}

// The Go node agent on real engines: a manager initialises the swarm and
// publishes its join material and status, an agent joins and signals, and
// a termination notice drains and removes the agent and completes its
// lifecycle action.
func TestGoAgentLifecycle(t *testing.T) {
	agent := nodeAgent(t)
	tc := deployCore(t, "goagent")
	g := tc.deployGroup(t, "g", 1, spec.Labels{"role": "worker"})
	m := labNode(t, "manager", tc.control, true)
	boot(t, m, goUserData(agent, "manager", tc.name, map[string]string{
		"CLUSTER_NAME": tc.name, "NODE_GROUP": names.GroupControl, "STACK_NAME": tc.name, "AWS_REGION": region,
		"BUCKET_NAME": tc.bucket, "LIFECYCLE_QUEUE_URL": tc.queue,
	}))
	tc.readyManager(t, m)
	a := labNode(t, "g-0", g.instances[0], true)
	boot(t, a, goUserData(agent, "agent", g.stack, map[string]string{
		"CLUSTER_NAME": tc.name, "NODE_GROUP": "g", "NODE_LABELS": "role=worker", "STACK_NAME": g.stack, "AWS_REGION": region,
		"BUCKET_NAME": tc.bucket, "MANAGERS_KEY": tc.join.ManagersKey,
	}))
	g.readyAgent(t, a)

	// The snapshot shows both, with their instances and labels.
	eventually(t, time.Minute, "the status snapshot shows both nodes Ready", func() (bool, string) {
		snap, err := query.ReadSnapshot(context.Background(), tc.c.s3, tc.bucket, tc.name)
		if err != nil || snap == nil {
			return false, fmt.Sprint(snap, err)
		}
		ready := 0
		for _, n := range snap.Nodes {
			if n.State == "ready" && (n.InstanceID == tc.control.id && n.ManagerStatus == "leader" ||
				n.InstanceID == g.instances[0].id && n.EngineLabels["role"] == "worker" && n.EngineLabels[names.EngineLabelGroup] == "g") {
				ready++
			}
		}
		return ready == 2 && snap.Publisher == tc.control.id, fmt.Sprintf("%+v", snap.Nodes)
	})
	if n := byInstance(swarmNodes(t, m), tc.control.id); n == nil || n.Spec.Availability != "drain" {
		t.Errorf("the manager is not drained: %+v", n)
	}

	token := tc.terminate(t, g.asg, g.instances[0].id, a)
	if act := completed(t, token, 2*time.Minute); act.Result != "CONTINUE" {
		t.Errorf("lifecycle action %+v", act)
	}
	if byInstance(swarmNodes(t, m), g.instances[0].id) != nil {
		t.Error("the terminated agent is still in the swarm")
	}
	eventually(t, time.Minute, "the notice is deleted", func() (bool, string) { return tc.queueEmpty(t) })
}
