package cluster

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// An upgrade's plan compares, for the core and every group, what the
// stack runs with what it would run if updated now: the image (its
// parameter's current value, or --image-id), the Docker Engine version,
// this clusterctl's node agent and the template's join contract. A stack
// where all four agree is current and is left alone.

// What an upgrade compares, as the plan names it.
const (
	UpgradeImage    = "image"
	UpgradeEngine   = "engine"
	UpgradeAgent    = "node agent"
	UpgradeContract = "contract"
)

// distributions is what a stack of before the engine-version setting runs:
// whatever docker its distribution offered the day a node booted.
const distributions = "(distribution's)"

// UpgradeChange is one thing a stack's nodes change: old → new. The JSON
// keys are a public interface.
type UpgradeChange struct {
	What string `json:"what"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// StackUpgrade is one stack of an upgrade: the core (group control) or a
// group. The JSON keys are a public interface.
type StackUpgrade struct {
	Stack string `json:"stack"`
	Group string `json:"group"`
	// Nodes counts its instances in service.
	Nodes   int             `json:"nodes"`
	Current bool            `json:"current"`
	Changes []UpgradeChange `json:"changes"`
}

// core says whether the stack is the core's.
func (s StackUpgrade) core() bool { return s.Group == names.GroupControl }

// UpgradePlan is the whole upgrade, in its order: the core, then the
// groups by name. The JSON keys are a public interface.
type UpgradePlan struct {
	Cluster string         `json:"cluster"`
	Stacks  []StackUpgrade `json:"stacks"`
}

// Pending are the stacks not current, in order.
func (p *UpgradePlan) Pending() []StackUpgrade {
	var out []StackUpgrade
	for _, s := range p.Stacks {
		if !s.Current {
			out = append(out, s)
		}
	}
	return out
}

// target is what a stack would run if updated now.
type target struct {
	imageID string       // --image-id: an AMI, or a parameter path
	agents  agentbin.Set // this clusterctl's
	ssm     SSMAPI       // resolves image paths
	engine  string       // the core's engine version once upgraded
	cache   map[string]string
}

// resolve is the AMI an image path gives now (an AMI id as itself).
func (t *target) resolve(ctx context.Context, image string) (string, error) {
	if image == "" || strings.HasPrefix(image, "ami-") {
		return image, nil
	}
	if v, ok := t.cache[image]; ok {
		return v, nil
	}
	out, err := t.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(image)})
	if err != nil {
		return "", fmt.Errorf("resolving image parameter %s: %w", image, err)
	}
	v := aws.ToString(out.Parameter.Value)
	t.cache[image] = v
	return v, nil
}

// runningImage is the AMI a stack's nodes were launched from: its image
// id, or what CloudFormation resolved its image path to (some
// implementations report the resolved value as the value itself).
func runningImage(st *stacks.Stack) string {
	if id := st.Parameters[names.ParamImageID]; id != "" {
		return id
	}
	if v := st.Resolved[names.ParamImageParameter]; v != "" {
		return v
	}
	if v := st.Parameters[names.ParamImageParameter]; strings.HasPrefix(v, "ami-") {
		return v
	}
	return ""
}

// stackChanges compares a stack with what it would run now. engineOld is
// the engine version its nodes install ("" before the setting), contract
// its join contract.
func (t *target) stackChanges(ctx context.Context, st *stacks.Stack, engineOld, contract string) ([]UpgradeChange, error) {
	var out []UpgradeChange
	oldImage := runningImage(st)
	want := t.imageID
	if want == "" {
		want = st.Parameters[names.ParamImageID]
	}
	if want == "" {
		want = st.Parameters[names.ParamImageParameter]
	}
	newImage, err := t.resolve(ctx, want)
	if err != nil {
		return nil, err
	}
	if newImage != "" && newImage != oldImage {
		out = append(out, UpgradeChange{What: UpgradeImage, Old: orNone(oldImage), New: newImage})
	}
	if engineOld != t.engine {
		out = append(out, UpgradeChange{What: UpgradeEngine, Old: engineText(engineOld), New: engineText(t.engine)})
	}
	pinned := pinnedAgents(st.Parameters)
	archs := agentbin.Archs
	if a := imageArch(st.Parameters[names.ParamImageParameter]); a != "" {
		archs = []string{a}
	}
	for _, arch := range archs {
		b := t.agents[arch]
		if b == nil || pinned[arch] == b.SHA256 {
			continue
		}
		what := UpgradeAgent
		if len(archs) > 1 {
			what += " (linux/" + arch + ")"
		}
		out = append(out, UpgradeChange{What: what, Old: orNone(agentbin.Short(pinned[arch])), New: agentbin.Short(b.SHA256)})
	}
	if contract != render.ContractVersion {
		out = append(out, UpgradeChange{What: UpgradeContract, Old: orNone(contract), New: render.ContractVersion})
	}
	return out, nil
}

func engineText(v string) string {
	if v == "" {
		return distributions
	}
	return v
}

// coreEngine is the engine version the core's nodes install (its
// parameter; "" before the setting) and the one they would once the core
// is updated (the setting, defaulted).
func coreEngine(core *stacks.Stack) (old, new string) {
	old = core.Parameters[names.ParamEngineVersion]
	if old != "" {
		return old, old
	}
	return "", spec.DefaultEngineVersion
}

// WriteUpgradePlan prints the plan for a terminal: in its order, each
// stack's changes old → new, or that it is current.
func WriteUpgradePlan(w io.Writer, p *UpgradePlan) error {
	t := query.Table{Header: []string{"STEP", "STACK", "NODES", "CHANGE"}}
	step := 1
	if len(p.Pending()) > 0 {
		t.Rows = append(t.Rows, []string{"1", "-", "-", "backup of the swarm"})
		step++
	}
	for _, s := range p.Stacks {
		nodes := strconv.Itoa(s.Nodes)
		if s.Current {
			t.Rows = append(t.Rows, []string{"-", s.Stack, nodes, "current"})
			continue
		}
		for i, c := range s.Changes {
			order, stack, n := "", "", ""
			if i == 0 {
				order, stack, n = strconv.Itoa(step), s.Stack, nodes
			}
			t.Rows = append(t.Rows, []string{order, stack, n, c.What + " " + c.Old + " → " + c.New})
		}
		step++
	}
	if err := query.WriteTable(w, t); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\n"+p.Summary())
	return err
}

// Summary says in one sentence what the upgrade replaces, and how.
func (p *UpgradePlan) Summary() string {
	pending := p.Pending()
	if len(pending) == 0 {
		return fmt.Sprintf("Cluster %s is current: nothing to upgrade.", p.Cluster)
	}
	var parts []string
	for _, s := range pending {
		if s.core() {
			parts = append(parts, fmt.Sprintf("the %d managers one at a time", s.Nodes))
		} else {
			parts = append(parts, fmt.Sprintf("the %d nodes of group %s", s.Nodes, s.Group))
		}
	}
	return fmt.Sprintf("The upgrade replaces %s, each stack validated before the next.", strings.Join(parts, ", then "))
}
