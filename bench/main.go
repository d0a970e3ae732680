// Command bench measures clusterctl against the aws-cli + jq way of doing
// the same work (bench/baseline) and against the API floor, on a moto_server
// it starts itself. `make bench` runs it; docs/benchmarks.md explains every
// number it prints.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/names"
)

const (
	clusterName = "core"
	region      = "us-east-1"
)

type options struct {
	bin, baseline string
	logs          string
	groups, nodes int
	itype         string
	reps          int
	addReps       int
	waitReps      int
	cliWaitReps   int
	coldReps      int
	checkpoints   []int
	// apply: a file of applyGroups groups of applyNodes nodes, every stack
	// held in progress for applyT; applySerial adds the bash way.
	applyGroups, applyNodes int
	applyT                  time.Duration
	applySerial, applyOnly  bool
	// checkOnly stops after the first list-nodes check, untimed: the
	// tools' outputs compared (what the bench package's test runs).
	checkOnly bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx)
	stop()
	os.Exit(code)
}

func run(ctx context.Context) int {
	var o options
	var large bool
	var checkpoints string
	flag.StringVar(&o.bin, "bin", "", "clusterctl binary (default: build one into a temporary directory)")
	flag.StringVar(&o.baseline, "baseline", "bench/baseline", "directory of the aws-cli + jq baseline scripts")
	flag.StringVar(&o.logs, "logs", "", "write each tool run's stderr (clusterctl's -v call log included) to this directory")
	flag.IntVar(&o.groups, "groups", 5, "agent groups in the cluster")
	flag.IntVar(&o.nodes, "nodes", 20, "nodes per group")
	flag.BoolVar(&large, "large", false, "the larger run: 10 groups x 100 nodes (also BENCH_LARGE=1)")
	flag.StringVar(&o.itype, "type", "c5.large", "instance type of the groups")
	flag.IntVar(&o.reps, "reps", 7, "timed repetitions of each list-nodes measurement")
	flag.IntVar(&o.addReps, "add-reps", 5, "repetitions of add-agents end to end")
	flag.IntVar(&o.waitReps, "wait-reps", 5, "repetitions of clusterctl's completion-detection measurement")
	flag.IntVar(&o.cliWaitReps, "cli-wait-reps", 2, "repetitions of the AWS CLI waiter's (about 30 s each; 0: only state its documented delay)")
	flag.IntVar(&o.coldReps, "cold-reps", 50, "runs of clusterctl's version command for the cold start")
	flag.IntVar(&o.applyGroups, "apply-groups", 10, "groups in the cluster file of the apply measurement (0: no apply measurement)")
	flag.IntVar(&o.applyNodes, "apply-nodes", 2, "nodes per group in the apply measurement")
	flag.DurationVar(&o.applyT, "apply-t", 20*time.Second, "how long every stack of the apply measurement takes to complete (the proxy holds it in progress)")
	flag.BoolVar(&o.applySerial, "apply-serial", true, "in the apply measurement, also create the groups one after another the bash way (about 30 s each: the AWS CLI waiter)")
	flag.BoolVar(&o.applyOnly, "apply-only", false, "run the apply measurement alone")
	flag.StringVar(&checkpoints, "checkpoints", "", "group counts at which list-nodes is measured (default: 1, half when 10 or more, all)")
	flag.BoolVar(&o.checkOnly, "check", false, "only check that the tools agree, at the first checkpoint, and stop")
	flag.Parse()
	if large || os.Getenv("BENCH_LARGE") == "1" {
		o.groups, o.nodes = 10, 100
	}
	cps, err := parseCheckpoints(checkpoints, o.groups)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	o.checkpoints = cps

	b := &bench{o: o, ctx: ctx, started: time.Now(), listCallsOK: true}
	err = b.run()
	b.cleanup()
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(os.Stderr, "bench: interrupted")
		return 130
	case err != nil:
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

func parseCheckpoints(s string, groups int) ([]int, error) {
	if groups < 1 {
		return nil, errors.New("-groups must be at least 1")
	}
	if s == "" {
		cps := []int{1}
		if groups >= 10 {
			cps = append(cps, groups/2)
		}
		if groups > 1 {
			cps = append(cps, groups)
		}
		return cps, nil
	}
	var cps []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > groups {
			return nil, fmt.Errorf("bad checkpoint %q: want group counts between 1 and %d", f, groups)
		}
		cps = append(cps, n)
	}
	sort.Ints(cps)
	return cps, nil
}

