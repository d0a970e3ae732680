package enginetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The harness plays systemd for each node. The systemctl stand-in sends
// its arguments here; the answer's status 200+N is its exit code N.
//
// docker.service is the node's Docker Engine: dockerd in the node's
// namespace with the daemon.json the script wrote, its own data root, exec
// root, pidfile and socket, and --iptables=false. Other units are read from
// the node's /etc/systemd/system: ExecStart (an absolute path is looked up
// below the node's root first), Environment, Restart and RestartSec. They
// run in the node's namespace with the node's environment.

func (n *Node) startControl() error {
	path := filepath.Join(n.dir, "systemctl.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("systemctl stand-in: %w", err)
	}
	n.ctl = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		args := strings.Fields(string(body))
		code, msg := n.systemctl(r.Context(), args)
		w.WriteHeader(200 + code)
		fmt.Fprint(w, msg)
	})}
	go n.ctl.Serve(ln)
	return nil
}

// systemctl does what systemctl args would, and returns its exit code and
// output.
func (n *Node) systemctl(ctx context.Context, args []string) (int, string) {
	var verb string
	var now bool
	var units []string
	for _, a := range args {
		switch {
		case a == "--now":
			now = true
		case strings.HasPrefix(a, "-"):
		case verb == "":
			verb = a
		default:
			units = append(units, a)
		}
	}
	fail := func(err error) (int, string) { return 1, err.Error() + "\n" }
	switch verb {
	case "daemon-reload":
		return 0, ""
	case "is-active":
		for _, u := range units {
			if !n.active(u) {
				return 3, "inactive\n"
			}
		}
		return 0, "active\n"
	case "enable", "start", "restart":
		for _, u := range units {
			if verb == "enable" && !now {
				continue
			}
			if err := n.startUnit(ctx, u, verb == "restart"); err != nil {
				return fail(err)
			}
		}
		return 0, ""
	case "disable", "stop":
		for _, u := range units {
			if verb == "disable" && !now {
				continue
			}
			n.stopUnit(u)
		}
		return 0, ""
	}
	return 1, fmt.Sprintf("systemctl stand-in: %q is not supported\n", strings.Join(args, " "))
}

func unitName(u string) string {
	if !strings.Contains(u, ".") {
		return u + ".service"
	}
	return u
}

// RestartUnit restarts a unit as `systemctl restart` would.
func (n *Node) RestartUnit(ctx context.Context, name string) error {
	return n.startUnit(ctx, name, true)
}

// UnitRestarts returns how many times the unit's process has ended and was
// started again (by Restart= or a restart).
func (n *Node) UnitRestarts(name string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if u := n.units[unitName(name)]; u != nil {
		return u.starts - 1
	}
	return 0
}

func (n *Node) active(name string) bool {
	name = unitName(name)
	n.mu.Lock()
	defer n.mu.Unlock()
	if name == "docker.service" {
		return n.engine != nil
	}
	u := n.units[name]
	return u != nil && !u.stopping
}

func (n *Node) startUnit(ctx context.Context, name string, restart bool) error {
	name = unitName(name)
	if name == "docker.service" {
		if restart {
			n.stopEngine()
		}
		return n.startEngine(ctx)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return errors.New("the node is shut down")
	}
	old := n.units[name]
	n.mu.Unlock()
	if old != nil {
		if !restart && !old.isStopping() {
			return nil
		}
		old.stop(5 * time.Second)
	}
	u, err := n.readUnit(name)
	if err != nil {
		return err
	}
	n.mu.Lock()
	if old != nil {
		u.starts = old.starts
	}
	n.units[name] = u
	n.mu.Unlock()
	// Started when systemctl returns, as with Type=simple.
	p, err := u.start()
	if err != nil {
		close(u.ended)
		return err
	}
	go u.supervise(p)
	return nil
}

func (n *Node) stopUnit(name string) {
	name = unitName(name)
	if name == "docker.service" {
		n.stopEngine()
		return
	}
	n.mu.Lock()
	u := n.units[name]
	n.mu.Unlock()
	if u != nil {
		u.stop(5 * time.Second)
	}
}

