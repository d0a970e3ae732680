package cluster

import (
	"bytes"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/query"
)

// describe counts the nodes behind on each of image, engine and agent, by
// what they run; a node the swarm does not know is judged by its image.
func TestBehindOf(t *testing.T) {
	newAgent, oldAgent := strings.Repeat("cd", 32), strings.Repeat("0d", 32)
	node := func(group, image, engine, agent string) query.Node {
		n := query.Node{Group: group, InstanceID: "i-" + group, ImageID: image}
		if engine != "" || agent != "" {
			n.Swarm = &query.NodeSwarm{NodeID: "n", EngineVersion: engine, Agent: agent}
		}
		return n
	}
	want := map[string]expected{
		"control": {image: "ami-2", engine: "25.0.8", agents: []string{newAgent}},
		"web":     {image: "ami-2", engine: "25.0.8-1.amzn2023.0.4", agents: []string{newAgent}},
	}
	got := behindOf([]query.Node{
		node("control", "ami-2", "25.0.8", newAgent), // current
		node("web", "ami-2", "25.0.8", newAgent),     // current: the release is the package's
		node("web", "ami-1", "24.0.5", oldAgent),     // behind on all three
		node("web", "ami-1", "", ""),                 // not in the swarm: the image only
		node("other", "ami-0", "1.0", oldAgent),      // no stack known: not judged
		node("control", "ami-2", "25.0.8", ""),       // an agent of before the label
	}, want)
	var lines []string
	for _, b := range got {
		lines = append(lines, b.String())
	}
	wantLines := []string{
		"2 nodes run image ami-1; the image setting now gives ami-2",
		"1 node runs Docker Engine 24.0.5; the cluster's setting is 25.0.8-1.amzn2023.0.4",
		"1 node runs node agent (none); this clusterctl carries cdcdcdcdcdcd",
		"1 node runs node agent 0d0d0d0d0d0d; this clusterctl carries cdcdcdcdcdcd",
	}
	if strings.Join(lines, "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("behind:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(wantLines, "\n"))
	}
	var b bytes.Buffer
	writeBehind(&b, got, "prod")
	if !strings.Contains(b.String(), "Behind:\n  2 nodes run image ami-1") || !strings.Contains(b.String(), "clusterctl upgrade -j prod --dry-run") {
		t.Errorf("describe's section:\n%s", b.String())
	}
	b.Reset()
	writeBehind(&b, nil, "prod")
	if b.Len() != 0 {
		t.Errorf("nothing behind, yet: %q", b.String())
	}
}
