package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// An upgrade brings every node of a cluster to what this clusterctl and
// the image parameter give now, by the stacks' own rolling updates (a
// swarm backup first, then the core, whose update policy replaces the
// managers one at a time, then the groups), validating the cluster from
// the managers' status snapshot after each stack. It keeps no state of
// its own: a stack already current is skipped, so running it again
// resumes where it stopped.

// DefaultValidateTimeout is how long the cluster may take to validate
// after a stack's update before the upgrade stops.
const DefaultValidateTimeout = 15 * time.Minute

// StackRoller updates one stack of an upgrade to what this clusterctl
// renders (with imageID, when given, as its image) and returns once
// CloudFormation has ended the update, its rolling replacement included.
type StackRoller interface {
	Roll(ctx context.Context, cluster string, s StackUpgrade, imageID string) error
}

// Upgrader runs upgrade.
type Upgrader struct {
	artifacts  *Artifacts
	changeSets StackRoller
	find       *Finder
	leases     *Leases
	requests   *Requests
	status     *Status
	say        *Say
	ASG        ASGAPI
	SSM        SSMAPI
	Stacks     StackManager
	// Roller updates the stacks; nil: through change sets, as update-core
	// and update-group do.
	Roller StackRoller
	// Poll is how often validation reads the snapshot; PendingBound how
	// long a task may stay pending.
	Poll, PendingBound time.Duration
	// BackupWait bounds the wait for the swarm's backup.
	BackupWait time.Duration
	Now        func() time.Time
}

// UpgradeOptions say what upgrade should do.
type UpgradeOptions struct {
	Cluster string
	// ImageID is the image every stack takes (an AMI or a parameter
	// path); "": each its own image setting.
	ImageID string
	// Parallel is how many groups are updated at once.
	Parallel        int
	ValidateTimeout time.Duration
	DryRun, Yes     bool
	// OnPlan, when set, is shown the plan before anything is done.
	OnPlan func(*UpgradePlan) error
}

// UpgradeResult says what upgrade did. The JSON keys are a public
// interface.
type UpgradeResult struct {
	Plan *UpgradePlan `json:"plan"`
	// Upgraded are the stacks updated by this run, in order.
	Upgraded []string `json:"upgraded"`
	DryRun   bool     `json:"dryRun"`
}

// changeSetRoller updates stacks as update-core and update-group do.
type changeSetRoller struct {
	core   *Core
	groups *Groups
}

func (r changeSetRoller) Roll(ctx context.Context, cluster string, s StackUpgrade, imageID string) error {
	if s.core() {
		_, err := r.core.UpdateCore(ctx, CoreUpdateOptions{Cluster: cluster, Yes: true, Desired: func(c spec.Core) spec.Core {
			if imageID != "" {
				c.ImageID = imageID
			}
			return c
		}})
		return err
	}
	_, err := r.groups.UpdateGroup(ctx, UpdateOptions{Cluster: cluster, Group: s.Group, Yes: true, Desired: func(g spec.Group) spec.Group {
		if imageID != "" {
			g.ImageID = imageID
		}
		return g
	}})
	return err
}

func (s *Upgrader) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// resumeHint is what to run to go on after the upgrade stopped.
func resumeHint(cluster string) string {
	return fmt.Sprintf("`clusterctl upgrade -j %s` resumes the upgrade: the stacks already current are skipped", cluster)
}

