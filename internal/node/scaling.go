package node

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// autoscaling is the leader's autoscaling (see Autoscaler), with its
// memory: the Autoscaler's, its last decisions (loaded from the last
// snapshot once), the unplaceable tasks and the instance types read.
type autoscaling struct {
	Cluster string
	// Groups is Auto Scaling; nil: no autoscaling.
	Groups GroupScaling
	Engine Engine
	Bucket Bucket
	Clock  Clock
	Log    Logger
	// T: AutoscaleEvery, how often it decides at most; JoinWait and
	// DrainTimeout, the Autoscaler's.
	T Timings

	prover *prover

	auto          *Autoscaler
	next          time.Time
	decisions     []wire.ScalingDecision
	decisionsRead bool
	unplaceable   []wire.Unplaceable
	types         map[string]InstanceType
}

// reset forgets what the Autoscaler learnt when this manager stops
// leading: a node idle before may have worked since, and the decisions
// are the other leader's to publish.
func (as *autoscaling) reset() {
	as.auto, as.decisionsRead, as.decisions = nil, false, nil
}

// autoscale is the leader's autoscaling in a round (see Autoscaler): read
// the cluster's groups, the swarm and the leases, decide, act, and keep
// the decisions for the snapshot. Nothing is read beyond the groups when
// no group is autoscaled. decided: a decision was taken (the snapshot
// says it at once).
func (as *autoscaling) round(ctx context.Context) (decided bool, err error) {
	now := as.Clock.Now()
	if as.Groups == nil || now.Before(as.next) {
		return false, nil
	}
	as.next = now.Add(as.T.AutoscaleEvery)
	as.loadDecisions(ctx)
	groups, err := as.Groups.Groups(ctx, as.Cluster)
	if err != nil {
		return false, err
	}
	auto := false
	for _, g := range groups {
		auto = auto || g.Autoscale
	}
	if !auto {
		as.unplaceable = nil
		return false, nil
	}
	in := ScaleInput{Now: now, Groups: groups, Global: map[string]bool{}, Names: map[string]string{}, Leased: map[string]bool{}}
	if in.Types, err = as.instanceTypes(ctx, groups); err != nil {
		return false, err
	}
	if in.Nodes, err = as.Engine.Nodes(ctx); err != nil {
		return false, err
	}
	ids, err := as.prover.identify(ctx, in.Nodes)
	if err != nil {
		return false, err
	}
	in.Instances = ids.byNode
	if in.Tasks, err = as.Engine.Tasks(ctx, TaskFilter{}); err != nil {
		return false, err
	}
	services, err := as.Engine.Services(ctx)
	if err != nil {
		return false, err
	}
	for _, s := range services {
		in.Names[s.ID] = s.Name
		in.Global[s.ID] = s.Mode.Global != nil || s.Mode.GlobalJob != nil
	}
	whole, err := as.leased(ctx, lease.Core().Key(), lease.KindCluster)
	if err != nil {
		return false, err
	}
	for _, g := range groups {
		held := whole
		if g.Autoscale && !held {
			if held, err = as.leased(ctx, lease.Group(g.Group).Key(), lease.KindGroup); err != nil {
				return false, err
			}
		}
		in.Leased[g.Group] = held
	}
	if as.auto == nil {
		as.auto = &Autoscaler{JoinWait: as.T.JoinWait, DrainTimeout: as.T.DrainTimeout}
	}
	plan := as.auto.Decide(in)
	as.unplaceable = plan.Unplaceable
	for _, act := range plan.Actions {
		d, err := as.act(ctx, act)
		as.auto.Done(act, as.Clock.Now(), err)
		if err != nil {
			as.Log("group %s: %s failed: %v", act.Group, act.Kind, err)
		}
		decided = decided || d
	}
	return decided, nil
}

// act carries one action out, and logs and keeps the decision (decided:
// one was kept).
func (as *autoscaling) act(ctx context.Context, a ScaleAction) (decided bool, err error) {
	switch a.Kind {
	case Drain:
		if err := as.Engine.SetAvailability(ctx, a.Node, "drain"); err != nil {
			return false, err
		}
		as.Log("group %s: draining node %s (%s) to scale in: %s", a.Group, a.Node, a.Instance, a.Reason)
		return false, nil
	case Undrain:
		if err := as.Engine.SetAvailability(ctx, a.Node, "active"); err != nil {
			return false, err
		}
		as.Log("group %s: node %s (%s) active again, not scaled in: %s", a.Group, a.Node, a.Instance, a.Reason)
		return false, nil
	case ScaleOut:
		if err := as.Groups.SetDesired(ctx, a.ASG, a.To); err != nil {
			return false, err
		}
	case ScaleIn:
		if err := as.Groups.Terminate(ctx, a.Instance); err != nil {
			return false, err
		}
	}
	d := a.Decision(as.Clock.Now())
	as.Log("%s", d)
	as.decisions = append(as.decisions, d)
	if len(as.decisions) > wire.MaxDecisions {
		as.decisions = as.decisions[len(as.decisions)-wire.MaxDecisions:]
	}
	return true, nil
}

// loadDecisions takes the decisions of the last snapshot over, once: a
// new leader carries the list on.
func (as *autoscaling) loadDecisions(ctx context.Context) {
	if as.decisionsRead {
		return
	}
	as.decisionsRead = true
	b, _, err := as.Bucket.Get(ctx, names.StatusKey)
	if err != nil {
		return
	}
	if snap, err := wire.ParseSnapshot(names.StatusKey, b, as.Cluster); err == nil && len(as.decisions) == 0 {
		as.decisions = snap.Autoscale
	}
}

// instanceTypes are the groups' instance types as EC2 describes them,
// asked once per type: they do not change.
func (as *autoscaling) instanceTypes(ctx context.Context, groups []ScalingGroup) (map[string]InstanceType, error) {
	if as.types == nil {
		as.types = map[string]InstanceType{}
	}
	var ask []string
	for _, g := range groups {
		for _, t := range g.InstanceTypes {
			if _, ok := as.types[t]; !ok && !slices.Contains(ask, t) {
				ask = append(ask, t)
			}
		}
	}
	if len(ask) > 0 {
		sort.Strings(ask)
		got, err := as.Groups.InstanceTypes(ctx, ask)
		if err != nil {
			return nil, err
		}
		for k, v := range got {
			as.types[k] = v
		}
	}
	return as.types, nil
}

// leased tells whether a clusterctl run holds the lease at key (of kind,
// for the core's key: only a lease on the whole cluster covers the
// groups). An expired lease, by the bucket's clock, is not held.
func (as *autoscaling) leased(ctx context.Context, key string, kind lease.Kind) (bool, error) {
	b, obj, err := as.Bucket.Get(ctx, key)
	if errors.Is(err, ErrMissing) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var r lease.Record
	if json.Unmarshal(b, &r) != nil {
		return true, nil // unreadable: someone holds something; wait
	}
	if r.Kind != kind {
		return false, nil
	}
	ttl := lease.DefaultTTL
	if r.TTLSeconds > 0 {
		ttl = time.Duration(r.TTLSeconds) * time.Second
	}
	return as.Clock.Now().Before(obj.Modified.Add(ttl)), nil
}