type bench struct {
	o       options
	ctx     context.Context
	started time.Time
	tmp     string
	moto    *moto
	proxy   *proxy
	env     []string
	// The floor's clients: through the proxy like every tool, and straight
	// to moto to show what the proxy costs (the leader's too).
	viaProxy, direct clients
	bucket           string // the core's, where the leader publishes

	main, cold, mem table
	listRatio       []ratioAt // list-nodes baseline/clusterctl per checkpoint
	listCallsOK     bool
	listCallsNote   string
	maxLag          time.Duration
	maxRet          time.Duration
	runs            int // tool runs so far, to name their logs
	coldMedian      time.Duration
	applyRun        *applyRun
	notes           []string
}

type ratioAt struct {
	groups, nodes            int
	ratio                    float64       // baseline / clusterctl
	gap                      time.Duration // baseline − clusterctl
	ctlAbove, blAbove, floor time.Duration // each tool's cost above the floor, and the floor
}

// result is one run of one tool.
type result struct {
	dur    time.Duration
	end    time.Time
	calls  int            // requests in moto's log
	ops    map[string]int // requests per operation, as the proxy saw them
	vcount string         // clusterctl's "aws calls: N (...)" line, with -v
	rssKB  int64
	cpu    time.Duration
	// callTime is the time per operation in clusterctl's -v log.
	callTime map[string]time.Duration
	stdout   []byte
	stderr   []byte
}

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%5.1fs] %s\n", time.Since(b.started).Seconds(), fmt.Sprintf(format, args...))
}

func (b *bench) cleanup() {
	if b.proxy != nil {
		b.proxy.close()
	}
	b.moto.stop()
	if b.tmp != "" {
		os.RemoveAll(b.tmp)
	}
}

func (b *bench) run() error {
	for _, tool := range []string{"moto_server", "aws", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found on PATH (pip install 'moto[server]' awscli; apt-get install jq)", tool)
		}
	}
	var err error
	if b.tmp, err = os.MkdirTemp("", "clusterctl-bench-"); err != nil {
		return err
	}
	if b.o.logs != "" {
		if err := os.MkdirAll(b.o.logs, 0o755); err != nil {
			return err
		}
	}
	if b.o.baseline, err = filepath.Abs(b.o.baseline); err != nil {
		return err
	}
	if b.o.bin == "" {
		b.o.bin = filepath.Join(b.tmp, "clusterctl")
		b.progress("building clusterctl")
		build := exec.CommandContext(b.ctx, "go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=bench", "-o", b.o.bin, "./cmd/clusterctl")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building clusterctl: %w", err)
		}
	} else if b.o.bin, err = filepath.Abs(b.o.bin); err != nil {
		return err
	}

	b.progress("starting moto_server")
	if b.moto, err = startMoto(b.tmp); err != nil {
		return err
	}
	if b.proxy, err = startProxy(b.moto.URL); err != nil {
		return err
	}
	b.env = childEnv(b.proxy.url)
	if b.viaProxy, err = newClients(b.ctx, b.proxy.url); err != nil {
		return err
	}
	if b.direct, err = newClients(b.ctx, b.moto.URL); err != nil {
		return err
	}
	loadBefore := loadavg()

	b.main = table{header: []string{"measurement", "tool", "median", "p90", "range", "vs clusterctl", "above floor", "CPU", "in AWS calls", "calls (server log)", "calls by operation (proxy; clusterctl -v)"}}
	b.cold = table{header: []string{"measurement", "tool", "median", "p90", "range", "peak RSS"}}
	b.mem = table{header: []string{"measurement", "tool", "peak RSS"}}

	if b.o.applyOnly {
		if err := b.apply(); err != nil {
			return err
		}
		b.report(loadBefore)
		return nil
	}
	b.progress("create-core %s", clusterName)
	if _, err := b.exec(nil, b.o.bin, "create-core", clusterName, "-q"); err != nil {
		return err
	}
	if b.bucket, err = b.clusterBucket(); err != nil {
		return err
	}
	next := 0
	for g := 1; g <= b.o.groups; g++ {
		b.progress("add-agents w%d (%d x %s)", g, b.o.nodes, b.o.itype)
		if _, err := b.exec(nil, b.o.bin, "add-agents", "-n", fmt.Sprintf("w%d", g), "-t", b.o.itype, "-j", clusterName, "-c", strconv.Itoa(b.o.nodes), "-q"); err != nil {
			return err
		}
		if next < len(b.o.checkpoints) && b.o.checkpoints[next] == g {
			if err := b.listNodes(g); err != nil {
				return err
			}
			if b.o.checkOnly {
				return nil
			}
			next++
		}
	}
	if err := b.addAgents(); err != nil {
		return err
	}
	if err := b.completion(); err != nil {
		return err
	}
	if b.o.applyGroups > 0 {
		if err := b.apply(); err != nil {
			return err
		}
	}
	if err := b.coldStart(); err != nil {
		return err
	}
	b.report(loadBefore)
	return nil
}

