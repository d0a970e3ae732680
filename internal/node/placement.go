package node

import (
	"fmt"
	"sort"
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
)

// pack puts the tasks on empty nodes of capacity (cpu, mem), first fit,
// the largest first.
func pack(ts []pendingTask, cpu, mem int64) [][]pendingTask {
	ts = append([]pendingTask(nil), ts...)
	sort.SliceStable(ts, func(i, j int) bool {
		return ts[i].MemoryBytes*cpu+ts[i].NanoCPUs*mem > ts[j].MemoryBytes*cpu+ts[j].NanoCPUs*mem
	})
	var bins [][]pendingTask
	var left [][2]int64
	for _, t := range ts {
		placed := false
		for i := range bins {
			if left[i][0] >= t.NanoCPUs && left[i][1] >= t.MemoryBytes {
				bins[i] = append(bins[i], t)
				left[i][0] -= t.NanoCPUs
				left[i][1] -= t.MemoryBytes
				placed = true
				break
			}
		}
		if !placed {
			bins = append(bins, []pendingTask{t})
			left = append(left, [2]int64{cpu - t.NanoCPUs, mem - t.MemoryBytes})
		}
	}
	return bins
}

// waste is the share of CPU and of memory of the new nodes the tasks
// leave unreserved, summed, as the cluster autoscaler's least-waste
// expander weighs it.
func waste(bins [][]pendingTask, cpu, mem int64) float64 {
	var c, m int64
	for _, b := range bins {
		for _, t := range b {
			c += t.NanoCPUs
			m += t.MemoryBytes
		}
	}
	n := float64(len(bins))
	w := 0.0
	if cpu > 0 {
		w += 1 - float64(c)/(n*float64(cpu))
	}
	if mem > 0 {
		w += 1 - float64(m)/(n*float64(mem))
	}
	return w
}

// groupCapacity is what any new node of g offers: the least of its
// instance types.
func groupCapacity(in ScaleInput, g ScalingGroup) (cpu, mem int64) {
	for i, name := range g.InstanceTypes {
		c, m := Capacity(in.Types[name])
		if i == 0 || c < cpu {
			cpu = c
		}
		if i == 0 || m < mem {
			mem = m
		}
	}
	return cpu, mem
}

// neverHeld says why no group of the cluster, at any size, can hold t;
// "" when one can.
func neverHeld(in ScaleInput, t pendingTask) string {
	placed := false
	for _, g := range in.Groups {
		if fits(in, g, t.Task) {
			return ""
		}
		if shapes(in, g, func(attrs map[string]string, arch string, _ InstanceType) bool {
			return placementHolds(t.Task, attrs, arch)
		}) {
			placed = true
		}
	}
	if placed {
		return fmt.Sprintf("reserves more than a node of any group offers (%s CPU, %d MiB)", cpus(t.NanoCPUs), t.MemoryBytes>>20)
	}
	return "no group's nodes satisfy its placement"
}

func cpus(nano int64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", float64(nano)/1e9), "0"), ".")
}

// fits tells whether every node g may launch holds t: its placement and
// its reservations.
func fits(in ScaleInput, g ScalingGroup, t Task) bool {
	return shapes(in, g, func(attrs map[string]string, arch string, it InstanceType) bool {
		cpu, mem := Capacity(it)
		return placementHolds(t, attrs, arch) && t.NanoCPUs <= cpu && t.MemoryBytes <= mem
	})
}

// shapes tells whether ok holds for every node g may launch: each of its
// instance types, lifecycles and zones. A group whose types EC2 did not
// describe holds nothing.
func shapes(in ScaleInput, g ScalingGroup, ok func(attrs map[string]string, arch string, it InstanceType) bool) bool {
	if len(g.InstanceTypes) == 0 {
		return false
	}
	lifecycles, zones := g.Lifecycles, g.Zones
	if len(lifecycles) == 0 {
		lifecycles = []string{"on-demand"}
	}
	if len(zones) == 0 {
		zones = []string{""}
	}
	for _, name := range g.InstanceTypes {
		it, known := in.Types[name]
		if !known || len(it.Archs) == 0 {
			return false
		}
		for _, arch := range it.Archs {
			for _, l := range lifecycles {
				for _, z := range zones {
					attrs := map[string]string{"node.role": "worker", "node.platform.os": "linux", "node.platform.arch": engineArch(arch)}
					// A new node has the same engine labels and, once the
					// leader proves it, node labels (labels.go).
					for _, prefix := range []string{"engine.labels.", "node.labels."} {
						for k, v := range g.Labels {
							attrs[prefix+k] = v
						}
						attrs[prefix+names.EngineLabelGroup] = g.Group
						attrs[prefix+names.EngineLabelInstanceType] = name
						attrs[prefix+names.EngineLabelLifecycle] = l
						if z != "" {
							attrs[prefix+names.EngineLabelZone] = z
						}
					}
					if !ok(attrs, engineArch(arch), it) {
						return false
					}
				}
			}
		}
	}
	return true
}

// engineArch is EC2's architecture as the engine reports it.
func engineArch(ec2 string) string {
	if ec2 == "arm64" {
		return "aarch64"
	}
	return ec2
}

// nodeAttrs are the attributes of a node of the swarm constraints name.
func nodeAttrs(n Node) map[string]string {
	attrs := map[string]string{"node.id": n.ID, "node.hostname": n.Hostname, "node.role": n.Role, "node.platform.os": "linux", "node.platform.arch": n.Arch}
	for k, v := range n.Labels {
		attrs["engine.labels."+k] = v
	}
	for k, v := range n.NodeLabels {
		attrs["node.labels."+k] = v
	}
	return attrs
}

// placementHolds tells whether a node of attrs and arch satisfies t's
// constraints and platforms. An attribute the node does not have (a new
// node's id, hostname, instance id, an operator's node label) equals
// nothing, as the swarm judges a missing label.
func placementHolds(t Task, attrs map[string]string, arch string) bool {
	for _, c := range t.Constraints {
		key, value, eq, ok := parseConstraint(c)
		if !ok {
			return false
		}
		v, has := attrs[strings.ToLower(key)]
		if lk := strings.ToLower(key); !has && (strings.HasPrefix(lk, "engine.labels.") || strings.HasPrefix(lk, "node.labels.")) {
			v, has = lookupFold(attrs, strings.ToLower(key))
		}
		if (has && strings.EqualFold(v, value)) != eq {
			return false
		}
	}
	if len(t.Platforms) == 0 {
		return true
	}
	for _, p := range t.Platforms {
		if (p.OS == "" || strings.EqualFold(p.OS, "linux")) && (p.Architecture == "" || normArch(p.Architecture) == normArch(arch)) {
			return true
		}
	}
	return false
}

func lookupFold(attrs map[string]string, key string) (string, bool) {
	for k, v := range attrs {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

// normArch names an architecture as images do.
func normArch(a string) string {
	switch strings.ToLower(a) {
	case "x86_64", "x86-64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	}
	return strings.ToLower(a)
}

// parseConstraint reads "key==value" or "key!=value".
func parseConstraint(c string) (key, value string, eq, ok bool) {
	if k, v, found := strings.Cut(c, "!="); found {
		return strings.TrimSpace(k), strings.TrimSpace(v), false, true
	}
	if k, v, found := strings.Cut(c, "=="); found {
		return strings.TrimSpace(k), strings.TrimSpace(v), true, true
	}
	return "", "", false, false
}
