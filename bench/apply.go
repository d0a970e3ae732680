package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// applyRun is what the apply measurement found, for the targets.
type applyRun struct {
	t                  time.Duration // how long every stack takes
	one, all, def, bsh time.Duration // add-agents of one group; apply --parallel N; apply with the default; the bash way
	groups             int
}

// applyFile writes a cluster file declaring cluster with groups
// prefix1..prefixN of n nodes each, its core as create-core made it.
func (b *bench) applyFile(cluster, prefix string) (string, error) {
	var s strings.Builder
	fmt.Fprintf(&s, "apiVersion: clusterctl/v1\nkind: Cluster\nname: %s\ngroups:\n", cluster)
	for i := 1; i <= b.o.applyGroups; i++ {
		fmt.Fprintf(&s, "  - name: %s%d\n    instanceType: %s\n    count: %d\n", prefix, i, b.o.itype, b.o.applyNodes)
	}
	path := filepath.Join(b.tmp, cluster+"-"+prefix+".yaml")
	return path, os.WriteFile(path, []byte(s.String()), 0o644)
}

// heldRun runs a tool while the proxy holds every stack whose name starts
// with prefix in progress for T after its CreateStack, and checks that
// want stacks were held and that the tool waited for all of them.
func (b *bench) heldRun(prefix string, want int, name string, args ...string) (result, error) {
	release := b.proxy.holdPrefix(prefix, b.o.applyT)
	r, err := b.exec(nil, name, args...)
	ts := release()
	if err != nil {
		return r, err
	}
	if len(ts) != want {
		return r, fmt.Errorf("%s: %d stacks %s* were created through the proxy, want %d", filepath.Base(name), len(ts), prefix, want)
	}
	for stack, t := range ts {
		if r.end.Before(t) {
			return r, fmt.Errorf("%s: returned %s before %s completed", filepath.Base(name), t.Sub(r.end), stack)
		}
	}
	return r, nil
}

// apply measures `clusterctl apply` of a file of G groups where every
// stack takes T to complete (the proxy holds each in progress): against
// one group's add-agents under the same T, and against the same groups
// created one after another the bash way. Each cluster is its own, its
// core created beforehand, untimed.
func (b *bench) apply() error {
	T, g := b.o.applyT, b.o.applyGroups
	count := strconv.Itoa(b.o.applyNodes)
	label := fmt.Sprintf("apply, %d groups × %d nodes, every stack T = %s", g, b.o.applyNodes, T)
	b.progress("%s: the clusters' cores", label)
	for _, c := range []string{"fleet", "fleet4"} {
		if _, err := b.exec(nil, b.o.bin, "create-core", c, "-q"); err != nil {
			return err
		}
	}
	run := applyRun{t: T, groups: g}
	var one, all, def, bsh sample

	b.progress("%s: clusterctl add-agents, one group", label)
	r, err := b.heldRun("fleet-one", 1, b.o.bin, "add-agents", "-n", "one", "-t", b.o.itype, "-j", "fleet", "-c", count, "-q", "-v")
	if err != nil {
		return err
	}
	one.add(r)
	run.one = r.dur

	file, err := b.applyFile("fleet", "p")
	if err != nil {
		return err
	}
	b.progress("%s: clusterctl apply --parallel %d", label, g)
	if r, err = b.heldRun("fleet-p", g, b.o.bin, "apply", "-f", file, "--parallel", strconv.Itoa(g), "-q", "-v"); err != nil {
		return err
	}
	all.add(r)
	run.all = r.dur

	if file, err = b.applyFile("fleet4", "p"); err != nil {
		return err
	}
	b.progress("%s: clusterctl apply, default --parallel", label)
	if r, err = b.heldRun("fleet4-p", g, b.o.bin, "apply", "-f", file, "-q", "-v"); err != nil {
		return err
	}
	def.add(r)
	run.def = r.dur

	if b.o.applySerial {
		dir := filepath.Join(b.tmp, "serial")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		args := []string{"fleet", b.o.itype, count, dir}
		for i := 1; i <= g; i++ {
			group := fmt.Sprintf("s%d", i)
			r, err := b.exec(nil, b.o.bin, "render", "group", "-n", group, "-t", b.o.itype, "-c", count, "-j", "fleet")
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, group+".json"), r.stdout, 0o644); err != nil {
				return err
			}
			args = append(args, group)
		}
		b.progress("%s: baseline add-groups.sh, one group after another", label)
		if r, err = b.heldRun("fleet-s", g, filepath.Join(b.o.baseline, "add-groups.sh"), args...); err != nil {
			return err
		}
		bsh.add(r)
		run.bsh = r.dur
	}

	ref := median(all.durs)
	b.row(label, fmt.Sprintf("clusterctl apply -f (%d groups, --parallel %d)", g, g), &all, ref, 0)
	b.row(label, fmt.Sprintf("clusterctl apply -f (%d groups, default --parallel 4)", g), &def, ref, 0)
	b.row(label, "clusterctl add-agents, one group", &one, ref, 0)
	if b.o.applySerial {
		b.row(label, fmt.Sprintf("baseline add-groups.sh: add-agents.sh × %d, one after another", g), &bsh, ref, 0)
	}
	b.applyRun = &run
	return nil
}

// applyTargets prints the apply measurement's target: the whole file
// within 1.5 × T plus clusterctl's overhead (what one group's add-agents
// takes beyond T), where one after another takes G × T.
func (b *bench) applyTargets() {
	r := b.applyRun
	if r == nil {
		return
	}
	overhead := max(r.one-r.t, 0)
	limit := r.t*3/2 + overhead
	fmt.Printf("- apply of %d groups within 1.5 × T + overhead: %s (%s; T = %s, overhead of one add-agents beyond T %s, so the bound is %s; one group's add-agents %s; default --parallel 4 %s)\n",
		r.groups, metOrNot(r.all <= limit), fmtDur(r.all), r.t, fmtDur(overhead), fmtDur(limit), fmtDur(r.one), fmtDur(r.def))
	if r.bsh > 0 {
		fmt.Printf("- the same %d groups one after another the bash way: %s = %.1f × T (×%.1f apply's time)\n",
			r.groups, fmtDur(r.bsh), float64(r.bsh)/float64(r.t), float64(r.bsh)/float64(r.all))
	}
}
