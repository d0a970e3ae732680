package host

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procState is the state letter of process pid (R, S, T for stopped...).
func procState(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

type fakeEngine struct {
	root  string
	calls *[]string
}

func (e fakeEngine) Wait(context.Context) error { *e.calls = append(*e.calls, "wait"); return nil }
func (e fakeEngine) ForceNewCluster(_ context.Context, a string) error {
	*e.calls = append(*e.calls, "force-new-cluster "+a)
	return nil
}
func (e *fakeEngine) RootDir(context.Context) (string, error) { return e.root, nil }

// The engine is paused for the copy only, and a pause left behind is
// undone.
func TestArchivePausesTheEngine(t *testing.T) {
	proc := exec.Command("sleep", "60")
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Process.Kill(); proc.Wait() })
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "docker.pid")
	os.WriteFile(pidFile, []byte(strconv.Itoa(proc.Process.Pid)+"\n"), 0o600)
	os.MkdirAll(filepath.Join(dir, "swarm"), 0o700)
	os.WriteFile(filepath.Join(dir, "swarm", "state.json"), []byte("{}"), 0o600)
	var calls []string
	b := Backups{Engine: &fakeEngine{root: dir, calls: &calls}, PIDFile: pidFile}
	if _, err := b.Archive(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := procState(t, proc.Process.Pid); s == "T" {
		t.Errorf("the engine is left paused (%s)", s)
	}
	proc.Process.Signal(syscall.SIGSTOP)
	for i := 0; i < 50 && procState(t, proc.Process.Pid) != "T"; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	b.Resume()
	for i := 0; i < 50 && procState(t, proc.Process.Pid) == "T"; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if s := procState(t, proc.Process.Pid); s == "T" {
		t.Errorf("Resume left the engine paused")
	}
	os.WriteFile(pidFile, []byte("1"), 0o600)
	if _, err := b.Archive(context.Background()); err == nil || !strings.Contains(err.Error(), "no engine process") {
		t.Errorf("init taken for the engine: %v", err)
	}
}

// A restore replaces the swarm directory with the engine stopped, forces a
// new cluster on this node's address, and restarts the engine.
func TestRestoreSequence(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "swarm"), 0o700)
	os.WriteFile(filepath.Join(src, "swarm", "state.json"), []byte("backup"), 0o600)
	archive, err := tarGz(src, "swarm")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "swarm"), 0o700)
	os.WriteFile(filepath.Join(root, "swarm", "stale"), []byte("x"), 0o600)
	var calls []string
	b := Backups{Engine: &fakeEngine{root: root, calls: &calls},
		Systemctl: func(_ context.Context, args ...string) error {
			calls = append(calls, "systemctl "+strings.Join(args, " "))
			if args[0] == "start" {
				if got, _ := os.ReadFile(filepath.Join(root, "swarm", "state.json")); string(got) != "backup" {
					t.Errorf("started before the backup was in place")
				}
			}
			return nil
		}}
	if err := b.Restore(context.Background(), archive, "10.0.1.5"); err != nil {
		t.Fatal(err)
	}
	want := "systemctl stop docker|systemctl start docker|wait|force-new-cluster 10.0.1.5|systemctl restart docker|wait"
	if strings.Join(calls, "|") != want {
		t.Errorf("calls %v", calls)
	}
	if _, err := os.Stat(filepath.Join(root, "swarm", "stale")); err == nil {
		t.Error("the old swarm directory was kept")
	}
}
