package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/spec"
)

const netFile = `# yaml-language-server: $schema=clusterctl.schema.json
apiVersion: clusterctl/v1
kind: Cluster
name: shop
network:
  name: shopnet
  zones: 2
  cidr: 10.20.0.0/16
  nat: single
core:
  instanceType: t3.small
groups:
  - name: web
    instanceType: t3.small
    count: 1
`

// A cluster file that declares its network: apply creates the network
// (saying what it is billed by the hour), then the core in its private
// subnets, then the group; applied again it has nothing to do; export
// writes the network back, and its output applies with no change. A file
// that changes the network is refused, and --prune leaves the network.
func TestApplyNetworkFile(t *testing.T) {
	resetMoto(t)
	c := newClients(t)
	path := filepath.Join(t.TempDir(), "shop.yaml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(netFile)

	r := must(t, "apply", "-f", path, "--dry-run")
	if !regexp.MustCompile(`(?m)^shopnet-network\s+create\s+network: 10\.20\.0\.0/16 over 2 zones, NAT single, about \$36\.50/month\n^shop\s+create`).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "1 NAT gateway: $0.045/hour") || len(c.stackNames(t)) != 0 {
		t.Fatalf("dry run:\n%s\nstacks %v", r, c.stackNames(t))
	}

	r = must(t, "apply", "-f", path, "-q")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^shopnet-network\s+create\s+done\s+\d+s\n^shop\s+create\s+done\s+\d+s\n^shop-web\s+create\s+done\s+\d+s$`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("apply lacks %s:\n%s", want, r)
		}
	}
	net := outputs(describeStack(t, c, "shopnet-network"))
	if net["VpcCidr"] != "10.20.0.0/16" || len(strings.Split(net["PrivateSubnetIds"], ",")) != 2 || net["Nat"] != "single" {
		t.Fatalf("network outputs %v", net)
	}
	if p := strings.Join(spec.SplitList(describeStackParam(t, c, "shop", "SubnetIds")), ","); p != net["PrivateSubnetIds"] {
		t.Errorf("core subnets %s, want the network's private ones %s", p, net["PrivateSubnetIds"])
	}
	if tg := tags(describeStack(t, c, "shop")); tg["clusterctl:network"] != "shopnet" {
		t.Errorf("core tags %v", tg)
	}

	r = must(t, "apply", "-f", path)
	if !strings.Contains(r.stderr, "No changes: cluster shop matches "+path) || strings.Contains(r.stdout, "create") {
		t.Errorf("second apply:\n%s", r)
	}

	// export writes the network and no VPC or subnets of the core.
	exported := must(t, "export", "shop").stdout
	if !strings.Contains(exported, "network:\n  name: shopnet\n  zones: 2\n  cidr: 10.20.0.0/16\n  nat: single\ncore:\n") ||
		strings.Contains(exported, "vpcId") || strings.Contains(exported, "subnetIds") || strings.Count(exported, "shopnet") != 1 {
		t.Errorf("export:\n%s", exported)
	}
	write(exported)
	if r := must(t, "apply", "-f", path); !strings.Contains(r.stderr, "No changes: cluster shop matches") {
		t.Errorf("apply of the export:\n%s", r)
	}

	// A network changed in the file is refused, before anything changes.
	write(strings.Replace(netFile, "nat: single", "nat: per-zone", 1))
	r = clusterctl(t, "apply", "-f", path, "--yes")
	if r.code != 1 || !strings.Contains(r.stderr, `network "shopnet" (stack shopnet-network) is not what the file declares (nat single → per-zone)`) {
		t.Errorf("changed network: %s", r)
	}

	// --prune deletes groups, never the network.
	write(strings.SplitAfter(netFile, "  instanceType: t3.small\n")[0])
	must(t, "apply", "-f", path, "--prune", "--yes", "-q")
	if got := c.stackNames(t); !slices.Contains(got, "shopnet-network") || slices.Contains(got, "shop-web") {
		t.Errorf("after --prune: stacks %v", got)
	}
	must(t, "delete-core", "shop", "--cascade", "--yes", "-q")
	must(t, "delete-network", "shopnet", "--yes", "-q")
}

// The examples of docs/cluster-files-network.md run as the README's do, in
// order, on a fresh account, from a directory holding examples/.
func TestNetworkFileDocExamples(t *testing.T) {
	examples, err := readmeExamples("../docs/cluster-files-network.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) < 8 {
		t.Fatalf("only %d examples found", len(examples))
	}
	resetMoto(t)
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "examples"), os.DirFS("../examples")); err != nil {
		t.Fatal(err)
	}
	shellEnv := append(env(), "PATH="+filepath.Dir(binary)+":"+pathEnv(), "HOME="+dir)
	for _, ex := range examples {
		cmd := exec.Command("bash", "-c", ex.command)
		cmd.Dir, cmd.Env = dir, shellEnv
		r := runCommand(t, cmd)
		if r.code != ex.exit || ex.realAWS {
			t.Fatalf("docs/cluster-files-network.md:%d: %s\nwant exit %d, got %s", ex.line, ex.command, ex.exit, r)
		}
	}
	if names := newClients(t).stackNames(t); len(names) != 0 {
		t.Errorf("left behind: %v", names)
	}
}
