package enginetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/clusterctl/clusterctl/internal/remote"
	"github.com/clusterctl/clusterctl/internal/ssmfake"
)

// The SSM agent has no local form: its stand-in takes the
// AWS-RunShellScript commands sent to its instance (SendCommand goes on to
// moto, which records it; the lab's endpoint plays the invocation, see
// internal/ssmfake), runs each as the agent does — the commands as a
// script, as root, in the node's namespace — and writes stdout and stderr
// where the agent writes them in the output bucket, then reports the exit
// code. CancelCommand stops the script as the agent does (SIGTERM to its
// process group, SIGKILL after a grace). As Systems Manager does, it
// first replaces {{ssm:NAME}} and {{ssm-secure:NAME}} in the commands by
// the parameter's value (resolve reads it).

// Put writes one object to the bucket (the agent's upload with the
// instance's role).
type Put func(ctx context.Context, bucket, key string, body []byte) error

// Resolve reads a Parameter Store value (decrypted) for {{ssm:NAME}}.
type Resolve func(ctx context.Context, name string) (string, error)

// parameterRef is a parameter reference Systems Manager resolves in a
// command's parameters.
var parameterRef = regexp.MustCompile(`\{\{\s*(ssm|ssm-secure):([^}\s]+)\s*\}\}`)

// agents routes the commands sent to the nodes whose agent runs.
type agents struct {
	once    sync.Once
	mu      sync.Mutex
	nodes   map[string]*Node // by instance id
	put     Put
	resolve Resolve
}

// RunCommand is the lab's Run Command: the commands sent, and how each
// ended.
func (a *AWS) RunCommand() *ssmfake.RunCommand { return a.runCommand }

// StartSSMAgent starts the node's SSM agent stand-in: from now on it runs
// the commands sent to its instance, writing their output with put, the
// parameters they name read with resolve.
func (n *Node) StartSSMAgent(put Put, resolve Resolve) {
	a := n.lab.AWS
	a.agents.mu.Lock()
	if a.agents.nodes == nil {
		a.agents.nodes = map[string]*Node{}
	}
	a.agents.nodes[n.Spec.InstanceID] = n
	a.agents.put, a.agents.resolve = put, resolve
	a.agents.mu.Unlock()
	a.agents.once.Do(func() { go a.dispatch() })
}

// dispatch hands each command to the agent of its instance; a command to
// an instance without one stays pending, as with an agent that is offline.
func (a *AWS) dispatch() {
	for c := range a.runCommand.Sent() {
		a.agents.mu.Lock()
		n, put, resolve := a.agents.nodes[c.Instance], a.agents.put, a.agents.resolve
		a.agents.mu.Unlock()
		if n != nil && c.Document == remote.Document {
			go n.runShellScript(a.runCommand, c, put, resolve)
		}
	}
}

// runShellScript runs one command as the agent does and reports it.
func (n *Node) runShellScript(rc *ssmfake.RunCommand, c *ssmfake.Command, put Put, resolve Resolve) {
	rc.Start(c)
	dir := filepath.Join(n.dir, "ssm", c.ID)
	code := 1
	var stdout, stderr bytes.Buffer
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for stream, b := range map[string][]byte{"stdout": stdout.Bytes(), "stderr": stderr.Bytes()} {
			if len(b) > 0 && c.Bucket != "" {
				if err := put(ctx, c.Bucket, remote.OutputPath(c.Prefix, c.ID, c.Instance, stream), b); err != nil {
					fmt.Fprintf(&stderr, "ssm agent stand-in: uploading %s: %v\n", stream, err)
				}
			}
		}
		rc.Finish(c, code)
	}()
	script := ""
	for _, line := range c.Parameters["commands"] {
		script += line + "\n"
	}
	var unresolved error
	script = parameterRef.ReplaceAllStringFunc(script, func(ref string) string {
		name := parameterRef.FindStringSubmatch(ref)[2]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		v, err := resolve(ctx, name)
		if err != nil {
			unresolved = err
		}
		return v
	})
	if unresolved != nil {
		fmt.Fprintf(&stderr, "ssm agent stand-in: resolving a parameter: %v\n", unresolved)
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(&stderr, err)
		return
	}
	path := filepath.Join(dir, "_script.sh")
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		fmt.Fprintln(&stderr, err)
		return
	}
	args := append([]string{"--net=/var/run/netns/" + n.ns, "--"}, n.lab.Tools.Bash, path)
	cmd := exec.Command(n.lab.Tools.Nsenter, args...)
	cmd.Env, cmd.Dir = n.env, dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(&stderr, err)
		return
	}
	p := &process{name: "ssm-" + c.ID, cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	select {
	case <-p.done:
	case <-c.Cancelled:
		p.stop(5 * time.Second)
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		code = 0
	case errors.As(p.err, &ee) && ee.ExitCode() >= 0:
		code = ee.ExitCode()
	default:
		code = 1
	}
}
