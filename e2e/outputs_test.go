package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// export writes a file as docs/cluster-files.md shows them: the schema line first,
// the settings at their default left out.
func TestExportLeavesDefaultsOut(t *testing.T) {
	parallel(t)
	newCluster(t, "a")
	r := must(t, "export", "core")
	if !strings.HasPrefix(r.stdout, "# yaml-language-server: $schema=clusterctl.schema.json\n") {
		t.Errorf("export does not start with the schema line:\n%s", r)
	}
	for _, dflt := range []string{"managers: 1", "volumeSize: 20", "volumeSize: 30", "min: 0"} {
		if strings.Contains(r.stdout, dflt) {
			t.Errorf("export writes the default %q:\n%s", dflt, r)
		}
	}
}

// A group whose types are not offered in one of the core's zones is told
// so once per zone, naming every type, also when apply checks it before
// and while creating it; and only when it is news.
func TestZoneNoteOnce(t *testing.T) {
	parallel(t)
	resetMoto(t)
	must(t, "create-core", "core", "-q")
	r := must(t, "add-agents", "-n", "c", "-t", "c5.large,c5.xlarge", "-j", "core", "-q")
	if n := strings.Count(r.stderr, "us-east-1e"); n != 1 || !strings.Contains(r.stderr, "c5.large, c5.xlarge are not offered in us-east-1e") {
		t.Errorf("add-agents: %d notes of us-east-1e:\n%s", n, r)
	}
	path := filepath.Join(t.TempDir(), "core.yaml")
	file := "apiVersion: clusterctl/v1\nkind: Cluster\nname: core\ngroups:\n  - name: c\n    instanceType: [c5.large, c5.xlarge]\n  - name: d\n    instanceType: c5.large\n"
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	r = must(t, "apply", "-f", path, "-q")
	if n := strings.Count(r.stderr, "us-east-1e"); n != 1 || !strings.Contains(r.stderr, "group d: c5.large is not offered in us-east-1e") {
		t.Errorf("apply: %d notes of us-east-1e, want one, for the new group d (c is unchanged):\n%s", n, r)
	}
	// Said when news only: not again for an update that keeps the types,
	// nor for a no-op apply of the live cluster, which uploads nothing
	// either; again when the types change.
	r = must(t, "update-group", "-n", "c", "-j", "core", "-c", "2", "--yes", "-q")
	if strings.Contains(r.stderr, "us-east-1e") || strings.Contains(r.stderr, "Uploading") {
		t.Errorf("update-group -c 2 says again what is no news:\n%s", r)
	}
	r = clusterctlShell(t, "clusterctl export core | clusterctl apply -f - -q")
	if r.code != 0 || strings.Contains(r.stderr, "us-east-1e") || strings.Contains(r.stderr, "Uploading") {
		t.Errorf("a no-op export | apply:\n%s", r)
	}
	r = must(t, "update-group", "-n", "d", "-j", "core", "-t", "c5.xlarge", "--yes", "-q")
	if n := strings.Count(r.stderr, "us-east-1e"); n != 1 {
		t.Errorf("update-group -t: %d notes of us-east-1e, want 1:\n%s", n, r)
	}
}

// clusterctlShell runs a bash command line with the binary under test first
// on PATH.
func clusterctlShell(t *testing.T, line string) result {
	t.Helper()
	cmd := exec.Command("bash", "-c", line)
	cmd.Env = append(envOf(t), "PATH="+filepath.Dir(binary)+":"+pathEnv())
	return runCommand(t, cmd)
}

// The plan's header goes with its table, so that `--dry-run > plan.txt`
// keeps both.
func TestPlanHeaderWithItsTable(t *testing.T) {
	parallel(t)
	newCluster(t, "a")
	r := must(t, "update-group", "-n", "a", "-j", "core", "-c", "2", "--dry-run", "-q")
	if !strings.HasPrefix(r.stdout, "Plan for core-a:\n") || strings.Contains(r.stderr, "Plan for") {
		t.Errorf("update-group --dry-run:\n%s", r)
	}
	path := filepath.Join(t.TempDir(), "core.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: clusterctl/v1\nkind: Cluster\nname: core\ngroups:\n  - name: a\n    instanceType: t3.small\n    count: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = must(t, "apply", "-f", path, "--dry-run", "-q")
	if !strings.HasPrefix(r.stdout, "Plan for cluster core ("+path+"):\n") || strings.Contains(r.stderr, "Plan for") {
		t.Errorf("apply --dry-run:\n%s", r)
	}
	r = must(t, "update-core", "core", "--managers", "3", "--dry-run", "-q")
	if !strings.HasPrefix(r.stdout, "Plan for core:\n") || strings.Contains(r.stderr, "Plan for") {
		t.Errorf("update-core --dry-run:\n%s", r)
	}
}
