package bootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// A cluster of three managers and a group of two agents running a service
// of two replicas is brought to a new Docker Engine version (update-core
// --engine-version, which replaces the managers) and then to a new node
// agent (a new clusterctl's: upgrade). The upgrade runs as the command
// does — its plan, the backup, the managers one at a time, validation from
// the leader's status snapshot — with CloudFormation's and Auto Scaling's
// part played here: each stack is updated on moto by the real change set,
// then its instances are replaced as its rolling update policy says, each
// old node through the termination hook. A validation that fails after the
// managers stops the upgrade with what failed; once that is fixed, the
// upgrade again skips the managers and rolls the group. The service never
// runs fewer than one task, and every node ends on the new agent and
// engine.
func TestUpgradeRollsEveryNode(t *testing.T) {
	scenario(t)
	three := 3
	tc := deployCoreSpec(t, "upgrade", spec.Core{Managers: &three, EngineVersion: "24.0.9"})
	g := tc.deployGroup(t, "g", 2, nil)
	managers := tc.bootManagers(t)
	agents := []*enginetest.Node{g.bootAgent(t, 0), g.bootAgent(t, 1)}
	for _, a := range agents {
		g.readyAgent(t, a)
	}
	createService(t, managers[0], "web", 2, "--constraint", "engine.labels.clusterctl.group==g", "--replicas-max-per-node", "1")
	eventually(t, 3*time.Minute, "both replicas of web run", func() (bool, string) {
		tasks, err := tryServiceTasks(managers[0], "web")
		if err != nil {
			return false, err.Error()
		}
		return len(runningOn(tasks)) == 2, fmt.Sprint(runningOn(tasks))
	})
	sampler := watchRunning(t, "web", managers)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	nodeAgent(t) // built into lab.Dir/agent
	svc := tc.upgradeClients(t, filepath.Join(lab.Dir, "agent"))
	svc.Run = cluster.Run{Command: "update-core", ID: "upgrade-engine"}

	// The new engine version: update-core, then the managers' rolling
	// replacement it starts.
	if _, err := cluster.NewCore(svc).UpdateCore(ctx, cluster.CoreUpdateOptions{Cluster: tc.name, Yes: true, Desired: func(c spec.Core) spec.Core {
		c.EngineVersion = spec.DefaultEngineVersion
		return c
	}}); err != nil {
		t.Fatalf("update-core --engine-version %s: %v", spec.DefaultEngineVersion, err)
	}
	managers = tc.rollManagers(t, managers, sampler)

	// A new clusterctl: its node agent, built anew, differs.
	next := nextAgent(t)
	svc = tc.upgradeClients(t, filepath.Join(lab.Dir, "agent-next"))
	svc.Run = cluster.Run{Command: "upgrade", ID: "upgrade"}
	roller := &labRoller{inner: cluster.NewChangeSetRoller(svc), requests: make(chan labRoll)}
	up := cluster.NewUpgrader(svc)
	up.Roller, up.Poll, up.PendingBound, up.BackupWait = roller, 2*time.Second, 10*time.Second, 3*time.Minute

	var plan *cluster.UpgradePlan
	opts := cluster.UpgradeOptions{Cluster: tc.name, Yes: true, ValidateTimeout: 45 * time.Second, OnPlan: func(p *cluster.UpgradePlan) error {
		plan = p
		return nil
	}}
	// The first run: the managers are rolled, then a service that cannot
	// be placed fails the validation before the group.
	res, err := roller.serve(t, ctx, up, opts, func(r labRoll) {
		if r.stack.Group != names.GroupControl {
			t.Fatalf("the upgrade rolled %s after a failed validation", r.stack.Stack)
		}
		managers = tc.rollManagers(t, managers, sampler)
		createService(t, managers[0], "stuck", 1, "--constraint", "node.labels.nowhere==true")
	})
	if err == nil || !strings.Contains(err.Error(), "did not validate within") || !strings.Contains(err.Error(), "service stuck") ||
		!strings.Contains(err.Error(), "clusterctl upgrade -j upgrade` resumes the upgrade") {
		t.Fatalf("the first upgrade: %v, want it stopped by the stuck service, with the way to resume", err)
	}
	if len(plan.Stacks) != 2 || !hasChange(plan.Stacks[0], cluster.UpgradeAgent) || hasChange(plan.Stacks[0], cluster.UpgradeEngine) ||
		!hasChange(plan.Stacks[1], cluster.UpgradeAgent) || !hasChange(plan.Stacks[1], cluster.UpgradeEngine) {
		t.Errorf("the first plan: %+v, want the managers' agent, the group's agent and engine", plan.Stacks)
	}
	if !slices.Equal(res.Upgraded, []string{tc.name}) {
		t.Errorf("the first upgrade upgraded %v, want the core only", res.Upgraded)
	}

	// Fixed, the upgrade resumes: the managers are current, the group is
	// rolled.
	dockerOn(t, managers[0], "service", "rm", "stuck")
	opts.ValidateTimeout = 3 * time.Minute
	res, err = roller.serve(t, ctx, up, opts, func(r labRoll) {
		if r.stack.Stack != g.stack {
			t.Fatalf("the resumed upgrade rolled %s, want only %s", r.stack.Stack, g.stack)
		}
		agents = g.roll(t, tc, agents, sampler)
	})
	if err != nil {
		t.Fatalf("the resumed upgrade: %v", err)
	}
	if !plan.Stacks[0].Current || plan.Stacks[1].Current || !slices.Equal(res.Upgraded, []string{g.stack}) {
		t.Errorf("the resumed upgrade: plan %+v, upgraded %v; want the group only", plan.Stacks, res.Upgraded)
	}

	sampler.stop()
	t.Logf("measured: web ran %d tasks at the least over %d reads during the upgrade", sampler.least, sampler.reads)
	if sampler.reads < 20 || sampler.least < 1 {
		t.Errorf("web ran %d tasks at the least over %d reads during the upgrade, want at least 1", sampler.least, sampler.reads)
	}
	for _, n := range append(slices.Clone(managers), agents...) {
		if calls := n.Calls("dnf"); !slices.Contains(calls, "install -y docker-"+spec.DefaultEngineVersion) {
			t.Errorf("%s: dnf calls %q, want docker-%s installed", n.Spec.Name, calls, spec.DefaultEngineVersion)
		}
		var labels []string
		if err := json.Unmarshal([]byte(dockerOn(t, n, "info", "--format", "{{json .Labels}}")), &labels); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{names.EngineLabelAgent + "=" + next.SHA256, names.EngineLabelEngineVersion + "=" + spec.DefaultEngineVersion} {
			if !slices.Contains(labels, want) {
				t.Errorf("%s: engine labels %q lack %s", n.Spec.Name, labels, want)
			}
		}
	}
	if nodes := swarmNodes(t, managers[0]); len(nodes) != 5 {
		t.Errorf("%d swarm nodes after the upgrade, want 5", len(nodes))
	}
}