// Upgrade plans the upgrade of a cluster and, unless a dry run, asks and
// runs it.
func (s *Upgrader) Upgrade(ctx context.Context, o UpgradeOptions) (*UpgradeResult, error) {
	if err := spec.CheckClusterName(o.Cluster); err != nil {
		return nil, err
	}
	if err := spec.CheckImage("imageId", o.ImageID); err != nil {
		return nil, err
	}
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	if o.ValidateTimeout <= 0 {
		o.ValidateTimeout = DefaultValidateTimeout
	}
	core, err := s.find.getCore(ctx, o.Cluster)
	if err != nil {
		return nil, err
	}
	if err := usable(core, "core"); err != nil {
		return nil, err
	}
	groups, err := s.groupStacks(ctx, o.Cluster)
	if err != nil {
		return nil, err
	}
	plan, err := s.plan(ctx, o, core, groups)
	if err != nil {
		return nil, err
	}
	res := &UpgradeResult{Plan: plan, Upgraded: []string{}, DryRun: o.DryRun}
	if o.OnPlan != nil {
		if err := o.OnPlan(plan); err != nil {
			return res, err
		}
	}
	pending := plan.Pending()
	if o.DryRun || len(pending) == 0 {
		return res, nil
	}
	if err := s.leases.checkOperator(ctx, core); err != nil {
		return res, err
	}
	if err := s.say.confirm(ctx, o.Yes, fmt.Sprintf("upgrade cluster %q, replacing the nodes of %d stacks", o.Cluster, len(pending))); err != nil {
		return res, err
	}
	bucket, err := s.find.bucketOf(ctx, core)
	if err != nil {
		return res, err
	}
	// Before anything is touched, the cluster must be valid: an upgrade
	// that stopped on a failed validation resumes only once it is fixed.
	s.say.printf("Validating cluster %s before the upgrade\n", o.Cluster)
	if err := s.validate(ctx, o, bucket, time.Time{}); err != nil {
		return res, err
	}
	if err := s.backup(ctx, o.Cluster); err != nil {
		return res, err
	}
	roller := s.roller()
	for i := 0; i < len(pending); {
		batch := pending[i : i+1]
		if !pending[i].core() {
			batch = pending[i:min(i+o.Parallel, len(pending))]
		}
		i += len(batch)
		if err := s.rollBatch(ctx, roller, o, batch); err != nil {
			return res, err
		}
		for _, b := range batch {
			res.Upgraded = append(res.Upgraded, b.Stack)
		}
		ended := s.now()
		s.say.printf("Validating cluster %s after %s\n", o.Cluster, stackNames(batch))
		if err := s.validate(ctx, o, bucket, ended); err != nil {
			return res, err
		}
	}
	s.say.printf("Cluster %s is upgraded\n", o.Cluster)
	return res, nil
}

func stackNames(b []StackUpgrade) string {
	var out []string
	for _, s := range b {
		out = append(out, s.Stack)
	}
	return strings.Join(out, ", ")
}

// rollBatch updates the stacks of batch at once and waits for them all.
func (s *Upgrader) rollBatch(ctx context.Context, roller StackRoller, o UpgradeOptions, batch []StackUpgrade) error {
	errsOf := make([]error, len(batch))
	var wg sync.WaitGroup
	for i, b := range batch {
		s.say.printf("Upgrading %s (%d nodes)\n", b.Stack, b.Nodes)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errsOf[i] = roller.Roll(ctx, o.Cluster, b, o.ImageID)
		}()
	}
	wg.Wait()
	for i, err := range errsOf {
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			// The stack's own wait said that CloudFormation carries on
			// and how to re-attach.
			return &errs.InterruptedError{Err: err, Hint: resumeHint(o.Cluster) + ", once CloudFormation has ended the update"}
		}
		return fmt.Errorf("upgrading %s: %w\nThe upgrade stopped; %s", batch[i].Stack, err, resumeHint(o.Cluster))
	}
	return nil
}

func (s *Upgrader) roller() StackRoller {
	if s.Roller != nil {
		return s.Roller
	}
	return s.changeSets
}

// backup asks the managers for a backup of the swarm and waits until it
// is taken.
func (s *Upgrader) backup(ctx context.Context, cluster string) error {
	wait := s.BackupWait
	if wait <= 0 {
		wait = names.RequestMaxAge + time.Minute
	}
	bctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	r, err := s.requests.RequestBackup(bctx, cluster, true, s.say.IO.ErrOut)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("the backup before the upgrade: %w; nothing was upgraded", err)
	}
	s.say.printf("Swarm of %s backed up at %s\n", cluster, r.Taken.UTC().Format(time.RFC3339))
	return nil
}

// groupStacks reads every group's stack, refusing a group that cannot be
// read or is not in a state an update can start from: an upgrade that
// went on past it would leave the cluster half done with no way to say
// which half.
func (s *Upgrader) groupStacks(ctx context.Context, cluster string) ([]*stacks.Stack, error) {
	groups, _, err := s.find.groupStacks(ctx, cluster)
	if err != nil {
		return nil, err
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Group < groups[j].Group })
	var out []*stacks.Stack
	for _, g := range groups {
		st, err := s.find.groupStack(ctx, cluster, g.Group)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, refusedFor(err, "group %s of cluster %s cannot be read (%v): the upgrade touches nothing until every group can be", g.Group, cluster, err)
		}
		if err := usable(st, "group"); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// plan compares every stack with what it would run now.