// unit is one running systemd service.
type unit struct {
	name       string
	node       *Node
	argv       []string
	env        []string
	restart    string // no, always, on-failure
	restartSec time.Duration
	log        string

	// guarded by node.mu
	proc     *process
	starts   int
	stopping bool
	ended    chan struct{} // closed when the supervisor has returned
}

// readUnit parses the node's unit file.
func (n *Node) readUnit(name string) (*unit, error) {
	path := filepath.Join(n.root, "etc/systemd/system", name)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("unit %s: %w", name, err)
	}
	defer f.Close()
	u := &unit{name: name, node: n, env: append([]string(nil), n.env...), restart: "no", restartSec: 100 * time.Millisecond,
		log: filepath.Join(n.logdir, strings.TrimSuffix(name, ".service")+".log"), ended: make(chan struct{})}
	s := bufio.NewScanner(f)
	for s.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(s.Text()), "=")
		if !ok {
			continue
		}
		switch key {
		case "ExecStart":
			u.argv = strings.Fields(value)
		case "Environment":
			u.env = append(u.env, strings.Fields(value)...)
		case "Restart":
			u.restart = value
		case "RestartSec":
			sec, err := strconv.ParseFloat(strings.TrimSuffix(value, "s"), 64)
			if err != nil {
				return nil, fmt.Errorf("unit %s: RestartSec %q", name, value)
			}
			// The harness restarts at once: the tests wait for outcomes,
			// and a unit must cope with restarting quickly anyway.
			u.restartSec = time.Duration(min(sec, 1) * float64(time.Second))
		}
	}
	if len(u.argv) == 0 {
		return nil, fmt.Errorf("unit %s has no ExecStart", name)
	}
	if filepath.IsAbs(u.argv[0]) {
		if _, err := os.Stat(filepath.Join(n.root, u.argv[0])); err == nil {
			u.argv[0] = filepath.Join(n.root, u.argv[0])
		}
	}
	return u, nil
}

// start starts the unit's process, unless the unit is stopping.
func (u *unit) start() (*process, error) {
	u.node.mu.Lock()
	defer u.node.mu.Unlock()
	if u.stopping || u.node.closed {
		return nil, errors.New("stopped")
	}
	logf, err := os.OpenFile(u.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logf, "=== %s started\n", time.Now().Format(time.TimeOnly))
	// Each line stamped with the time it was written, as journald does: a
	// failed test's dump then says when each step happened.
	r, w, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	go stampLines(r, logf)
	p, err := u.node.spawn(u.name, w, u.env, u.argv...)
	w.Close() // the process has its own descriptor
	if err != nil {
		fmt.Fprintf(logf, "=== %v\n", err)
		return nil, err
	}
	u.proc = p
	u.starts++
	return p, nil
}

// supervise waits for the unit's process p to end and starts it again when
// Restart= says so, until the unit is stopped.
func (u *unit) supervise(p *process) {
	defer close(u.ended)
	for {
		<-p.done
		if logf, err := os.OpenFile(u.log, os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			fmt.Fprintf(logf, "=== %s ended: %v\n", time.Now().Format(time.TimeOnly), p.err)
			logf.Close()
		}
		u.node.mu.Lock()
		stop := u.stopping || u.node.closed || u.restart == "no" || (u.restart == "on-failure" && p.err == nil)
		u.node.mu.Unlock()
		if stop {
			return
		}
		time.Sleep(u.restartSec)
		var err error
		if p, err = u.start(); err != nil {
			return
		}
	}
}

// stampLines copies r to out line by line, each line after the time it
// was read, until every writer of r has closed it.
func stampLines(r, out *os.File) {
	defer out.Close()
	defer r.Close()
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		fmt.Fprintf(out, "%s %s\n", time.Now().Format("15:04:05.0"), s.Text())
	}
}

func (u *unit) isStopping() bool {
	u.node.mu.Lock()
	defer u.node.mu.Unlock()
	return u.stopping
}

// stop stops the unit: SIGTERM to its process group, SIGKILL after grace.
func (u *unit) stop(grace time.Duration) {
	u.node.mu.Lock()
	u.stopping = true
	p := u.proc
	u.node.mu.Unlock()
	if p != nil {
		p.stop(grace)
	}
	u.wait()
}

