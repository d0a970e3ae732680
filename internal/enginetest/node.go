package enginetest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NodeRole is the role of every node's instance profile, as its instance
// metadata names it.
const NodeRole = "clusterctl-node"

const roleCredentials = "iam/security-credentials/"

// NodeKeyID is the access key id of the role credentials the instance
// metadata of instance id serves.
func NodeKeyID(id string) string {
	return "ASIA" + strings.ToUpper(strings.NewReplacer("i-", "", "-", "").Replace(id))
}

// NodeSpec describes one instance of the lab's subnet.
type NodeSpec struct {
	Name         string     // a short label for logs: "control", "g-1"
	InstanceID   string     // i-...
	IP           netip.Addr // the instance's private IP, in the lab's subnet
	InstanceType string
	Zone         string
	Lifecycle    string // spot or on-demand (the default), as instance-life-cycle says
	// Metadata holds more instance metadata items by path below
	// latest/meta-data/, e.g. autoscaling/target-lifecycle-state.
	Metadata map[string]string
	Env      []string // more environment for its scripts and units
	// DataRootSize, when set ("1g"), puts the engine's data root on a
	// tmpfs of that size: a file system only this node's engine writes
	// to, whose use a test can compare with what the node reports while
	// other nodes' engines write to the lab's disk.
	DataRootSize string
}

// Node is one instance: a network namespace with the instance's address on
// the lab's bridge, its instance metadata service, its stand-ins, and once
// a script starts it, its Docker Engine and systemd units.
type Node struct {
	Spec NodeSpec

	lab                    *Lab
	dir, root, bin, logdir string
	ns, veth               string
	sock                   string // the engine's socket
	imds                   *metadata
	ctl                    *http.Server // what the systemctl stand-in talks to
	env                    []string

	mu       sync.Mutex
	engine   *process
	imported bool
	units    map[string]*unit
	runs     []*Run
	closed   bool
}

// NewNode creates a node and registers its Close with t.
func (l *Lab) NewNode(t testing.TB, spec NodeSpec) *Node {
	t.Helper()
	n, err := l.newNode(spec)
	if err != nil {
		t.Fatalf("node %s: %v", spec.Name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node %s (%s, %s):\n%s", spec.Name, spec.InstanceID, spec.IP, n.Logs())
		}
		n.Close()
	})
	return n
}

func (l *Lab) newNode(spec NodeSpec) (*Node, error) {
	if !l.Subnet.Contains(spec.IP) || spec.IP == l.Gateway {
		return nil, fmt.Errorf("address %s is not a host of %s", spec.IP, l.Subnet)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errors.New("the lab is closed")
	}
	k := len(l.nodes)
	n := &Node{Spec: spec, lab: l, units: map[string]*unit{}}
	l.nodes = append(l.nodes, n)
	l.mu.Unlock()

	n.dir = filepath.Join(l.Dir, fmt.Sprint(k))
	n.root, n.bin, n.logdir = filepath.Join(n.dir, "root"), filepath.Join(n.dir, "bin"), filepath.Join(n.dir, "log")
	n.sock = filepath.Join(n.dir, "docker.sock")
	n.ns, n.veth = fmt.Sprintf("%sn%d", l.tag, k), fmt.Sprintf("%sv%d", l.tag, k)
	for _, d := range []string{n.root, n.bin, n.logdir, filepath.Join(n.dir, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if spec.DataRootSize != "" {
		root := filepath.Join(n.dir, "docker")
		if err := os.MkdirAll(root, 0o711); err != nil {
			return nil, err
		}
		// Close's unmountUnder takes it down with the engine's mounts.
		if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "size="+spec.DataRootSize+",mode=0711"); err != nil {
			return nil, fmt.Errorf("a tmpfs for the data root: %w", err)
		}
	}
	if err := n.makeNetwork(); err != nil {
		return nil, err
	}
	items := map[string]string{
		"instance-id":                 spec.InstanceID,
		"local-ipv4":                  spec.IP.String(),
		"instance-type":               spec.InstanceType,
		"placement/availability-zone": spec.Zone,
		"instance-life-cycle":         cmp.Or(spec.Lifecycle, "on-demand"),
	}
	// The instance profile's role and its temporary credentials, as EC2
	// serves them: what the node's engine signs its awslogs calls with.
	// The key id names the node, so a test tells whose calls it sees.
	items[roleCredentials] = NodeRole
	items[roleCredentials+NodeRole] = fmt.Sprintf(`{"Code":"Success","LastUpdated":%q,"Type":"AWS-HMAC","AccessKeyId":%q,"SecretAccessKey":"node-secret","Token":"node-token","Expiration":%q}`,
		time.Now().UTC().Format(time.RFC3339), NodeKeyID(spec.InstanceID), time.Now().Add(6*time.Hour).UTC().Format(time.RFC3339))
	for k, v := range spec.Metadata {
		items[k] = v
	}
	var err error
	if n.imds, err = newMetadata(l.Gateway, items); err != nil {
		return nil, err
	}
	if err := n.startControl(); err != nil {
		return nil, err
	}
	if err := n.writeStandIns(); err != nil {
		return nil, err
	}
	n.env = append(baseEnv(),
		"PATH="+n.bin+":"+os.Getenv("PATH"),
		"HOME="+filepath.Join(n.dir, "home"),
		"DOCKER_HOST=unix://"+n.sock,
		"CLUSTERCTL_IMDS_URL="+n.imds.url,
		"CLUSTERCTL_ROOT="+n.root,
		// The engines' awslogs driver ships to the lab's endpoint too.
		"CLUSTERCTL_LOGS_ENDPOINT="+l.AWS.URL,
		"AWS_ENDPOINT_URL="+l.AWS.URL,
		"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true",
	)
	n.env = append(n.env, spec.Env...)
	return n, nil
}

// baseEnv is this process's environment without AWS, Docker or clusterctl
// settings.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "CLUSTERCTL_") && !strings.HasPrefix(kv, "DOCKER_") &&
			!strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return env
}

