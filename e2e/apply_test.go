package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

const prodFile = `# yaml-language-server: $schema=clusterctl.schema.json
apiVersion: clusterctl/v1
kind: Cluster
name: prod
core:
  sshCidr: 203.0.113.0/24
groups:
  - name: web
    instanceType: c5.large
    count: 2
    labels:
      role: web
  - name: db
    instanceType: r5.large
    volumeSize: 50
`

// The declarative workflow through the binary: apply a file with two
// groups, export it back, edit and re-apply, a dry run that changes
// nothing, then prune with --yes.
func TestApplyWorkflow(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "prod.yaml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(prodFile)

	r := must(t, "apply", "-f", path, "-q")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^prod\s+create\s+core: t3\.medium$`),
		regexp.MustCompile(`(?m)^prod-web\s+create\s+2 x c5\.large$`),
		regexp.MustCompile(`(?m)^prod-db\s+create\s+1 x r5\.large$`),
		regexp.MustCompile(`(?m)^STACK\s+ACTION\s+RESULT\s+DURATION$`),
		regexp.MustCompile(`(?m)^prod-db\s+create\s+done\s+\d+s$`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("first apply lacks %s:\n%s", want, r)
		}
	}
	if got := c.stackNames(t); !sameSet(got, []string{"prod", "prod-web", "prod-db"}) {
		t.Fatalf("stacks %v", got)
	}
	if d := groupASG(t, c, "prod", "web").DesiredCapacity; aws.ToInt32(d) != 2 {
		t.Errorf("web desired %d", aws.ToInt32(d))
	}

	// export | apply -f - changes nothing.
	sh := exec.Command("bash", "-c", "clusterctl export prod | clusterctl apply -f -")
	sh.Env = append(envOf(t), "PATH="+filepath.Dir(binary)+":"+pathEnv())
	if r := runCommand(t, sh); r.code != 0 || !strings.Contains(r.stderr, "No changes: cluster prod matches stdin") {
		t.Errorf("export | apply -f -:\n%s", r)
	}

	// An edit: web grows and changes type, cache comes, db leaves the file.
	edited := strings.Replace(prodFile, "    count: 2\n", "    count: 3\n", 1)
	edited = strings.Replace(edited, "c5.large", "c5.xlarge", 1)
	edited = strings.Replace(edited, "  - name: db\n    instanceType: r5.large\n    volumeSize: 50\n", "  - name: cache\n    instanceType: r5.large\n", 1)
	write(edited)
	before := deployedStack(t, c, "prod-web")
	r = must(t, "apply", "-f", path, "--dry-run", "-q")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^prod-web\s+update\s+2 nodes will be replaced, 1 at a time$`),
		regexp.MustCompile(`(?m)^prod-cache\s+create\s+1 x r5\.large$`),
		regexp.MustCompile(`(?m)^prod-db\s+kept\s+not in the file, kept \(--prune deletes it\)$`),
		regexp.MustCompile(`(?m)^instanceType\s+c5\.large → c5\.xlarge$`),
		regexp.MustCompile(`(?m)^count\s+2 → 3$`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("dry run lacks %s:\n%s", want, r)
		}
	}
	if !strings.Contains(r.stderr, "Dry run: nothing changed") || strings.Contains(r.stdout, "RESULT") {
		t.Errorf("dry run:\n%s", r)
	}
	if after := deployedStack(t, c, "prod-web"); after.template != before.template || after.params["InstanceType"] != "c5.large" {
		t.Error("the dry run changed prod-web")
	}
	if got := c.stackNames(t); !sameSet(got, []string{"prod", "prod-web", "prod-db"}) {
		t.Errorf("the dry run changed the stacks: %v", got)
	}

	r = must(t, "apply", "-f", path, "-q", "-o", "json", "--yes")
	type stack struct {
		Stack, Action, Result string
	}
	plan := decode[struct {
		Cluster string
		Applied bool
		Stacks  []stack
	}](t, r)
	want := []stack{{"prod", "unchanged", ""}, {"prod-web", "update", "done"}, {"prod-cache", "create", "done"}, {"prod-db", "kept", ""}}
	if plan.Cluster != "prod" || !plan.Applied || !slices.Equal(plan.Stacks, want) {
		t.Errorf("apply -o json: %+v", plan)
	}
	if p := deployedStack(t, c, "prod-web").params; p["InstanceType"] != "c5.xlarge" || p["DesiredCapacity"] != "3" {
		t.Errorf("prod-web after the edit: %v", p)
	}

	// Pruning needs --yes off a terminal (exit 2, nothing deleted), then
	// deletes exactly the group the file left out.
	// The plan is shown before the refusal: what --yes would delete.
	if r := clusterctl(t, "apply", "-f", path, "--prune", "-q"); r.code != 2 || !strings.Contains(r.stderr, "prod-db") || !strings.Contains(r.stderr, "--yes") ||
		!regexp.MustCompile(`(?m)^prod-db\s+delete\b`).MatchString(r.stdout) {
		t.Errorf("prune without --yes, its plan first:\n%s", r)
	}
	if got := c.stackNames(t); !sameSet(got, []string{"prod", "prod-web", "prod-cache", "prod-db"}) {
		t.Errorf("stacks after the refusal: %v", got)
	}
	r = must(t, "apply", "-f", path, "--prune", "--yes", "-q")
	if !regexp.MustCompile(`(?m)^prod-db\s+delete\s+done\s+\d+s$`).MatchString(r.stdout) {
		t.Errorf("prune:\n%s", r)
	}
	if got := c.stackNames(t); !sameSet(got, []string{"prod", "prod-web", "prod-cache"}) {
		t.Errorf("stacks after prune: %v", got)
	}
	r = must(t, "apply", "-f", path, "--prune", "-q")
	if !strings.Contains(r.stderr, "No changes") {
		t.Errorf("after prune:\n%s", r)
	}
}

