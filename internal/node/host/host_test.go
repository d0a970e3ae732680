package host

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A backup holds the swarm directory and nothing else; restored, it is the
// same files; an archive with anything else is refused.
func TestArchiveRoundTrip(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "swarm", "raft", "wal-v3"), 0o700)
	os.WriteFile(filepath.Join(dir, "swarm", "state.json"), []byte(`{"a":1}`), 0o600)
	os.WriteFile(filepath.Join(dir, "swarm", "raft", "wal-v3", "0.wal"), []byte("wal"), 0o600)
	os.WriteFile(filepath.Join(dir, "other"), []byte("not state"), 0o600)
	b, err := tarGz(dir, "swarm")
	if err != nil {
		t.Fatal(err)
	}
	if err := onlySwarm(b); err != nil {
		t.Fatal(err)
	}
	to := t.TempDir()
	if err := untarGz(b, to); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(to, "swarm", "raft", "wal-v3", "0.wal"))
	if string(got) != "wal" {
		t.Errorf("restored %q", got)
	}
	if _, err := os.Stat(filepath.Join(to, "other")); err == nil {
		t.Error("archived more than the swarm directory")
	}
	for _, name := range []string{"etc/passwd", "swarm/../../etc/passwd", "swarmy/x"} {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: 1, Typeflag: tar.TypeReg})
		tw.Write([]byte("x"))
		tw.Close()
		gz.Close()
		if err := onlySwarm(buf.Bytes()); err == nil || !strings.Contains(err.Error(), "not only a swarm directory") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Redirect adds the rule once, and replaces one that leads elsewhere.
func TestRedirect(t *testing.T) {
	rules := []string{"-P OUTPUT ACCEPT", "-A OUTPUT -d 10.0.1.2/32 -p tcp -m tcp --dport 2377 -j DNAT --to-destination 10.0.1.8:2377"}
	var ran []string
	n := Network{Iptables: func(_ context.Context, args ...string) (string, error) {
		a := strings.Join(args, " ")
		ran = append(ran, a)
		switch {
		case strings.Contains(a, "-S OUTPUT"):
			return strings.Join(rules, "\n") + "\n", nil
		case strings.Contains(a, " -A "):
			rules = append(rules, "-A OUTPUT -d 10.0.1.2/32 -p tcp -m tcp --dport 2377 -j DNAT --to-destination 10.0.1.7:2377")
		case strings.Contains(a, " -D "):
			rules = rules[:1]
		}
		return "", nil
	}}
	ctx := context.Background()
	added, err := n.Redirect(ctx, "10.0.1.2", "10.0.1.7")
	if err != nil || !added {
		t.Fatalf("%v %v", added, err)
	}
	if !strings.Contains(strings.Join(ran, "\n"), "-t nat -D OUTPUT -d 10.0.1.2/32 -p tcp -m tcp --dport 2377 -j DNAT --to-destination 10.0.1.8:2377") {
		t.Errorf("stale rule kept: %v", ran)
	}
	ran = nil
	if added, err := n.Redirect(ctx, "10.0.1.2", "10.0.1.7"); added || err != nil || len(ran) != 1 {
		t.Errorf("again: %v %v %v", added, err, ran)
	}
}