// childEnv is the environment of every tool: the standard AWS variables
// pointing at the proxy, dummy credentials, no shared config to read.
func childEnv(endpoint string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	return append(env,
		"AWS_ENDPOINT_URL="+endpoint,
		"AWS_REGION="+region, "AWS_DEFAULT_REGION="+region,
		"AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER=",
	)
}

var (
	vSummary = regexp.MustCompile(`(?m)^aws calls: .*$`)
	vCall    = regexp.MustCompile(`(?m)^aws (\S+) (\S+) `) // aws OPERATION DURATION ok|error
)

// exec runs one tool and measures it: wall time, requests in moto's log and
// through the proxy, peak RSS (of the process and the children it waited
// for), and clusterctl's -v summary if it printed one.
func (b *bench) exec(extraEnv []string, name string, args ...string) (result, error) {
	cmd := exec.CommandContext(b.ctx, name, args...)
	cmd.Env = append(append([]string(nil), b.env...), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A process group per tool, so cancelling also stops the aws processes a
	// baseline script started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	calls, mark := b.moto.requests(), b.proxy.mark()
	start := time.Now()
	err := cmd.Run()
	end := time.Now()
	r := result{dur: end.Sub(start), end: end, calls: b.moto.requests() - calls, ops: b.proxy.since(mark), stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	if ps := cmd.ProcessState; ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			r.rssKB = ru.Maxrss
			r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	r.vcount = string(vSummary.Find(stderr.Bytes()))
	for _, m := range vCall.FindAllSubmatch(stderr.Bytes(), -1) {
		if d, err := time.ParseDuration(string(m[2])); err == nil {
			if r.callTime == nil {
				r.callTime = map[string]time.Duration{}
			}
			r.callTime[string(m[1])] += d
		}
	}
	b.runs++
	if b.o.logs != "" {
		log := fmt.Sprintf("%04d-%s.log", b.runs, filepath.Base(name))
		head := fmt.Sprintf("# %s %s\n# %s, exit %v\n", name, strings.Join(args, " "), r.dur, err)
		_ = os.WriteFile(filepath.Join(b.o.logs, log), append([]byte(head), r.stderr...), 0o644)
	}
	if err != nil {
		if b.ctx.Err() != nil {
			return r, b.ctx.Err()
		}
		return r, fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, lastLines(stderr.String(), 10))
	}
	return r, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// floor is the least any tool can do: the DescribeInstances pages (one per
// 1000 instances) and the swarm's status snapshot (one GetObject), one
// after the other, from a client that is already running and knows the
// bucket.
func (b *bench) floor(c clients) (result, int, error) {
	calls, mark := b.moto.requests(), b.proxy.mark()
	start := time.Now()
	in := &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "shutting-down", "stopping", "stopped"}},
			{Name: aws.String("tag:clusterctl:cluster"), Values: []string{clusterName}},
		},
		MaxResults: aws.Int32(1000),
	}
	n := 0
	p := ec2.NewDescribeInstancesPaginator(c.ec2, in)
	for p.HasMorePages() {
		page, err := p.NextPage(b.ctx)
		if err != nil {
			return result{}, 0, fmt.Errorf("floor DescribeInstances: %w", err)
		}
		for _, r := range page.Reservations {
			n += len(r.Instances)
		}
	}
	obj, err := c.s3.GetObject(b.ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(names.StatusKey)})
	if err != nil {
		return result{}, 0, fmt.Errorf("floor GetObject: %w", err)
	}
	_, err = io.Copy(io.Discard, obj.Body)
	obj.Body.Close()
	if err != nil {
		return result{}, 0, fmt.Errorf("floor GetObject: %w", err)
	}
	end := time.Now()
	return result{dur: end.Sub(start), end: end, calls: b.moto.requests() - calls, ops: b.proxy.since(mark)}, n, nil
}

