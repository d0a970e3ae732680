package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// What describe says of nodes that fall behind: how many run an image,
// an engine or a node agent other than what their stacks would run now —
// what `clusterctl upgrade` would replace. The image is EC2's word; the
// engine and the agent are what the node reports (shown, never trusted).

// Behind is a number of nodes that run one thing where their stacks would
// now run another. The JSON keys are a public interface.
type Behind struct {
	What  string `json:"what"` // image, engine, node agent
	Nodes int    `json:"nodes"`
	Runs  string `json:"runs"`
	Now   string `json:"now"`
}

// String says it: "2 nodes run image ami-…; the image parameter now gives
// ami-…".
func (b Behind) String() string {
	noun := "nodes run"
	if b.Nodes == 1 {
		noun = "node runs"
	}
	switch b.What {
	case UpgradeImage:
		return fmt.Sprintf("%d %s image %s; the image setting now gives %s", b.Nodes, noun, b.Runs, b.Now)
	case UpgradeAgent:
		return fmt.Sprintf("%d %s node agent %s; this clusterctl carries %s", b.Nodes, noun, b.Runs, b.Now)
	}
	return fmt.Sprintf("%d %s Docker Engine %s; the cluster's setting is %s", b.Nodes, noun, b.Runs, b.Now)
}

// expected is what a node of a group would run now: its AMI ("" when
// unknown), the engine version and this clusterctl's agents' hashes.
type expected struct {
	image, engine string
	agents        []string // full hashes, any architecture
}

// behindOf counts the nodes (merged with the swarm's snapshot) that run
// something else than want says of their group, by what and by what they
// run; a node the snapshot does not know is judged by its image only.
func behindOf(nodes []query.Node, want map[string]expected) []Behind {
	counts := map[Behind]int{}
	for _, n := range nodes {
		w, ok := want[n.Group]
		if !ok || n.SwarmOnly {
			continue
		}
		if w.image != "" && n.ImageID != "" && n.ImageID != w.image {
			counts[Behind{What: UpgradeImage, Runs: n.ImageID, Now: w.image}]++
		}
		if n.Swarm == nil || n.Swarm.NodeID == "" {
			continue
		}
		if v := n.Swarm.EngineVersion; w.engine != "" && v != "" && !sameEngine(v, w.engine) {
			counts[Behind{What: UpgradeEngine, Runs: v, Now: w.engine}]++
		}
		if a := n.Swarm.Agent; len(w.agents) > 0 && !slices.Contains(w.agents, a) {
			counts[Behind{What: UpgradeAgent, Runs: orNone(agentbin.Short(a)), Now: agentbin.Short(w.agents[0])}]++
		}
	}
	out := []Behind{}
	for b, n := range counts {
		b.Nodes = n
		out = append(out, b)
	}
	order := map[string]int{UpgradeImage: 0, UpgradeEngine: 1, UpgradeAgent: 2}
	sort.Slice(out, func(i, j int) bool {
		if out[i].What != out[j].What {
			return order[out[i].What] < order[out[j].What]
		}
		return out[i].Runs < out[j].Runs
	})
	return out
}

// sameEngine says whether the engine a node reports (25.0.8) is the
// setting's version (25.0.8, or with its package release 25.0.8-1.amzn2023).
func sameEngine(reported, setting string) bool {
	v, _, _ := strings.Cut(setting, "-")
	return reported == v || reported == setting
}

// behind works out, for describe, what the nodes of a cluster fall behind
// on. What cannot be read (the image parameter, the agents) is left out of
// the comparison: describe shows the cluster all the same.
func (s *Inspector) behind(ctx context.Context, core *stacks.Stack, groups []query.Group, swarm query.Swarm) []Behind {
	if swarm.Snapshot == nil {
		return []Behind{}
	}
	nodes, err := query.ListNodes(ctx, s.EC2, core.Name, "")
	if err != nil {
		return []Behind{}
	}
	nodes = query.WithSwarm(nodes, swarm, "")
	var agents []string
	if set, err := s.artifacts.agents(ctx); err == nil {
		for _, arch := range agentbin.Archs {
			if b := set[arch]; b != nil {
				agents = append(agents, b.SHA256)
			}
		}
	}
	_, engine := coreEngine(core)
	t := &target{ssm: s.SSM, cache: map[string]string{}}
	imageOf := func(st *stacks.Stack) string {
		want := st.Parameters[names.ParamImageID]
		if want == "" {
			want = st.Parameters[names.ParamImageParameter]
		}
		ami, err := t.resolve(ctx, want)
		if err != nil {
			return ""
		}
		return ami
	}
	want := map[string]expected{names.GroupControl: {image: imageOf(core), engine: engine, agents: agents}}
	for _, g := range groups {
		st, err := s.Stacks.Get(ctx, g.Stack)
		if err != nil {
			continue
		}
		want[g.Group] = expected{image: imageOf(st), engine: engine, agents: agents}
	}
	return behindOf(nodes, want)
}

// writeBehind says, after the groups, what the nodes fall behind on and
// what brings them up to date.
func writeBehind(w io.Writer, behind []Behind, cluster string) {
	if len(behind) == 0 {
		return
	}
	fmt.Fprintln(w, "\nBehind:")
	for _, b := range behind {
		fmt.Fprintln(w, "  "+query.Printable(b.String()))
	}
	fmt.Fprintf(w, "  The plan that brings them up to date: clusterctl upgrade -j %s --dry-run\n", cluster)
}
