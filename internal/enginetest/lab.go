// Package enginetest boots nodes through clusterctl's rendered user data
// (the loader, which fetches and runs the node agent) on real Docker
// Engines, for tests.
//
// A Lab is one private bridge with a /24 subnet made for the test run, a
// moto_server listening on the bridge's address, and an AWS endpoint in
// front of it (AWS) that plays what moto does not model (lifecycle actions
// of Auto Scaling groups). Each Node is an instance of that subnet: its own
// network namespace with the instance's private IP, its own instance
// metadata service (IMDSv2), and stand-ins for only what cannot run here:
// the package manager (dnf, which records), cfn-signal (which records) and
// systemctl, which starts the node's Docker Engine (`dockerd` from Debian's
// docker.io, in the node's namespace, with the daemon.json the node agent
// wrote) and runs the systemd units the loader installs. Everything else is
// real: bash, curl, the node agent, the docker CLI, and the AWS CLI (given
// the lab's endpoint) for the Run Command scripts.
//
// Every network object carries the prefix "cce-<owner pid in base 36>-" and
// every directory "clusterctl-enginetest-<owner pid>", so that a run
// removes what an earlier, killed run left behind (Sweep) without touching a
// run still going. Processes are stopped by process id, never by name.
package enginetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clusterctl/clusterctl/internal/motoserver"
)

// Owner prefixes of everything a lab creates.
const (
	linkPrefix = "cce-"                   // links and network namespaces: cce-<pid36>-b, -v<k>, -n<k>
	dirPrefix  = "clusterctl-enginetest-" // directories and iptables comments: ...-<pid>
)

// Tools are the programs a lab runs, resolved once.
type Tools struct {
	Dockerd, Docker, Nsenter, IP, Iptables, Busybox string
	Bash, Curl, Jq, AWS, Python3                    string
}

// Lab is one test network with its AWS endpoint.
type Lab struct {
	Dir     string       // the lab's directory; every node's is below it
	Bridge  string       // the bridge's name
	Subnet  netip.Prefix // the bridge's /24; create the cluster's VPC and subnet with it
	Gateway netip.Addr   // the bridge's address, where moto and the AWS endpoint listen
	MotoURL string       // moto_server itself
	AWS     *AWS         // the endpoint the nodes use: moto, plus lifecycle actions
	Tools   Tools

	tag     string // cce-<pid36>-
	comment string // iptables comment
	moto    *motoserver.Server
	image   string // the busybox image's root file system, as a tar file

	keyMu  sync.Mutex // engines start one at a time until the shared key exists
	mu     sync.Mutex
	nodes  []*Node
	closed bool
}

// Start checks that this machine can run engines (root, docker.io,
// busybox-static, iptables, ...), removes what killed runs left behind, and
// makes the bridge, the forwarding rule, moto on the bridge and the AWS
// endpoint. moto's output goes to log. Close undoes all of it.
func Start(log io.Writer) (*Lab, error) {
	tools, err := lookTools()
	if err != nil {
		return nil, err
	}
	if err := Sweep(); err != nil {
		return nil, fmt.Errorf("removing what earlier runs left behind: %w", err)
	}
	pid := os.Getpid()
	l := &Lab{
		Tools:   tools,
		tag:     linkPrefix + strconv.FormatInt(int64(pid), 36) + "-",
		comment: dirPrefix + strconv.Itoa(pid),
	}
	l.Bridge = l.tag + "b"
	l.Dir = filepath.Join(os.TempDir(), l.comment)
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			l.Close()
		}
	}()
	if err := l.makeBridge(pid); err != nil {
		return nil, err
	}
	if l.moto, err = motoserver.StartOn(l.Gateway.String(), log); err != nil {
		return nil, err
	}
	l.MotoURL = l.moto.URL
	// For Sweep, should this run be killed before it can stop moto.
	if err := os.WriteFile(filepath.Join(l.Dir, "moto.pid"), []byte(strconv.Itoa(l.moto.Pid())), 0o644); err != nil {
		return nil, err
	}
	if l.AWS, err = newAWS(l.Gateway, l.MotoURL); err != nil {
		return nil, err
	}
	// The instance a node's address is, for what AWS answers by the
	// caller's session (the newest node at that address).
	l.AWS.instanceAt = func(ip netip.Addr) string {
		l.mu.Lock()
		defer l.mu.Unlock()
		for k := len(l.nodes) - 1; k >= 0; k-- {
			if l.nodes[k].Spec.IP == ip {
				return l.nodes[k].Spec.InstanceID
			}
		}
		return ""
	}
	if l.image, err = busyboxRootfs(l.Dir, tools.Busybox); err != nil {
		return nil, err
	}
	ok = true
	return l, nil
}

