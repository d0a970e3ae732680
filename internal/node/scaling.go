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

// autoscale is the leader's autoscaling in a round (see Autoscaler): read
// the cluster's groups, the swarm and the leases, decide, act, and keep
// the decisions for the snapshot. Nothing is read beyond the groups when
// no group is autoscaled.
func (m *Manager) autoscale(ctx context.Context) error {
	now := m.Clock.Now()
	if m.Groups == nil || now.Before(m.nextScale) {
		return nil
	}
	m.nextScale = now.Add(m.T.AutoscaleEvery)
	m.loadDecisions(ctx)
	groups, err := m.Groups.Groups(ctx, m.Cluster)
	if err != nil {
		return err
	}
	auto := false
	for _, g := range groups {
		auto = auto || g.Autoscale
	}
	if !auto {
		m.unplaceable = nil
		return nil
	}
	in := ScaleInput{Now: now, Groups: groups, Global: map[string]bool{}, Names: map[string]string{}, Leased: map[string]bool{}}
	if in.Types, err = m.instanceTypes(ctx, groups); err != nil {
		return err
	}
	if in.Nodes, err = m.Engine.Nodes(ctx); err != nil {
		return err
	}
	ids, err := m.identify(ctx, in.Nodes)
	if err != nil {
		return err
	}
	in.Instances = ids.byNode
	if in.Tasks, err = m.Engine.Tasks(ctx, TaskFilter{}); err != nil {
		return err
	}
	services, err := m.Engine.Services(ctx)
	if err != nil {
		return err
	}
	for _, s := range services {
		in.Names[s.ID] = s.Name
		in.Global[s.ID] = s.Mode.Global != nil || s.Mode.GlobalJob != nil
	}
	whole, err := m.leased(ctx, lease.Core().Key(), lease.KindCluster)
	if err != nil {
		return err
	}
	for _, g := range groups {
		held := whole
		if g.Autoscale && !held {
			if held, err = m.leased(ctx, lease.Group(g.Group).Key(), lease.KindGroup); err != nil {
				return err
			}
		}
		in.Leased[g.Group] = held
	}
	if m.auto == nil {
		m.auto = &Autoscaler{JoinWait: m.T.JoinWait, DrainTimeout: m.T.DrainTimeout}
	}
	plan := m.auto.Decide(in)
	m.unplaceable = plan.Unplaceable
	for _, act := range plan.Actions {
		err := m.act(ctx, act)
		m.auto.Done(act, m.Clock.Now(), err)
		if err != nil {
			m.Log("group %s: %s failed: %v", act.Group, act.Kind, err)
		}
	}
	return nil
}

// act carries one action out, and logs and keeps the decision.
func (m *Manager) act(ctx context.Context, a ScaleAction) error {
	switch a.Kind {
	case Drain:
		if err := m.Engine.SetAvailability(ctx, a.Node, "drain"); err != nil {
			return err
		}
		m.Log("group %s: draining node %s (%s) to scale in: %s", a.Group, a.Node, a.Instance, a.Reason)
		return nil
	case Undrain:
		if err := m.Engine.SetAvailability(ctx, a.Node, "active"); err != nil {
			return err
		}
		m.Log("group %s: node %s (%s) active again, not scaled in: %s", a.Group, a.Node, a.Instance, a.Reason)
		return nil
	case ScaleOut:
		if err := m.Groups.SetDesired(ctx, a.ASG, a.To); err != nil {
			return err
		}
	case ScaleIn:
		if err := m.Groups.Terminate(ctx, a.Instance); err != nil {
			return err
		}
	}
	d := a.Decision(m.Clock.Now())
	m.Log("%s", d)
	m.decisions = append(m.decisions, d)
	if len(m.decisions) > wire.MaxDecisions {
		m.decisions = m.decisions[len(m.decisions)-wire.MaxDecisions:]
	}
	m.nextStatus = time.Time{} // publish it now
	return nil
}

// loadDecisions takes the decisions of the last snapshot over, once: a
// new leader carries the list on.
func (m *Manager) loadDecisions(ctx context.Context) {
	if m.decisionsRead {
		return
	}
	m.decisionsRead = true
	b, _, err := m.Bucket.Get(ctx, names.StatusKey)
	if err != nil {
		return
	}
	if snap, err := wire.ParseSnapshot(names.StatusKey, b, m.Cluster); err == nil && len(m.decisions) == 0 {
		m.decisions = snap.Autoscale
	}
}

// instanceTypes are the groups' instance types as EC2 describes them,
// asked once per type: they do not change.
func (m *Manager) instanceTypes(ctx context.Context, groups []ScalingGroup) (map[string]InstanceType, error) {
	if m.types == nil {
		m.types = map[string]InstanceType{}
	}
	var ask []string
	for _, g := range groups {
		for _, t := range g.InstanceTypes {
			if _, ok := m.types[t]; !ok && !slices.Contains(ask, t) {
				ask = append(ask, t)
			}
		}
	}
	if len(ask) > 0 {
		sort.Strings(ask)
		got, err := m.Groups.InstanceTypes(ctx, ask)
		if err != nil {
			return nil, err
		}
		for k, v := range got {
			m.types[k] = v
		}
	}
	return m.types, nil
}

// leased tells whether a clusterctl run holds the lease at key (of kind,
// for the core's key: only a lease on the whole cluster covers the
// groups). An expired lease, by the bucket's clock, is not held.
func (m *Manager) leased(ctx context.Context, key string, kind lease.Kind) (bool, error) {
	b, obj, err := m.Bucket.Get(ctx, key)
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
	return m.Clock.Now().Before(obj.Modified.Add(ttl)), nil
}