func hasChange(s cluster.StackUpgrade, what string) bool {
	return slices.ContainsFunc(s.Changes, func(c cluster.UpgradeChange) bool { return strings.HasPrefix(c.What, what) })
}

// nextAgent builds the node agent again, stamped with another version: the
// agent of a newer clusterctl.
func nextAgent(t *testing.T) *agentbin.Binary {
	t.Helper()
	b, err := buildAgent(filepath.Join(lab.Dir, "agent-next"), "next")
	if err != nil {
		t.Fatal(err)
	}
	if old, _ := nodeAgent(t); old.SHA256 == b.SHA256 {
		t.Fatal("the agent built anew is the same")
	}
	return b
}

// upgradeClients are what update-core and upgrade run on against the lab,
// as a clusterctl carrying the agent built into dir (pinned for both
// architectures, as the lab's stacks are).
func (tc *testCluster) upgradeClients(t *testing.T, dir string) *cluster.Clients {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(dir, agentbin.FileName(runtime.GOARCH)))
	if err != nil {
		t.Fatal(err)
	}
	set := agentbin.Set{}
	for _, arch := range agentbin.Archs {
		set[arch] = agentbin.New(arch, body)
	}
	svc := tc.service()
	svc.SSM = ssm.NewFromConfig(awsConfig())
	svc.Agents = func(context.Context) (agentbin.Set, error) { return set, nil }
	return svc
}

// labRoll is one stack of an upgrade whose instances the test replaces.
type labRoll struct {
	stack cluster.StackUpgrade
	done  chan struct{}
}

// labRoller updates a stack through the real change set, then hands it to
// the test's goroutine to replace its instances (where a test may fail),
// and returns once they are replaced: what CloudFormation's wait does.
type labRoller struct {
	inner    cluster.StackRoller
	requests chan labRoll
}