// makeNetwork creates the node's namespace with eth0 on the bridge.
func (n *Node) makeNetwork() error {
	l, ip := n.lab, n.Spec.IP.String()+"/24"
	for _, args := range [][]string{
		{"netns", "add", n.ns},
		{"link", "add", n.veth, "type", "veth", "peer", "name", "eth0", "netns", n.ns},
		{"link", "set", n.veth, "master", l.Bridge, "up"},
		{"-n", n.ns, "addr", "add", ip, "dev", "eth0"},
		{"-n", n.ns, "link", "set", "eth0", "up"},
		{"-n", n.ns, "link", "set", "lo", "up"},
		{"-n", n.ns, "route", "add", "default", "via", l.Gateway.String()},
	} {
		if err := l.ip(args...); err != nil {
			return err
		}
	}
	return nil
}

// recordShim stands in for dnf and cfn-signal: it records its arguments
// and succeeds, unless a file fail-<program> exists in the node's
// directory.
const recordShim = `#!/bin/bash
set -euo pipefail
prog=$(basename "$0")
line=$(printf '%s' "$prog"; printf ' %q' "$@")
printf '%s\n' "$line" >>'@DIR@/calls'
if [ -e "@DIR@/fail-$prog" ]; then
  echo "$prog: failing as the test asked" >&2
  exit 1
fi
`

// systemctlShim records its arguments and hands them to the harness, which
// plays systemd for this node: an HTTP status 200+N means exit code N.
const systemctlShim = `#!/bin/bash
set -uo pipefail
{ printf 'systemctl'; printf ' %q' "$@"; printf '\n'; } >>'@DIR@/calls'
out=$(mktemp)
code=$(printf '%s\n' "$@" | curl -sS --unix-socket '@DIR@/systemctl.sock' --max-time 180 \
  -o "$out" -w '%{http_code}' --data-binary @- http://systemd/) || { rm -f "$out"; exit 1; }
cat "$out"
rm -f "$out"
if [ "$code" -ge 200 ] && [ "$code" -le 299 ]; then
  exit $((code - 200))
fi
exit 1
`

// awsShim is the real AWS CLI, given the lab's endpoint on its command
// line: the AWS CLI v1 of Debian and pip ignores AWS_ENDPOINT_URL for SQS
// (it names the regional queue.amazonaws.com endpoint itself).
const awsShim = `#!/bin/bash
exec '@AWS@' --endpoint-url "$AWS_ENDPOINT_URL" "$@"
`

func (n *Node) writeStandIns() error {
	for name, body := range map[string]string{"dnf": recordShim, "cfn-signal": recordShim, "systemctl": systemctlShim, "aws": awsShim} {
		body = strings.ReplaceAll(body, "@AWS@", n.lab.Tools.AWS)
		body = strings.ReplaceAll(body, "@DIR@", n.dir)
		if err := os.WriteFile(filepath.Join(n.bin, name), []byte(body), 0o755); err != nil {
			return err
		}
	}
	return os.Symlink(n.lab.Tools.Docker, filepath.Join(n.bin, "docker"))
}