// A bad file is refused with its name, line and setting (exit 2), before
// anything is created; a core the file changes is refused (exit 1) with
// nothing changed.
func TestApplyRefusals(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	dir := t.TempDir()
	tests := []struct {
		name, text, want string
	}{
		{"unknown key", strings.Replace(prodFile, "    volumeSize: 50\n", "    volume: 50\n", 1), "prod.yaml:15: groups[1].volume: unknown setting; did you mean volumeSize?"},
		{"rule", strings.Replace(prodFile, "    count: 2\n", "    count: 2\n    max: 1\n", 1), "prod.yaml:11: groups[0].max: invalid capacity: count 2 is above max 1"},
		{"syntax", prodFile + "  - name: [\n", "prod.yaml:16: invalid YAML or JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "prod.yaml")
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			r := clusterctl(t, "apply", "-f", path)
			if r.code != 2 || !strings.HasPrefix(r.stderr, "clusterctl: "+dir+"/"+tt.want) {
				t.Errorf("want exit 2 and %q:\n%s", tt.want, r)
			}
		})
	}
	if r := clusterctl(t, "apply", "-f", filepath.Join(dir, "nosuch.yaml")); r.code != 2 {
		t.Errorf("missing file:\n%s", r)
	}
	if r := clusterctl(t, "apply", "-f", "-", "--parallel", "0"); r.code != 2 || !strings.Contains(r.stderr, "--parallel") {
		t.Errorf("--parallel 0:\n%s", r)
	}
	if got := c.stackNames(t); len(got) != 0 {
		t.Fatalf("bad files created %v", got)
	}

	// A core that differs from the file is updated as update-core would.
	must(t, "create-core", "prod", "-q")
	cmd := exec.Command(binary, "apply", "-f", "-", "--yes")
	cmd.Env = envOf(t)
	cmd.Stdin = strings.NewReader("apiVersion: clusterctl/v1\nkind: Cluster\nname: prod\ncore:\n  instanceType: m5.large\n")
	r := runCommand(t, cmd)
	if r.code != 0 || !strings.Contains(r.stdout, "instanceType   t3.medium → m5.large") || !strings.Contains(r.stdout, "1 manager will be replaced") {
		t.Errorf("core change:\n%s", r)
	}
	if got := c.stackNames(t); !slices.Equal(got, []string{"prod"}) {
		t.Errorf("a core change created %v", got)
	}
	if r := must(t, "export", "prod"); !strings.Contains(r.stdout, "instanceType: m5.large") {
		t.Errorf("the core after apply:\n%s", r)
	}
}

// A live group that the file leaves out is shown as kept in every form
// of the plan, also when nothing else changes: apply never says the
// cluster matches the file while it has a group the file does not list.
func TestApplyShowsGroupsNotInTheFile(t *testing.T) {
	parallel(t)
	resetMoto(t)
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.yaml")
	coreOnly := filepath.Join(dir, "core.yaml")
	head := "apiVersion: clusterctl/v1\nkind: Cluster\nname: keep\n"
	if err := os.WriteFile(whole, []byte(head+"groups:\n  - name: a\n    instanceType: t3.small\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(coreOnly, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, "apply", "-f", whole, "-q")
	const note = "not in the file, kept (--prune deletes it)"
	for _, args := range [][]string{
		{}, {"-o", "wide"}, {"-o", "json"}, {"-o", "yaml"}, {"--query", ".stacks[].note"}, {"--dry-run"},
	} {
		r := must(t, append([]string{"apply", "-f", coreOnly, "-q"}, args...)...)
		if !strings.Contains(r.stdout, note) {
			t.Errorf("apply %v does not show the group not in the file:\n%s", args, r)
		}
		if strings.Contains(r.stderr, "matches") {
			t.Errorf("apply %v says the cluster matches the file:\n%s", args, r)
		}
	}
}

// apply asks before a core change as update-core does: a shorter log
// retention (which deletes logs) off a terminal without --yes is refused
// with update-core's words and exit code, nothing changed; with --yes it
// is applied.
func TestApplyAsksAsUpdateCore(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "prod", "-q")
	file := filepath.Join(t.TempDir(), "prod.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: clusterctl/v1\nkind: Cluster\nname: prod\ncore:\n  logRetentionDays: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := deployedStack(t, c, "prod")
	updateCore := clusterctl(t, "update-core", "prod", "--log-retention-days", "1", "-q")
	r := clusterctl(t, "apply", "-f", file, "-q")
	if r.code == 0 || r.code != updateCore.code || !strings.Contains(r.stderr, `refusing to update the control plane of cluster "prod" without confirmation: pass --yes`) {
		t.Errorf("apply off a terminal without --yes (update-core exits %d):\n%s", updateCore.code, r)
	}
	if after := deployedStack(t, c, "prod"); after.template != before.template || after.params["LogRetentionDays"] != before.params["LogRetentionDays"] {
		t.Fatalf("a refused apply changed the core: %v", after.params)
	}
	must(t, "apply", "-f", file, "-q", "--yes")
	if p := deployedStack(t, c, "prod").params; p["LogRetentionDays"] != "1" {
		t.Errorf("apply --yes: LogRetentionDays %q", p["LogRetentionDays"])
	}
}