// lookTools finds every program the lab needs and says what to install for
// each one that is missing: tests fail, they never skip.
func lookTools() (Tools, error) {
	if os.Geteuid() != 0 {
		return Tools{}, errors.New("real Docker Engines need root (network namespaces, bridges, iptables, dockerd)")
	}
	var t Tools
	var missing []string
	find := func(dst *string, name, pkg string, candidates ...string) {
		for _, c := range candidates {
			if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
				*dst = c
				return
			}
		}
		p, err := exec.LookPath(name)
		if err != nil {
			missing = append(missing, name+" ("+pkg+")")
			return
		}
		*dst = p
	}
	find(&t.Dockerd, "dockerd", "apt-get install docker.io")
	// The CLI of Debian's docker.io, which matches its engine, even when
	// another docker CLI comes first on PATH.
	find(&t.Docker, "docker", "apt-get install docker.io", "/usr/bin/docker")
	find(&t.Nsenter, "nsenter", "apt-get install util-linux")
	find(&t.IP, "ip", "apt-get install iproute2")
	find(&t.Iptables, "iptables", "apt-get install iptables")
	find(&t.Busybox, "busybox", "apt-get install busybox-static", "/bin/busybox", "/usr/bin/busybox")
	find(&t.Bash, "bash", "apt-get install bash")
	find(&t.Curl, "curl", "apt-get install curl")
	find(&t.Jq, "jq", "apt-get install jq")
	find(&t.AWS, "aws", "pip install awscli")
	find(&t.Python3, "python3", "apt-get install python3")
	for _, name := range []string{"containerd", "runc", "moto_server"} {
		if _, err := exec.LookPath(name); err != nil {
			pkg := "apt-get install docker.io"
			if name == "moto_server" {
				pkg = "pip install 'moto[server]'"
			}
			missing = append(missing, name+" ("+pkg+")")
		}
	}
	if len(missing) > 0 {
		return Tools{}, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	if err := checkStatic(t.Busybox); err != nil {
		return Tools{}, err
	}
	return t, nil
}

// makeBridge picks a free 10.213.x.0/24 (x from the owner's pid, the next
// one when an interface already uses it), makes the bridge with .1 and lets
// its traffic through the FORWARD chain.
func (l *Lab) makeBridge(pid int) error {
	used, err := usedPrefixes()
	if err != nil {
		return err
	}
	for i := 0; i < 250; i++ {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 213, byte(1 + (pid+i)%250), 0}), 24)
		if !overlaps(p, used) {
			l.Subnet = p
			break
		}
	}
	if !l.Subnet.IsValid() {
		return errors.New("no free 10.213.x.0/24 for the test bridge")
	}
	a := l.Subnet.Addr().As4()
	a[3] = 1
	l.Gateway = netip.AddrFrom4(a)
	for _, args := range [][]string{
		{"link", "add", l.Bridge, "type", "bridge"},
		{"addr", "add", l.Gateway.String() + "/24", "dev", l.Bridge},
		{"link", "set", l.Bridge, "up"},
	} {
		if err := l.ip(args...); err != nil {
			return err
		}
	}
	return l.run(l.Tools.Iptables, "-I", "FORWARD", "-i", l.Bridge, "-o", l.Bridge, "-j", "ACCEPT",
		"-m", "comment", "--comment", l.comment)
}

// usedPrefixes returns the IPv4 networks of this machine's interfaces.
func usedPrefixes() ([]netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing interface addresses: %w", err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			out = append(out, p.Masked())
		}
	}
	return out, nil
}

func overlaps(p netip.Prefix, used []netip.Prefix) bool {
	for _, u := range used {
		if u.Overlaps(p) {
			return true
		}
	}
	return false
}

// Addr returns the address of host number n (4 to 254) of the subnet.
func (l *Lab) Addr(n int) netip.Addr {
	a := l.Subnet.Addr().As4()
	a[3] = byte(n)
	return netip.AddrFrom4(a)
}

func (l *Lab) ip(args ...string) error { return l.run(l.Tools.IP, args...) }

// run runs a short administrative command, its output in the error.
func (l *Lab) run(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// Close stops every node, moto and the AWS endpoint, and removes the
// bridge, the rule and the lab's directory. It may be called more than once.
func (l *Lab) Close() {
	l.mu.Lock()
	nodes := l.nodes
	l.nodes = nil
	l.closed = true
	l.mu.Unlock()
	for _, n := range nodes {
		n.Close()
	}
	if l.AWS != nil {
		l.AWS.close()
	}
	if l.moto != nil {
		l.moto.Close()
	}
	removeOwned(os.Getpid())
}