// countNodes counts the instances list-nodes printed, and the swarm's
// nodes without one.
func countNodes(out []byte) (instances, swarmOnly int, err error) {
	var nodes []struct {
		SwarmOnly bool `json:"swarmOnly"`
	}
	if err := json.Unmarshal(out, &nodes); err != nil {
		return 0, 0, err
	}
	for _, n := range nodes {
		if n.SwarmOnly {
			swarmOnly++
		}
	}
	return len(nodes) - swarmOnly, swarmOnly, nil
}

// listNodes measures list-nodes with g groups in the cluster.
func (b *bench) listNodes(g int) error {
	want := 1 + g*b.o.nodes
	label := fmt.Sprintf("list-nodes, %d × %d (%d nodes)", g, b.o.nodes, want)
	b.progress("%s: checks", label)
	script := filepath.Join(b.o.baseline, "list-nodes.sh")

	// Untimed first runs: the same answer from every tool, clusterctl's
	// own call count, and warm caches for the timed runs.
	// -v costs one short line per call on stderr, and tells the time spent
	// in AWS calls.
	ctlArgs := []string{"list-nodes", "-j", clusterName, "-o", "json", "-v"}
	if err := b.publishSnapshot(); err != nil {
		return err
	}
	v, err := b.exec(nil, b.o.bin, ctlArgs...)
	if err != nil {
		return err
	}
	if n, gone, err := countNodes(v.stdout); err != nil || n != want || gone != 1 {
		return fmt.Errorf("clusterctl list-nodes returned %d nodes and %d swarm nodes without an instance (%v), want %d and 1", n, gone, err, want)
	}
	base, err := b.exec(nil, script, clusterName)
	if err != nil {
		return err
	}
	if !bytes.Equal(v.stdout, base.stdout) {
		a, c := filepath.Join(os.TempDir(), "bench-clusterctl.json"), filepath.Join(os.TempDir(), "bench-baseline.json")
		_ = os.WriteFile(a, v.stdout, 0o644)
		_ = os.WriteFile(c, base.stdout, 0o644)
		return fmt.Errorf("baseline list-nodes.sh and clusterctl disagree: diff %s %s", a, c)
	}
	for _, c := range []clients{b.viaProxy, b.direct} {
		if _, n, err := b.floor(c); err != nil || n != want {
			return fmt.Errorf("floor saw %d instances (%v), want %d", n, err, want)
		}
	}
	if b.o.checkOnly {
		return nil
	}

	var ctl, bl, fp, fd sample
	steps := []func() error{
		func() error { r, err := b.exec(nil, b.o.bin, ctlArgs...); ctl.add(r); return err },
		func() error { r, err := b.exec(nil, script, clusterName); bl.add(r); return err },
		func() error { r, _, err := b.floor(b.viaProxy); fp.add(r); return err },
		func() error { r, _, err := b.floor(b.direct); fd.add(r); return err },
	}
	// Interleaved, and each repetition starts with a different tool, so
	// drift in the machine's load falls on all of them alike.
	for rep := 0; rep < b.o.reps; rep++ {
		b.progress("%s: repetition %d/%d", label, rep+1, b.o.reps)
		// Fresh for every repetition, as the leader keeps it (untimed).
		if err := b.publishSnapshot(); err != nil {
			return err
		}
		for k := range steps {
			if err := steps[(rep+k)%len(steps)](); err != nil {
				return err
			}
		}
	}
	ref := median(ctl.durs)
	floor := median(fp.durs)
	b.row(label, "clusterctl list-nodes -o json -v", &ctl, ref, floor)
	b.row(label, "baseline list-nodes.sh (aws CLI + jq)", &bl, ref, floor)
	b.row(label, "floor: SDK DescribeInstances + GetObject in-process", &fp, ref, floor)
	b.row(label, "floor, straight to moto (no proxy)", &fd, ref, 0)
	b.mem.add(label, "clusterctl list-nodes -o json -v", fmtKB(ctl.rssKB))
	b.mem.add(label, "baseline list-nodes.sh (largest of its processes)", fmtKB(bl.rssKB))
	b.listRatio = append(b.listRatio, ratioAt{groups: g, nodes: want, ratio: float64(median(bl.durs)) / float64(ref),
		gap: median(bl.durs) - ref, ctlAbove: ref - floor, blAbove: median(bl.durs) - floor, floor: floor})

	// clusterctl's calls: the floor's, by the server's count and by
	// operation: at most one DescribeInstances per 1000 nodes and the one
	// GetObject of the snapshot, from the bucket the instances name.
	limit := int(math.Ceil(float64(want) / 1000))
	ok := ctl.ops["ec2:DescribeInstances"] <= limit && ctl.ops["s3:GetObject"] == 1 && len(ctl.ops) == 2
	for _, c := range ctl.calls {
		ok = ok && c <= limit+1
	}
	b.listCallsOK = b.listCallsOK && ok
	b.listCallsNote += fmt.Sprintf(" %d nodes: %s (limit %d + 1);", want, fmtCalls(ctl.calls), limit)
	return nil
}

