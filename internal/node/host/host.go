// Package host connects the node agent's logic (internal/node) to the
// node itself: the engine's process and files (backups and restores of
// the swarm state), systemd, the network (the managers' addresses), the
// instance metadata and CloudFormation's signal.
package host

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Engine is what backups need of the engine beyond its files.
type Engine interface {
	Wait(ctx context.Context) error
	ForceNewCluster(ctx context.Context, advertise string) error
	RootDir(ctx context.Context) (string, error)
}

// Backups satisfies node.Backups on a node whose engine runs under
// systemd with its pid in PIDFile.
type Backups struct {
	Engine  Engine
	PIDFile string // /var/run/docker.pid
	// Systemctl runs systemctl; the real one by default.
	Systemctl func(ctx context.Context, args ...string) error
}

func (b Backups) systemctl(ctx context.Context, args ...string) error {
	if b.Systemctl != nil {
		return b.Systemctl(ctx, args...)
	}
	out, err := exec.CommandContext(ctx, "systemctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (b Backups) pid() (int, error) {
	s, err := os.ReadFile(b.PIDFile)
	if err != nil {
		return 0, fmt.Errorf("no engine process to pause for the backup: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(s)))
	if err != nil || pid <= 1 || syscall.Kill(pid, 0) != nil {
		return 0, fmt.Errorf("no engine process to pause for the backup")
	}
	return pid, nil
}

// Archive copies the engine's swarm directory with the engine paused for
// the moment it takes, not stopped: it is what a power loss at that
// instant would leave, which the swarm's write-ahead log recovers from,
// and neither the scheduling nor the agents' sessions notice.
func (b Backups) Archive(ctx context.Context) ([]byte, error) {
	root, err := b.Engine.RootDir(ctx)
	if err != nil {
		return nil, err
	}
	pid, err := b.pid()
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, err
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	return tarGz(root, "swarm")
}

// Resume lets the engine run, should a pause have outlived the agent that
// made it (killed during the copy).
func (b Backups) Resume() {
	if pid, err := b.pid(); err == nil {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
}

// Restore makes this engine the single manager of the swarm backed up in
// archive: Docker's procedure, the engine stopped while its swarm
// directory is replaced, then the swarm forced anew on this node's
// address; and the engine restarted, so that the restored membership
// takes its new address.
func (b Backups) Restore(ctx context.Context, archive []byte, advertise string) error {
	if err := onlySwarm(archive); err != nil {
		return err
	}
	root, err := b.Engine.RootDir(ctx)
	if err != nil {
		return err
	}
	if err := b.systemctl(ctx, "stop", "docker"); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(root, "swarm")); err != nil {
		return err
	}
	if err := untarGz(archive, root); err != nil {
		return err
	}
	if err := b.systemctl(ctx, "start", "docker"); err != nil {
		return err
	}
	if err := b.Engine.Wait(ctx); err != nil {
		return err
	}
	if err := b.Engine.ForceNewCluster(ctx, advertise); err != nil {
		return err
	}
	if err := b.systemctl(ctx, "restart", "docker"); err != nil {
		return err
	}
	return b.Engine.Wait(ctx)
}

// tarGz archives dir/sub with paths relative to dir.
func tarGz(dir, sub string) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	err := filepath.WalkDir(filepath.Join(dir, sub), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // sockets and the like are not state
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(tw, f, h.Size)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = gz.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("archiving the swarm state: %w", err)
	}
	return buf.Bytes(), nil
}

// onlySwarm refuses an archive with anything but the swarm directory.
func onlySwarm(archive []byte) error {
	return walkTar(archive, func(h *tar.Header, _ io.Reader) error {
		name := strings.TrimPrefix(h.Name, "./")
		if name != "swarm" && name != "swarm/" && !strings.HasPrefix(name, "swarm/") || strings.Contains(name, "..") ||
			h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir {
			return fmt.Errorf("refusing the backup of the swarm state: not only a swarm directory (%q)", h.Name)
		}
		return nil
	})
}

func walkTar(archive []byte, f func(*tar.Header, io.Reader) error) error {
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return fmt.Errorf("the backup of the swarm state: %w", err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the backup of the swarm state: %w", err)
		}
		if err := f(h, tr); err != nil {
			return err
		}
	}
}

func untarGz(archive []byte, dir string) error {
	return walkTar(archive, func(h *tar.Header, r io.Reader) error {
		path := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(h.Name, "./")))
		if h.Typeflag == tar.TypeDir {
			return os.MkdirAll(path, os.FileMode(h.Mode)&0o777|0o700)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// Network satisfies node.Network: TCP connects, and iptables rules in the
// nat table's OUTPUT chain.
type Network struct {
	// Iptables runs iptables and returns its output; the real one by default.
	Iptables func(ctx context.Context, args ...string) (string, error)
}

// Answers tells whether something listens at addr.
func (Network) Answers(ctx context.Context, addr string) bool {
	d := net.Dialer{Timeout: 3 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func (n Network) iptables(ctx context.Context, args ...string) (string, error) {
	if n.Iptables != nil {
		return n.Iptables(ctx, args...)
	}
	out, err := exec.CommandContext(ctx, "iptables", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Redirect makes local connections to the swarm port of known go to real,
// removing rules for known that lead elsewhere.
func (n Network) Redirect(ctx context.Context, known, real string) (bool, error) {
	const port = "2377"
	rules, err := n.iptables(ctx, "-t", "nat", "-S", "OUTPUT")
	if err != nil {
		return false, err
	}
	want := "--to-destination " + real + ":" + port
	found := false
	for _, r := range strings.Split(rules, "\n") {
		f := strings.Fields(r)
		if len(f) < 3 || f[0] != "-A" || !strings.Contains(r, "-d "+known+"/32 ") {
			continue
		}
		if strings.HasSuffix(strings.TrimSpace(r), want) {
			found = true
			continue
		}
		if _, err := n.iptables(ctx, append([]string{"-t", "nat", "-D"}, f[1:]...)...); err != nil {
			return false, err
		}
	}
	if found {
		return false, nil
	}
	_, err = n.iptables(ctx, "-t", "nat", "-A", "OUTPUT", "-p", "tcp", "-d", known, "--dport", port, "-j", "DNAT", "--to-destination", real+":"+port)
	return err == nil, err
}