func (u *unit) wait() {
	select {
	case <-u.ended:
	case <-time.After(30 * time.Second):
	}
}

// startEngine starts the node's Docker Engine unless it runs, waits until
// it answers, and imports the test image into it the first time.
func (n *Node) startEngine(ctx context.Context) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return errors.New("the node is shut down")
	}
	if n.engine != nil {
		n.mu.Unlock()
		return nil
	}
	n.mu.Unlock()
	// The engines share /etc/docker/key.json, which the first one to start
	// creates: until it exists, engines start one at a time.
	if !fileExists(trustKey) {
		n.lab.keyMu.Lock()
		defer n.lab.keyMu.Unlock()
	}
	n.mu.Lock()
	if n.closed || n.engine != nil {
		n.mu.Unlock()
		return nil
	}
	logf, err := os.OpenFile(filepath.Join(n.logdir, "docker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.mu.Unlock()
		return err
	}
	defer logf.Close()
	args := []string{n.lab.Tools.Dockerd}
	if conf := filepath.Join(n.root, "etc/docker/daemon.json"); fileExists(conf) {
		args = append(args, "--config-file", conf)
	}
	args = append(args,
		"--data-root", filepath.Join(n.dir, "docker"),
		"--exec-root", filepath.Join(n.dir, "exec"),
		// Where a node's engine has it (below the node's root), for the
		// scripts that pause the engine.
		"--pidfile", filepath.Join(n.root, "var/run/docker.pid"),
		"--host", "unix://"+n.sock,
		"--iptables=false")
	p, err := n.spawn("dockerd", logf, n.engineEnv(), args...)
	if err != nil {
		n.mu.Unlock()
		return err
	}
	n.engine = p
	n.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	client := n.engineClient()
	client.Timeout = 2 * time.Second
	for {
		resp, err := client.Get("http://docker/_ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("dockerd exited: %v (see %s)", p.err, logf.Name())
		case <-ctx.Done():
			return fmt.Errorf("dockerd did not answer within 60 s (see %s)", logf.Name())
		case <-time.After(100 * time.Millisecond):
		}
	}
	n.mu.Lock()
	imported := n.imported
	n.mu.Unlock()
	if !imported {
		if _, err := n.Docker(ctx, "import", n.lab.image, Image); err != nil {
			return fmt.Errorf("importing the test image: %w", err)
		}
		n.mu.Lock()
		n.imported = true
		n.mu.Unlock()
	}
	return nil
}

// stopEngine stops the engine as systemd does: SIGTERM, and after a grace
// period every process left of it.
func (n *Node) stopEngine() {
	p := n.takeEngine()
	if p == nil {
		return
	}
	p.stopMain(20 * time.Second)
	killTree(processesUsing(filepath.Join(n.dir, "exec") + "/"))
}

// takeEngine returns the node's engine process, if one runs, and forgets
// it: whoever takes it stops it.
func (n *Node) takeEngine() *process {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.engine
	n.engine = nil
	return p
}

// StopEngine stops the node's engine (systemctl stop docker).
func (n *Node) StopEngine() { n.stopEngine() }

// KillEngine kills the node's engine and everything it runs at once, as a
// crash would; the node's units keep running.
func (n *Node) KillEngine() {
	p := n.takeEngine()
	if p == nil {
		return
	}
	killTree(append(processesUsing(filepath.Join(n.dir, "exec")+"/"), p.cmd.Process.Pid))
	<-p.done
}

// trustKey is dockerd's key, shared by the engines of this machine.
const trustKey = "/etc/docker/key.json"

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// engineEnv is the engine's environment: the node's, but that its AWS
// calls (the awslogs driver's) are signed with the instance role's
// credentials from the node's instance metadata, as on an instance, not
// with the test's.
func (n *Node) engineEnv() []string {
	var env []string
	for _, kv := range n.env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_EC2_METADATA_DISABLED":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT="+n.imds.url,
		// There is no registry here: swarm tasks use the image the engine
		// has instead of trying to pull it first (which fails only after
		// DNS timeouts).
		"DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1")
}