// Root returns the path of a file of the node's file system.
func (n *Node) Root(path string) string { return filepath.Join(n.root, path) }

// Dir is the node's directory: create fail-<program> there to make a
// stand-in fail.
func (n *Node) Dir() string { return n.dir }

// SetMetadata sets one instance metadata item, e.g. what Auto Scaling sets
// when it starts terminating the instance.
func (n *Node) SetMetadata(path, value string) { n.imds.set(path, value) }

// Calls returns the recorded calls of program (dnf, cfn-signal, systemctl),
// one per line, arguments shell-quoted.
func (n *Node) Calls(program string) []string {
	b, err := os.ReadFile(filepath.Join(n.dir, "calls"))
	if err != nil {
		return nil
	}
	return calls(string(b), program)
}

// calls are the complete lines of a record of calls that are program's,
// with its name cut off. A line without its newline is still being
// written: read then, a call would seem to have no arguments.
func calls(record, program string) []string {
	var out []string
	for {
		l, rest, ok := strings.Cut(record, "\n")
		if !ok {
			return out
		}
		record = rest
		if args, ok := strings.CutPrefix(l, program+" "); ok {
			out = append(out, args)
		} else if l == program {
			out = append(out, "")
		}
	}
}

// Run is one execution of a script on a node.
type Run struct {
	p   *process
	out *syncBuffer
}

// Boot runs a user data script as cloud-init does: as root, in the
// node's namespace, in the background.
func (n *Node) Boot(name, script string) (*Run, error) {
	path := filepath.Join(n.dir, name)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return nil, err
	}
	return n.Exec(name, path)
}

// Exec runs an executable file of the node as Boot does, e.g. a script
// that cloud-init runs on every boot.
func (n *Node) Exec(name, path string) (*Run, error) {
	out := &syncBuffer{}
	p, err := n.spawn(name, out, n.env, path)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.runs = append(n.runs, &Run{p: p, out: out})
	r := n.runs[len(n.runs)-1]
	n.mu.Unlock()
	return r, nil
}

// Done is closed when the script has ended.
func (r *Run) Done() <-chan struct{} { return r.p.done }

// Output returns what the script printed so far.
func (r *Run) Output() string { return r.out.String() }

// Wait waits for the script (at most until ctx ends) and returns its exit
// code (-1 when killed or still running) and output.
func (r *Run) Wait(ctx context.Context) (int, string) {
	select {
	case <-r.p.done:
	case <-ctx.Done():
		return -1, r.out.String()
	}
	var ee *exec.ExitError
	switch {
	case r.p.err == nil:
		return 0, r.out.String()
	case errors.As(r.p.err, &ee):
		return ee.ExitCode(), r.out.String()
	}
	return -1, r.out.String()
}

// PowerOff is what terminating the instance does to the node: every
// process of it (scripts, units, the engine, its containers) is killed at
// once. Its network stays, so the test can still look at it.
func (n *Node) PowerOff() {
	n.mu.Lock()
	units := make([]*unit, 0, len(n.units))
	for _, u := range n.units {
		units = append(units, u)
		u.stopping = true
	}
	n.engine = nil
	n.mu.Unlock()
	killTree(processesUsing(n.dir + "/"))
	for _, u := range units {
		u.wait()
	}
}

// Close stops the node (the engine gracefully first, so it stops its
// containers), and removes its mounts, namespace and link.
func (n *Node) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	engine := n.engine
	units := make([]*unit, 0, len(n.units))
	for _, u := range n.units {
		units = append(units, u)
		u.stopping = true
	}
	runs := n.runs
	n.mu.Unlock()
	// No graceful shutdown: nothing of a test node needs to be kept, and
	// engines take seconds to stop their containers.
	killTree(processesUsing(n.dir + "/"))
	for _, r := range runs {
		<-r.p.done
	}
	for _, u := range units {
		u.wait()
	}
	if engine != nil {
		<-engine.done
	}
	unmountUnder(n.dir)
	if n.ctl != nil {
		n.ctl.Close()
	}
	if n.imds != nil {
		n.imds.close()
	}
	exec.Command(n.lab.Tools.IP, "netns", "del", n.ns).Run()
	exec.Command(n.lab.Tools.IP, "link", "del", n.veth).Run()
}