// renderGroup writes the group template the baseline deploys, as an
// operator of that approach keeps it in a file.
func (b *bench) renderGroup(group string) (string, error) {
	r, err := b.exec(nil, b.o.bin, "render", "group", "-n", group, "-t", b.o.itype, "-c", strconv.Itoa(b.o.nodes), "-j", clusterName)
	if err != nil {
		return "", err
	}
	path := filepath.Join(b.tmp, group+".json")
	return path, os.WriteFile(path, r.stdout, 0o644)
}

// addAgents measures a group's creation end to end. moto creates stacks
// synchronously, so this is each tool's own cost plus moto's work.
func (b *bench) addAgents() error {
	label := fmt.Sprintf("add-agents, %d nodes", b.o.nodes)
	script := filepath.Join(b.o.baseline, "add-agents.sh")
	count := strconv.Itoa(b.o.nodes)
	var ctl, bl sample
	for rep := 0; rep < b.o.addReps; rep++ {
		b.progress("%s: repetition %d/%d", label, rep+1, b.o.addReps)
		group := fmt.Sprintf("b%d", rep+1)
		tmpl, err := b.renderGroup(group)
		if err != nil {
			return err
		}
		steps := []func() error{
			func() error {
				r, err := b.exec(nil, b.o.bin, "add-agents", "-n", fmt.Sprintf("a%d", rep+1), "-t", b.o.itype, "-j", clusterName, "-c", count, "-q", "-v")
				ctl.add(r)
				return err
			},
			func() error {
				r, err := b.exec(nil, script, clusterName, group, b.o.itype, count, tmpl)
				bl.add(r)
				return err
			},
		}
		for k := range steps {
			if err := steps[(rep+k)%len(steps)](); err != nil {
				return err
			}
		}
	}
	ref := median(ctl.durs)
	b.row(label, "clusterctl add-agents -q -v", &ctl, ref, 0)
	b.notes = append(b.notes, fmt.Sprintf("clusterctl add-agents (%s), median time per AWS operation: %s. It ends by listing the new group's nodes (EC2.DescribeInstances), which the baseline does not do.", label, opTimes(&ctl)))
	b.row(label, "baseline add-agents.sh (create-stack + wait)", &bl, ref, 0)
	return nil
}

var initLine = regexp.MustCompile(`(?m)^init (\S+) @[0-9.]+ ms, ([0-9.]+) ms clock`)
