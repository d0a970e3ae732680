package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// completion measures how long after CloudFormation finishes each tool
// notices: the proxy holds the new stack in CREATE_IN_PROGRESS until T, a
// delay d after its CreateStack returned, and lag = tool's exit − T. The
// delays are spread so that T falls at different points of each poller's
// cycle.
func (b *bench) completion() error {
	script := filepath.Join(b.o.baseline, "add-agents.sh")
	count := strconv.Itoa(b.o.nodes)
	// Per tool: when it first read the final status (noticed), and when it
	// exited (returned), both after T.
	var ctlSeen, ctlRet, cliSeen, cliRet sample
	var ctlD, cliD []string
	measure := func(seen, ret *sample, stack string, d time.Duration, run func() (result, error)) error {
		release := b.proxy.holdStack(stack, d)
		r, err := run()
		t, noticed := release()
		if err != nil {
			return err
		}
		if t.IsZero() || noticed.IsZero() {
			return fmt.Errorf("%s: the proxy did not see the stack created and then read", stack)
		}
		if r.end.Before(t) {
			return fmt.Errorf("%s: the tool returned %s before the stack completed", stack, t.Sub(r.end))
		}
		r.dur = r.end.Sub(t)
		ret.add(r)
		r.dur = noticed.Sub(t)
		seen.add(r)
		return nil
	}
	for i := 0; i < max(b.o.waitReps, b.o.cliWaitReps); i++ {
		if i < b.o.waitReps {
			group := fmt.Sprintf("h%d", i+1)
			d := 2*time.Second + time.Duration(i)*1430*time.Millisecond
			ctlD = append(ctlD, fmt.Sprintf("%.2g", d.Seconds()))
			b.progress("completion: clusterctl, CloudFormation finishes %s after CreateStack", d)
			err := measure(&ctlSeen, &ctlRet, clusterName+"-"+group, d, func() (result, error) {
				return b.exec(nil, b.o.bin, "add-agents", "-n", group, "-t", b.o.itype, "-j", clusterName, "-c", count, "-q", "-v")
			})
			if err != nil {
				return err
			}
		}
		if i < b.o.cliWaitReps {
			group := fmt.Sprintf("c%d", i+1)
			d := 30 * time.Second * time.Duration(i+1) / time.Duration(b.o.cliWaitReps+1)
			cliD = append(cliD, fmt.Sprintf("%.2g", d.Seconds()))
			tmpl, err := b.renderGroup(group)
			if err != nil {
				return err
			}
			b.progress("completion: aws cloudformation wait, CloudFormation finishes %s after CreateStack", d)
			err = measure(&cliSeen, &cliRet, clusterName+"-"+group, d, func() (result, error) {
				return b.exec(nil, script, clusterName, group, b.o.itype, count, tmpl)
			})
			if err != nil {
				return err
			}
		}
	}
	if b.o.waitReps > 0 {
		tool := fmt.Sprintf("clusterctl add-agents, adaptive polling (T = CreateStack + %s s)", strings.Join(ctlD, ", "))
		b.row("completion noticed: first final-status read − T", tool, &ctlSeen, median(ctlSeen.durs), 0)
		b.row("completion returned: exit − T", tool, &ctlRet, median(ctlRet.durs), 0)
		b.maxLag = maxDur(ctlSeen.durs)
		b.maxRet = maxDur(ctlRet.durs)
	}
	if b.o.cliWaitReps > 0 {
		tool := fmt.Sprintf("add-agents.sh, aws cloudformation wait (T = CreateStack + %s s)", strings.Join(cliD, ", "))
		b.row("completion noticed: first final-status read − T", tool, &cliSeen, median(ctlSeen.durs), 0)
		b.row("completion returned: exit − T", tool, &cliRet, median(ctlRet.durs), 0)
	}
	b.notes = append(b.notes, "The AWS CLI waiter stack-create-complete polls DescribeStacks every 30 s (botocore's waiter model: delay 30, 120 attempts), so for a completion at a random moment it notices 15 s later on average and 30 s at worst.")
	return nil
}

// coldStart times `clusterctl version` (process start to exit, nothing
// else), against spawning /bin/true and the AWS CLI's own start.
func (b *bench) coldStart() error {
	b.progress("cold start: %d runs of clusterctl version", b.o.coldReps)
	var ctl, tru, awsv sample
	for i := 0; i < b.o.coldReps; i++ {
		r, err := b.exec(nil, b.o.bin, "version")
		if err != nil {
			return err
		}
		ctl.add(r)
		if r, err = b.exec(nil, "/bin/true"); err != nil {
			return err
		}
		tru.add(r)
	}
	for i := 0; i < 5; i++ {
		r, err := b.exec(nil, "aws", "--version")
		if err != nil {
			return err
		}
		awsv.add(r)
	}
	label := "cold start"
	memRow := func(tool string, s *sample) {
		b.cold.add(label, tool, fmtDur(median(s.durs)), fmtDur(p90(s.durs)), fmtDur(minDur(s.durs))+" – "+fmtDur(maxDur(s.durs)), fmtKB(s.rssKB))
	}
	memRow(fmt.Sprintf("clusterctl version (%d runs)", b.o.coldReps), &ctl)
	memRow(fmt.Sprintf("/bin/true: process spawn floor (%d runs)", b.o.coldReps), &tru)
	memRow("aws --version (5 runs)", &awsv)
	b.coldMedian = median(ctl.durs)

	// Where the start goes: package initialisers, as the runtime reports them.
	r, err := b.exec([]string{"GODEBUG=inittrace=1"}, b.o.bin, "version")
	if err != nil {
		return err
	}
	type pkg struct {
		name string
		ms   float64
	}
	var pkgs []pkg
	total := 0.0
	for _, m := range initLine.FindAllStringSubmatch(string(r.stderr), -1) {
		ms, _ := strconv.ParseFloat(m[2], 64)
		pkgs = append(pkgs, pkg{m[1], ms})
		total += ms
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].ms > pkgs[j].ms })
	var top []string
	for _, p := range pkgs[:min(4, len(pkgs))] {
		top = append(top, fmt.Sprintf("%s %.2f ms", p.name, p.ms))
	}
	b.notes = append(b.notes, fmt.Sprintf("Package initialisers (GODEBUG=inittrace=1, one run): %.1f ms in total; the largest: %s.", total, strings.Join(top, ", ")))
	return nil
}
