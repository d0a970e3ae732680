package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/clusterctl/clusterctl/internal/wire"
)

// lifecycleWait is Auto Scaling's lifecycle state of an instance waiting
// in a termination hook.
const lifecycleWait = "Terminating:Wait"

// activeTask: a task in one of these states still runs on its node, or is
// about to.
var activeTask = []string{"new", "allocated", "pending", "assigned", "accepted", "preparing", "ready", "starting", "running"}

// drains drains the swarm nodes of an instance on a notice of the queue:
// one its Auto Scaling group terminates, as its lifecycle hook's notice
// says, which it then removes and lets go (completes the lifecycle
// action); one EC2 is about to interrupt, once its agent confirms it
// (interruption.go).
type drains struct {
	Cluster    string
	InstanceID string
	Engine     Engine
	Scaling    Scaling
	Queue      Queue
	Bucket     Bucket
	Instances  Instances
	State      State
	Clock      Clock
	Log        Logger
	// T: DrainTimeout, DrainPoll, HeartbeatEvery, Visibility,
	// ConfirmWait, InterruptedHold, and DeadEvery for the drains on a
	// warning to release.
	T Timings

	inbox   *inbox
	prover  *prover
	status  *statusPublisher
	backups *swarmBackups
	// demoted tells the round that this manager left the lead.
	demoted func()

	nextRelease time.Time
}

// handleTermination drains and removes the swarm nodes of an instance its
// Auto Scaling group terminates, then completes the lifecycle action.
func (d *drains) handleTermination(ctx context.Context, file string, n notice, e wire.Event) error {
	lc, err := e.Lifecycle()
	if err != nil {
		d.Log("ignoring a notice that is not an instance termination of a lifecycle hook: %v", err)
		return d.inbox.forget(ctx, file, n)
	}
	a := actionOf(lc)
	now := d.Clock.Now()
	// A lifecycle action lasts 48 hours at the most: a notice older than
	// that (a queue that waited for a control plane) has no action left.
	if sent := e.Sent(); !sent.IsZero() && now.Sub(sent) > wire.LifecycleActionMaxAge {
		d.Log("giving up the termination notice of %s: sent more than 48 hours ago", a.Instance)
		return d.inbox.forget(ctx, file, n)
	}
	// Only the cluster's own groups: completing another group's action
	// would be refused anyway, and draining for it would be wrong.
	owner, err := d.Scaling.ClusterOf(ctx, a.Group)
	if err != nil {
		return err
	}
	if owner != d.Cluster {
		d.Log("ignoring the termination of %s: group %s is not of cluster %s", a.Instance, a.Group, d.Cluster)
		return d.inbox.forget(ctx, file, n)
	}
	if n.Nodes == nil {
		// The notice is anyone's word (whoever may send to the queue):
		// Auto Scaling's is that the instance waits in a hook of that
		// group. Checked once, before anything is done; a notice resumed
		// after a restart was checked when it was begun.
		group, state, err := d.Scaling.LifecycleState(ctx, a.Instance)
		if err != nil {
			return fmt.Errorf("asking Auto Scaling about %s: %w", a.Instance, err)
		}
		if group != a.Group || state != lifecycleWait {
			d.Log("dropping the termination notice of %s in group %s: Auto Scaling says it is %s in group %s, not %s; nothing is drained",
				a.Instance, a.Group, orQ(state), orQ(group), lifecycleWait)
			return d.inbox.forget(ctx, file, n)
		}
	}
	self, err := d.Engine.Self(ctx)
	if err != nil {
		return err
	}
	if a.Instance == d.InstanceID {
		return d.leaving(ctx, file, n, a, self)
	}
	if n.Nodes == nil {
		// First time: the nodes of the instance (never this node: it cannot
		// drain and remove itself), and the services with tasks on them,
		// before the drain moves them.
		// The nodes EC2 proves to be the instance: another node that only
		// names it is neither drained nor removed.
		nodes, ids, err := d.prover.nodesIdentified(ctx)
		if err != nil {
			return err
		}
		n.Nodes, n.Services = []string{}, []string{}
		for _, node := range nodes {
			if ids.Instance(node.ID) != a.Instance || node.ID == self.NodeID {
				continue
			}
			n.Nodes = append(n.Nodes, node.ID)
			tasks, err := d.Engine.Tasks(ctx, TaskFilter{Node: node.ID, DesiredRunning: true})
			if err != nil {
				return err
			}
			for _, t := range tasks {
				if t.ServiceID != "" && !slices.Contains(n.Services, t.ServiceID) {
					n.Services = append(n.Services, t.ServiceID)
				}
			}
		}
		slices.Sort(n.Services)
		n.Since = now
		if err := d.State.Save(file, n); err != nil {
			return err
		}
	}
	if len(n.Nodes) == 0 {
		d.Log("instance %s is terminating but never joined the swarm", a.Instance)
		return d.complete(ctx, file, n, a)
	}
	if err := eachNode(ctx, d.Engine, n.Nodes, func(node Node) error {
		if node.Availability != wire.AvailabilityActive {
			return nil
		}
		if err := d.Engine.SetAvailability(ctx, node.ID, wire.AvailabilityDrain); err != nil {
			return err
		}
		d.Log("draining node %s of instance %s", node.ID, a.Instance)
		return nil
	}); err != nil {
		return err
	}
	deadline := n.Since.Add(d.T.DrainTimeout)
	var nextBeat time.Time
	for {
		done, err := d.drained(ctx, n)
		if err != nil {
			return err
		}
		if done {
			break
		}
		now := d.Clock.Now()
		if !now.Before(deadline) {
			d.Log("instance %s: its tasks did not all move within %s; removing it anyway", a.Instance, d.T.DrainTimeout)
			break
		}
		if !now.Before(nextBeat) {
			if err := d.inbox.receive(ctx, 0); err != nil {
				d.Log("receiving notices failed: %v", err)
			}
			d.heartbeat(ctx)
			nextBeat = now.Add(d.T.HeartbeatEvery)
		}
		d.status.publishOrLog(ctx)
		if err := d.Clock.Sleep(ctx, d.T.DrainPoll); err != nil {
			return err
		}
	}
	if err := eachNode(ctx, d.Engine, n.Nodes, func(node Node) error {
		if err := removeNode(ctx, d.Engine, node); err != nil {
			return err
		}
		d.Log("removed node %s of instance %s from the swarm", node.ID, a.Instance)
		return nil
	}); err != nil {
		return err
	}
	return d.complete(ctx, file, n, a)
}