// Logs returns the end of the node's logs: scripts, units and engine.
func (n *Node) Logs() string {
	var b strings.Builder
	n.mu.Lock()
	runs := n.runs
	n.mu.Unlock()
	for _, r := range runs {
		fmt.Fprintf(&b, "--- %s\n%s\n", r.p.name, tail(r.out.String(), 6000))
	}
	entries, _ := os.ReadDir(n.logdir)
	for _, e := range entries {
		body, _ := os.ReadFile(filepath.Join(n.logdir, e.Name()))
		limit := 6000
		if e.Name() == "docker.log" {
			limit = 2500
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", e.Name(), tail(string(body), limit))
	}
	// What each unit is doing now, and the node's last calls to AWS: a
	// unit that stopped making progress shows where it waits.
	n.mu.Lock()
	var procs []*process
	for _, u := range n.units {
		if u.proc != nil {
			procs = append(procs, u.proc)
		}
	}
	n.mu.Unlock()
	for _, p := range procs {
		select {
		case <-p.done:
			continue
		default:
		}
		fmt.Fprintf(&b, "--- processes of %s now\n%s", p.name, groupProcesses(p.cmd.Process.Pid))
	}
	var calls []string
	for _, c := range n.lab.AWS.Calls() {
		if c.From == n.Spec.IP {
			calls = append(calls, fmt.Sprintf("%s %s %s", c.Time.Format("15:04:05.0"), c.Service, c.Action))
		}
	}
	fmt.Fprintf(&b, "--- last calls to AWS (%d in all)\n%s\n", len(calls), strings.Join(calls[max(0, len(calls)-15):], "\n"))
	return b.String()
}

// groupProcesses lists the processes of a process group, each with its
// age and command line, from /proc.
func groupProcesses(pgid int) string {
	entries, _ := os.ReadDir("/proc")
	var b strings.Builder
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err != nil || g != pgid {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Fields(strings.ReplaceAll(string(cmdline), "\x00", " "))
		age := "?"
		if d, ok := processAge(e.Name()); ok {
			age = d.Round(time.Second).String()
		}
		fmt.Fprintf(&b, "%d %s %s\n", pid, age, strings.Join(args, " "))
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// process is one process the harness started, in its own process group.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// spawn starts argv in the node's namespace with env, its output to out.
func (n *Node) spawn(name string, out interface{ Write([]byte) (int, error) }, env []string, argv ...string) (*process, error) {
	args := append([]string{"--net=/var/run/netns/" + n.ns, "--"}, argv...)
	cmd := exec.Command(n.lab.Tools.Nsenter, args...)
	cmd.Env = env
	cmd.Dir = n.dir
	cmd.Stdout, cmd.Stderr = out, out
	// Its own group, so that the harness can stop it with its children; and
	// killed with the test process rather than left running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) {
	pgid := -p.cmd.Process.Pid
	syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		syscall.Kill(pgid, syscall.SIGKILL)
		<-p.done
	}
	syscall.Kill(pgid, syscall.SIGKILL) // what is left of the group
}

// stopMain sends SIGTERM to the process alone (dockerd stops its
// containerd itself), then SIGKILL to its group after grace.
func (p *process) stopMain(grace time.Duration) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// metadata is an instance metadata service that, like EC2's with
// HttpTokens required, answers only requests carrying a session token.
type metadata struct {
	url   string
	srv   *http.Server
	mu    sync.Mutex
	items map[string]string
}

func newMetadata(gateway netip.Addr, items map[string]string) (*metadata, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(gateway.String(), "0"))
	if err != nil {
		return nil, fmt.Errorf("instance metadata: %w", err)
	}
	m := &metadata{url: "http://" + ln.Addr().String(), items: items}
	token := uuid()
	m.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/latest/api/token" {
			if r.Method != http.MethodPut || r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds") == "" {
				http.Error(w, "", http.StatusBadRequest)
				return
			}
			// As IMDS does: SDKs read the token's lifetime from it.
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds"))
			fmt.Fprint(w, token)
			return
		}
		if r.Header.Get("X-aws-ec2-metadata-token") != token {
			http.Error(w, "", http.StatusUnauthorized)
			return
		}
		m.mu.Lock()
		v, ok := m.items[strings.TrimPrefix(r.URL.Path, "/latest/meta-data/")]
		m.mu.Unlock()
		if !ok || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, v)
	})}
	go m.srv.Serve(ln)
	return m, nil
}

func (m *metadata) set(path, value string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items[path] = value
}

func (m *metadata) close() { m.srv.Close() }
