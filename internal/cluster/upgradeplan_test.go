package cluster

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// upgradeStack is a stack as CloudFormation describes it: launched from
// oldAMI (its image path resolved), pinning agents.
func upgradeStack(oldAMI string, agents map[string]string, engine string) *stacks.Stack {
	p := map[string]string{names.ParamImageParameter: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", names.ParamImageID: ""}
	for arch, sha := range agents {
		p[agentParams[arch]] = sha
	}
	if engine != "" {
		p[names.ParamEngineVersion] = engine
	}
	return &stacks.Stack{Name: "prod", Parameters: p, Resolved: map[string]string{names.ParamImageParameter: oldAMI}}
}

// The plan compares each stack's image, engine, agent and contract with
// what it would run now; a stack where all agree is current.
func TestUpgradeStackChanges(t *testing.T) {
	set, _ := testAgents(context.Background())
	current := set.Hashes()
	old := map[string]string{"amd64": strings.Repeat("0d", 32), "arm64": strings.Repeat("0e", 32)}
	for _, tc := range []struct {
		name     string
		st       *stacks.Stack
		engine   string // the stack's nodes'
		contract string
		imageID  string
		want     []string
	}{
		{"current", upgradeStack(memAMI, current, "25.0.8"), "25.0.8", render.ContractVersion, "", nil},
		{"new image behind the parameter", upgradeStack("ami-0aaaaaaaaaaaaaaaa", current, "25.0.8"), "25.0.8", render.ContractVersion, "",
			[]string{"image ami-0aaaaaaaaaaaaaaaa → " + memAMI}},
		{"an image given", upgradeStack(memAMI, current, "25.0.8"), "25.0.8", render.ContractVersion, "ami-0bbbbbbbbbbbbbbbb",
			[]string{"image " + memAMI + " → ami-0bbbbbbbbbbbbbbbb"}},
		{"new agent, of the image's architecture only", upgradeStack(memAMI, old, "25.0.8"), "25.0.8", render.ContractVersion, "",
			[]string{"node agent " + agentbin.Short(old["amd64"]) + " → " + agentbin.Short(current["amd64"])}},
		{"engine of before the setting", upgradeStack(memAMI, current, ""), "", render.ContractVersion, "",
			[]string{"engine (distribution's) → 25.0.8"}},
		{"older contract", upgradeStack(memAMI, current, "25.0.8"), "25.0.8", "1", "",
			[]string{"contract 1 → " + render.ContractVersion}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := &target{imageID: tc.imageID, agents: set, ssm: memSSM{}, engine: "25.0.8", cache: map[string]string{}}
			got, err := tg.stackChanges(context.Background(), tc.st, tc.engine, tc.contract)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, c := range got {
				lines = append(lines, c.What+" "+c.Old+" → "+c.New)
			}
			if !slices.Equal(lines, tc.want) {
				t.Errorf("changes %q, want %q", lines, tc.want)
			}
		})
	}
}

// A core of before the engine-version setting is upgraded to the default;
// one with the setting keeps its own.
func TestCoreEngine(t *testing.T) {
	if old, new := coreEngine(upgradeStack(memAMI, nil, "")); old != "" || new != "25.0.8" {
		t.Errorf("before the setting: %q → %q", old, new)
	}
	if old, new := coreEngine(upgradeStack(memAMI, nil, "24.0.9")); old != "24.0.9" || new != "24.0.9" {
		t.Errorf("with the setting: %q → %q", old, new)
	}
}

// The plan prints the backup first, then each stack in order, old → new,
// and the current ones as current.
func TestWriteUpgradePlan(t *testing.T) {
	p := &UpgradePlan{Cluster: "prod", Stacks: []StackUpgrade{
		{Stack: "prod", Group: names.GroupControl, Nodes: 3, Changes: []UpgradeChange{{What: UpgradeImage, Old: "ami-1", New: "ami-2"}, {What: UpgradeAgent, Old: "aaa", New: "bbb"}}},
		{Stack: "prod-api", Group: "api", Nodes: 2, Current: true, Changes: []UpgradeChange{}},
		{Stack: "prod-web", Group: "web", Nodes: 4, Changes: []UpgradeChange{{What: UpgradeEngine, Old: distributions, New: "25.0.8"}}},
	}}
	var b bytes.Buffer
	if err := WriteUpgradePlan(&b, p); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"STEP STACK NODES CHANGE 1 - - backup of the swarm",
		"2 prod 3 image ami-1 → ami-2 node agent aaa → bbb",
		"- prod-api 2 current",
		"3 prod-web 4 engine (distribution's) → 25.0.8",
		"The upgrade replaces the 3 managers one at a time, then the 4 nodes of group web, each stack validated before the next.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if pending := p.Pending(); len(pending) != 2 || pending[0].Stack != "prod" || pending[1].Stack != "prod-web" {
		t.Errorf("pending %+v", pending)
	}
	p.Stacks[0].Current, p.Stacks[2].Current = true, true
	b.Reset()
	WriteUpgradePlan(&b, p)
	if strings.Contains(b.String(), "backup") || !strings.Contains(b.String(), "Cluster prod is current: nothing to upgrade.") {
		t.Errorf("a current cluster's plan:\n%s", b.String())
	}
}