func (r *labRoller) Roll(ctx context.Context, cl string, s cluster.StackUpgrade, imageID string) error {
	if err := r.inner.Roll(ctx, cl, s, imageID); err != nil {
		return err
	}
	roll := labRoll{stack: s, done: make(chan struct{})}
	select {
	case r.requests <- roll:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-roll.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serve runs the upgrade, replacing the instances of each stack it rolls
// with replace on the test's goroutine, and returns its outcome.
func (r *labRoller) serve(t *testing.T, ctx context.Context, up *cluster.Upgrader, o cluster.UpgradeOptions, replace func(labRoll)) (*cluster.UpgradeResult, error) {
	t.Helper()
	type outcome struct {
		res *cluster.UpgradeResult
		err error
	}
	ended := make(chan outcome, 1)
	go func() {
		res, err := up.Upgrade(ctx, o)
		ended <- outcome{res, err}
	}()
	for {
		select {
		case roll := <-r.requests:
			replace(roll)
			close(roll.done)
		case out := <-ended:
			return out.res, out.err
		case <-time.After(15 * time.Minute):
			t.Fatal("the upgrade did not end within 15 minutes")
		}
	}
}

// rollManagers replaces the managers as the core's rolling update does
// (MaxBatchSize 1, every manager in service: a new one first, then an old
// one through the hook), from the launch template's newest version, and
// returns the new managers.
func (tc *testCluster) rollManagers(t *testing.T, managers []*enginetest.Node, s *runningSampler) []*enginetest.Node {
	t.Helper()
	tc.controlUserData = launchTemplateUserData(t, tc.c, tc.name, names.ResourceControlLaunchTemplate)
	live := slices.Clone(managers)
	var fresh []*enginetest.Node
	for _, old := range managers {
		n := tc.bootManager(t, tc.scaleManagers(t, +1))
		tc.readyManager(t, n)
		live = append(live, n)
		fresh = append(fresh, n)
		s.setLive(live)
		token := tc.terminate(t, tc.managerGroup, old.Spec.InstanceID, old)
		if act := completed(t, token, 3*time.Minute); act.Result != "CONTINUE" {
			t.Fatalf("lifecycle action of %s: %+v", old.Spec.Name, act)
		}
		live = slices.DeleteFunc(live, func(n *enginetest.Node) bool { return n == old })
		s.setLive(live)
		old.PowerOff()
		tc.shrink(t, old.Spec.InstanceID)
	}
	eventually(t, 3*time.Minute, "three reachable managers, one leader", func() (bool, string) {
		q, err := tryQuorum(fresh)
		return err == nil && q.managers == 3 && q.reachable == 3 && q.leaders == 1, fmt.Sprintf("%+v %v", q, err)
	})
	return fresh
}

// roll replaces the group's agents as its rolling update does (a batch of
// one, its capacity kept: the new node first, then the old one through
// the hook), from the launch template's newest version, and returns the
// new agents.
func (g *testGroup) roll(t *testing.T, tc *testCluster, agents []*enginetest.Node, s *runningSampler) []*enginetest.Node {
	t.Helper()
	if p := g.rendered.Parameters; p[names.ParamMaxBatchSize] != "1" || p[names.ParamMinInstancesInService] != fmt.Sprint(len(agents)) {
		t.Fatalf("the group's rolling update: batches of %s, %s in service; the test plays batches of 1 keeping all", p[names.ParamMaxBatchSize], p[names.ParamMinInstancesInService])
	}
	g.userData = launchTemplateUserData(t, tc.c, g.stack, names.ResourceLaunchTemplate)
	var fresh []*enginetest.Node
	for _, old := range agents {
		g.instances = append(g.instances, tc.scale(t, g.asg, +1))
		n := g.bootAgent(t, len(g.instances)-1)
		g.readyAgent(t, n)
		fresh = append(fresh, n)
		token := tc.terminate(t, g.asg, old.Spec.InstanceID, old)
		if act := completed(t, token, 4*time.Minute); act.Result != "CONTINUE" {
			t.Fatalf("lifecycle action of %s: %+v", old.Spec.Name, act)
		}
		old.PowerOff()
		tc.shrink(t, old.Spec.InstanceID)
	}
	return fresh
}

// runningSampler reads how many tasks of a service run, every half second
// from the first live manager that answers, and keeps the least it read.
type runningSampler struct {
	service string
	cancel  context.CancelFunc
	done    chan struct{}

	mu    sync.Mutex
	live  []*enginetest.Node
	least int
	reads int
}

func watchRunning(t *testing.T, service string, managers []*enginetest.Node) *runningSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &runningSampler{service: service, cancel: cancel, done: make(chan struct{}), live: slices.Clone(managers), least: -1}
	t.Cleanup(s.stop)
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			s.read()
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *runningSampler) read() {
	s.mu.Lock()
	live := slices.Clone(s.live)
	s.mu.Unlock()
	for _, m := range live {
		tasks, err := tryServiceTasks(m, s.service)
		if err != nil {
			continue // a manager on its way out answers no more
		}
		n := 0
		for _, c := range runningOn(tasks) {
			n += c
		}
		s.mu.Lock()
		if s.least < 0 || n < s.least {
			s.least = n
		}
		s.reads++
		s.mu.Unlock()
		return
	}
}

func (s *runningSampler) setLive(live []*enginetest.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live = slices.Clone(live)
}

// stop ends the sampling; the counts are final once it returns.
func (s *runningSampler) stop() {
	s.cancel()
	<-s.done
}