func (s *Upgrader) plan(ctx context.Context, o UpgradeOptions, core *stacks.Stack, groups []*stacks.Stack) (*UpgradePlan, error) {
	set, err := s.artifacts.agents(ctx)
	if err != nil {
		return nil, err
	}
	engineOld, engineNew := coreEngine(core)
	t := &target{imageID: o.ImageID, agents: set, ssm: s.SSM, engine: engineNew, cache: map[string]string{}}
	counts, err := s.inService(ctx, o.Cluster)
	if err != nil {
		return nil, err
	}
	p := &UpgradePlan{Cluster: o.Cluster}
	changes, err := t.stackChanges(ctx, core, engineOld, core.Outputs[names.OutputContractVersion])
	if err != nil {
		return nil, err
	}
	p.Stacks = append(p.Stacks, StackUpgrade{Stack: core.Name, Group: names.GroupControl, Nodes: counts[names.GroupControl], Current: len(changes) == 0, Changes: changes})
	for _, st := range groups {
		body, err := s.Stacks.Template(ctx, st.Name)
		if err != nil {
			return nil, err
		}
		group := st.Tags[names.TagGroup]
		changes, err := t.stackChanges(ctx, st, render.ReadEngineVersion(body), st.Parameters[names.OutputContractVersion])
		if err != nil {
			return nil, err
		}
		p.Stacks = append(p.Stacks, StackUpgrade{Stack: st.Name, Group: group, Nodes: counts[group], Current: len(changes) == 0, Changes: changes})
	}
	for i := range p.Stacks {
		if p.Stacks[i].Changes == nil {
			p.Stacks[i].Changes = []UpgradeChange{}
		}
	}
	return p, nil
}

// inService counts the instances in service of each of the cluster's
// Auto Scaling groups, by its clusterctl group (the managers' under
// control), found by their ownership tags.
func (s *Upgrader) inService(ctx context.Context, cluster string) (map[string]int, error) {
	in := &autoscaling.DescribeAutoScalingGroupsInput{Filters: []asgtypes.Filter{
		{Name: aws.String("tag:" + names.TagCluster), Values: []string{cluster}},
	}}
	out := map[string]int{}
	p := autoscaling.NewDescribeAutoScalingGroupsPaginator(s.ASG, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing the auto scaling groups of %s: %w", cluster, err)
		}
		for _, g := range page.AutoScalingGroups {
			group := ""
			for _, tag := range g.Tags {
				if aws.ToString(tag.Key) == names.TagGroup {
					group = aws.ToString(tag.Value)
				}
			}
			for _, i := range g.Instances {
				if i.LifecycleState == asgtypes.LifecycleStateInService {
					out[group]++
				}
			}
		}
	}
	return out, nil
}

// validate waits until a status snapshot published after after shows the
// cluster valid, for at most o.ValidateTimeout; a cluster still not
// valid stops the upgrade with what failed.
func (s *Upgrader) validate(ctx context.Context, o UpgradeOptions, bucket string, after time.Time) error {
	poll, bound := s.Poll, s.PendingBound
	if poll <= 0 {
		poll = wire.PublishEvery
	}
	if bound <= 0 {
		bound = DefaultPendingBound
	}
	deadline := s.now().Add(o.ValidateTimeout)
	pending := PendingTracker{}
	last := "no status snapshot newer than the update yet"
	for {
		st, err := s.status.readStatus(ctx, bucket, o.Cluster)
		if err != nil && ctx.Err() != nil {
			return stoppedWaiting(err, resumeHint(o.Cluster))
		}
		switch now := s.now(); {
		case err != nil:
			last = err.Error()
		case st == nil:
			last = "no status snapshot: the managers have published none"
		case !st.Time.After(after):
			last = fmt.Sprintf("no status snapshot newer than the update yet (the newest is of %s)", st.Time.Format(time.RFC3339))
		case st.stale(now):
			last = fmt.Sprintf("the status snapshot is %s old: no manager publishes it", st.age(now).Round(time.Second))
		default:
			counts, err := s.inService(ctx, o.Cluster)
			if err != nil {
				if ctx.Err() != nil {
					return stoppedWaiting(err, resumeHint(o.Cluster))
				}
				last = err.Error()
				break
			}
			total := 0
			for _, n := range counts {
				total += n
			}
			v := ValidateSwarm(&st.Snapshot, total, pending, now, bound)
			if v.Valid() {
				s.say.printf("Cluster %s is valid: %d nodes ready, every service at its count\n", o.Cluster, len(st.Nodes))
				return nil
			}
			last = v.String()
		}
		if s.now().After(deadline) {
			return refused("cluster %s did not validate within %s: %s\nThe upgrade stopped. Fix what failed, then %s", o.Cluster, o.ValidateTimeout, last, resumeHint(o.Cluster))
		}
		select {
		case <-ctx.Done():
			return stoppedWaiting(fmt.Errorf("validating cluster %s: %w", o.Cluster, ctx.Err()), resumeHint(o.Cluster))
		case <-time.After(poll):
		}
	}
}