// actionOf is the lifecycle action a termination notice names.
func actionOf(d wire.LifecycleDetail) Action {
	return Action{Group: d.AutoScalingGroupName, Hook: d.LifecycleHookName, Token: d.LifecycleActionToken, Instance: d.EC2InstanceID}
}

// leaving handles the termination of this manager's own instance: it
// cannot remove itself. With other managers it demotes itself and hands
// the notice back to the queue for the next leader, which drains and
// removes it; the last manager backs the swarm up, so that its replacement
// restores it, and lets the instance go.
func (d *drains) leaving(ctx context.Context, file string, n notice, a Action, self Self) error {
	nodes, err := d.Engine.Nodes(ctx)
	if err != nil {
		return err
	}
	if countManagers(nodes) > 1 {
		if err := d.Engine.Demote(ctx, self.NodeID); err != nil {
			return err
		}
		d.demoted()
		d.Log("this manager's instance %s is terminating: demoted it; the next leader removes it", a.Instance)
		if err := d.Queue.Hide(ctx, n.Receipt, 0); err != nil {
			d.Log("handing the notice back to the queue: %v", err)
		}
		return d.State.Remove(file)
	}
	d.Log("the last manager's instance %s is terminating: backing the swarm up for its replacement", a.Instance)
	if err := d.backups.backUp(ctx, true); err != nil {
		return err
	}
	return d.complete(ctx, file, n, a)
}

// complete lets Auto Scaling go on terminating the instance, and forgets
// the notice.
func (d *drains) complete(ctx context.Context, file string, n notice, a Action) error {
	ended, err := d.Scaling.Complete(ctx, a)
	if err != nil {
		return err
	}
	if ended {
		d.Log("the lifecycle action of %s has already ended", a.Instance)
	} else {
		d.Log("completed the lifecycle action of %s", a.Instance)
	}
	return d.inbox.forget(ctx, file, n)
}

// heartbeat keeps the lifecycle actions of the notices kept (the one being
// drained and those received behind it) and their messages alive while a
// drain takes its time: an action not heartbeated ends at the hook's
// timeout, and its instance would go undrained.
func (d *drains) heartbeat(ctx context.Context) {
	files, err := d.inbox.kept()
	if err != nil {
		d.Log("listing the notices kept: %v", err)
		return
	}
	for _, f := range files {
		var n notice
		if ok, err := d.State.Load(f, &n); err != nil || !ok {
			continue
		}
		if e, err := wire.ParseEvent(n.Body); err == nil {
			if lc, err := e.Lifecycle(); err == nil {
				a := actionOf(lc)
				if err := d.Scaling.Heartbeat(ctx, a); err != nil {
					d.Log("heartbeat of the lifecycle action of %s failed: %v", a.Instance, err)
				}
			}
		}
		_ = d.Queue.Hide(ctx, n.Receipt, d.T.Visibility)
	}
}

// drained tells whether the drained nodes run nothing any more and every
// service that had tasks on them runs its replicas elsewhere (or cannot be
// placed anywhere else: waiting would not help).
func (d *drains) drained(ctx context.Context, n notice) (bool, error) {
	for _, id := range n.Nodes {
		node, err := d.Engine.Node(ctx, id)
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return false, err
		}
		// A Down node cannot report its tasks stopped; only its
		// replacements count.
		if node.State != "ready" {
			continue
		}
		tasks, err := d.Engine.Tasks(ctx, TaskFilter{Node: id})
		if err != nil {
			return false, err
		}
		for _, t := range tasks {
			if slices.Contains(activeTask, t.State) {
				return false, nil
			}
		}
	}
	for _, s := range n.Services {
		want, replicated, err := d.Engine.Replicas(ctx, s)
		if errors.Is(err, ErrNoService) || err == nil && !replicated {
			continue
		}
		if err != nil {
			return false, err
		}
		tasks, err := d.Engine.Tasks(ctx, TaskFilter{Service: s, DesiredRunning: true})
		if err != nil {
			return false, err
		}
		running, waiting, unplaceable := 0, 0, 0
		for _, t := range tasks {
			if t.State == "running" {
				if !slices.Contains(n.Nodes, t.NodeID) {
					running++
				}
				continue
			}
			waiting++
			if t.State == "pending" && len(t.Err) >= 16 && t.Err[:16] == "no suitable node" {
				unplaceable++
			}
		}
		if running < want && (waiting == 0 || unplaceable < waiting) {
			return false, nil
		}
	}
	return true, nil
}
