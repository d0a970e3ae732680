package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

const noticeDir = "notices"

// notice is a message of the core's queue being handled, kept on disk so
// that a restart resumes it from where it stood.
type notice struct {
	ID      string    `json:"id"`
	Receipt string    `json:"receipt"`
	Body    string    `json:"body"`
	Sent    time.Time `json:"sent"` // by the queue's clock
	// Sender is who sent it, as the queue recorded it.
	Sender string `json:"sender,omitempty"`
	// Nodes are the swarm nodes of the terminating instance and Services
	// those with tasks on them, found the first time (before the drain
	// moves them); Since is when. Nodes nil: not yet.
	Nodes    []string  `json:"nodes"`
	Services []string  `json:"services"`
	Since    time.Time `json:"since"`
}

var unsafeID = regexp.MustCompile(`[^-a-zA-Z0-9]`)

// receive waits up to wait for messages on the queue and keeps each on
// disk, where housekeeping handles them in turn. One received again (its
// handling failed for longer than it stays hidden) keeps what was found
// and since when, so that the drain's bound does not start over; only the
// receipt is new.
func (m *Manager) receive(ctx context.Context, wait time.Duration) error {
	msgs, err := m.Queue.Receive(ctx, wait, m.T.Visibility)
	if err != nil {
		return err
	}
	for _, msg := range msgs {
		file := noticeDir + "/" + unsafeID.ReplaceAllString(msg.ID, "") + ".json"
		var n notice
		ok, err := m.State.Load(file, &n)
		if err != nil {
			return err
		}
		if !ok {
			n = notice{ID: msg.ID, Body: msg.Body, Sent: msg.Sent, Sender: msg.Sender}
		}
		n.Receipt = msg.Receipt
		if err := m.State.Save(file, n); err != nil {
			return err
		}
	}
	return nil
}

// forget deletes a handled notice from the queue and from disk.
func (m *Manager) forget(ctx context.Context, file string, n notice) error {
	if err := m.Queue.Delete(ctx, n.Receipt); err != nil {
		m.Log("the notice was handled but is no longer on the queue: %v", err)
	}
	return m.State.Remove(file)
}

// handleNotice handles one notice kept in file, from where it stands.
func (m *Manager) handleNotice(ctx context.Context, file string) error {
	var n notice
	if ok, err := m.State.Load(file, &n); err != nil || !ok {
		if err != nil {
			m.Log("dropping an unreadable notice %s: %v", file, err)
			return m.State.Remove(file)
		}
		return nil
	}
	// Every decision taken on the message is logged with who sent it, as
	// the queue recorded it: the body's own words are anyone's.
	log := m.Log
	m.Log = func(format string, args ...any) {
		log(format+" [message %s, sent by %s]", append(args, n.ID, cmp.Or(n.Sender, "a sender the queue did not record"))...)
	}
	defer func() { m.Log = log }()
	e, err := wire.ParseEvent(n.Body)
	if err != nil {
		m.Log("ignoring a message of the queue: %v", err)
		return m.forget(ctx, file, n)
	}
	switch e.DetailType {
	case wire.DetailSpot, wire.DetailRebalance:
		return m.handleInterruption(ctx, file, n, e)
	case names.RequestNodeAvailability:
		return m.handleRequest(ctx, file, n, e)
	case names.RequestSecretsSync:
		return m.handleSecretsRequest(ctx, file, n, e)
	case names.RequestBackup:
		return m.handleBackupRequest(ctx, file, n, e)
	case names.RequestRestore:
		return m.handleRestoreRequest(ctx, file, n, e)
	}
	return m.handleTermination(ctx, file, n, e)
}

// setAvailability sets the swarm nodes of instance that are not yet so to
// availability, for reason; changed are those it set.
func (m *Manager) setAvailability(ctx context.Context, instance, availability, reason string) (changed []string, err error) {
	nodes, err := m.Engine.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	ids, err := m.identify(ctx, nodes)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if ids.Instance(n.ID) != instance || n.Availability == availability {
			continue
		}
		if err := m.Engine.SetAvailability(ctx, n.ID, availability); err != nil {
			return changed, err
		}
		changed = append(changed, n.ID)
		m.Log("set node %s of instance %s to %s: %s", n.ID, instance, availability, reason)
	}
	return changed, nil
}

// handleRequest sets the availability of the swarm nodes of an instance as
// clusterctl drain-node asks, then publishes the status snapshot at once
// and often for a while. Setting an availability twice changes nothing: a
// request delivered twice, or handled again after a restart, does no harm.
// A request older than RequestMaxAge by the queue's clock (it waited while
// no leader took it) is dropped, so that it never changes the swarm long
// after it was made; so is one of another shape or cluster.
func (m *Manager) handleRequest(ctx context.Context, file string, n notice, e wire.Event) error {
	r, err := e.AvailabilityRequest(m.Cluster)
	age := m.Clock.Now().Sub(n.Sent)
	switch {
	case err != nil:
		m.Log("ignoring a node availability request: %v", err)
	case age > m.T.RequestMaxAge:
		m.Log("dropping request %s to set instance %s %s: made %s ago", r.RequestID, r.InstanceID, r.Availability, age.Round(time.Second))
	default:
		if _, err := m.setAvailability(ctx, r.InstanceID, r.Availability, "request "+r.RequestID); err != nil {
			return err
		}
		m.watch()
		if _, err := m.publishStatus(ctx); err != nil {
			m.Log("publishing the status snapshot failed: %v", err)
		}
	}
	return m.forget(ctx, file, n)
}

// lifecycleWait is Auto Scaling's lifecycle state of an instance waiting
// in a termination hook.
const lifecycleWait = "Terminating:Wait"

// activeTask: a task in one of these states still runs on its node, or is
// about to.
var activeTask = []string{"new", "allocated", "pending", "assigned", "accepted", "preparing", "ready", "starting", "running"}

// handleTermination drains and removes the swarm nodes of an instance its
// Auto Scaling group terminates, then completes the lifecycle action.
func (m *Manager) handleTermination(ctx context.Context, file string, n notice, e wire.Event) error {
	d, err := e.Lifecycle()
	if err != nil {
		m.Log("ignoring a notice that is not an instance termination of a lifecycle hook: %v", err)
		return m.forget(ctx, file, n)
	}
	a := actionOf(d)
	now := m.Clock.Now()
	// A lifecycle action lasts 48 hours at the most: a notice older than
	// that (a queue that waited for a control plane) has no action left.
	if sent := e.Sent(); !sent.IsZero() && now.Sub(sent) > wire.LifecycleActionMaxAge {
		m.Log("giving up the termination notice of %s: sent more than 48 hours ago", a.Instance)
		return m.forget(ctx, file, n)
	}
	// Only the cluster's own groups: completing another group's action
	// would be refused anyway, and draining for it would be wrong.
	owner, err := m.Scaling.ClusterOf(ctx, a.Group)
	if err != nil {
		return err
	}
	if owner != m.Cluster {
		m.Log("ignoring the termination of %s: group %s is not of cluster %s", a.Instance, a.Group, m.Cluster)
		return m.forget(ctx, file, n)
	}
	if n.Nodes == nil {
		// The notice is anyone's word (whoever may send to the queue):
		// Auto Scaling's is that the instance waits in a hook of that
		// group. Checked once, before anything is done; a notice resumed
		// after a restart was checked when it was begun.
		group, state, err := m.Scaling.LifecycleState(ctx, a.Instance)
		if err != nil {
			return fmt.Errorf("asking Auto Scaling about %s: %w", a.Instance, err)
		}
		if group != a.Group || state != lifecycleWait {
			m.Log("dropping the termination notice of %s in group %s: Auto Scaling says it is %s in group %s, not %s; nothing is drained",
				a.Instance, a.Group, orQ(state), orQ(group), lifecycleWait)
			return m.forget(ctx, file, n)
		}
	}
	self, err := m.Engine.Self(ctx)
	if err != nil {
		return err
	}
	if a.Instance == m.InstanceID {
		return m.leaving(ctx, file, n, a, self)
	}
	if n.Nodes == nil {
		// First time: the nodes of the instance (never this node: it cannot
		// drain and remove itself), and the services with tasks on them,
		// before the drain moves them.
		nodes, err := m.Engine.Nodes(ctx)
		if err != nil {
			return err
		}
		// The nodes EC2 proves to be the instance: another node that only
		// names it is neither drained nor removed.
		ids, err := m.identify(ctx, nodes)
		if err != nil {
			return err
		}
		n.Nodes, n.Services = []string{}, []string{}
		for _, node := range nodes {
			if ids.Instance(node.ID) != a.Instance || node.ID == self.NodeID {
				continue
			}
			n.Nodes = append(n.Nodes, node.ID)
			tasks, err := m.Engine.Tasks(ctx, TaskFilter{Node: node.ID, DesiredRunning: true})
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
		if err := m.State.Save(file, n); err != nil {
			return err
		}
	}
	if len(n.Nodes) == 0 {
		m.Log("instance %s is terminating but never joined the swarm", a.Instance)
		return m.complete(ctx, file, n, a)
	}
	if err := m.eachNode(ctx, n.Nodes, func(node Node) error {
		if node.Availability != wire.AvailabilityActive {
			return nil
		}
		if err := m.Engine.SetAvailability(ctx, node.ID, wire.AvailabilityDrain); err != nil {
			return err
		}
		m.Log("draining node %s of instance %s", node.ID, a.Instance)
		return nil
	}); err != nil {
		return err
	}
	deadline := n.Since.Add(m.T.DrainTimeout)
	var nextBeat time.Time
	for {
		done, err := m.drained(ctx, n)
		if err != nil {
			return err
		}
		if done {
			break
		}
		now := m.Clock.Now()
		if !now.Before(deadline) {
			m.Log("instance %s: its tasks did not all move within %s; removing it anyway", a.Instance, m.T.DrainTimeout)
			break
		}
		if !now.Before(nextBeat) {
			if err := m.receive(ctx, 0); err != nil {
				m.Log("receiving notices failed: %v", err)
			}
			m.heartbeat(ctx)
			nextBeat = now.Add(m.T.HeartbeatEvery)
		}
		if _, err := m.publishStatus(ctx); err != nil {
			m.Log("publishing the status snapshot failed: %v", err)
		}
		if err := m.Clock.Sleep(ctx, m.T.DrainPoll); err != nil {
			return err
		}
	}
	if err := m.eachNode(ctx, n.Nodes, func(node Node) error {
		if err := m.removeNode(ctx, node); err != nil {
			return err
		}
		m.Log("removed node %s of instance %s from the swarm", node.ID, a.Instance)
		return nil
	}); err != nil {
		return err
	}
	return m.complete(ctx, file, n, a)
}

// eachNode calls f with each node of ids the swarm still has.
func (m *Manager) eachNode(ctx context.Context, ids []string, f func(Node) error) error {
	for _, id := range ids {
		node, err := m.Engine.Node(ctx, id)
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		if err := f(node); err != nil {
			return err
		}
	}
	return nil
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
func (m *Manager) leaving(ctx context.Context, file string, n notice, a Action, self Self) error {
	nodes, err := m.Engine.Nodes(ctx)
	if err != nil {
		return err
	}
	if countManagers(nodes) > 1 {
		if err := m.Engine.Demote(ctx, self.NodeID); err != nil {
			return err
		}
		m.demoted = true
		m.Log("this manager's instance %s is terminating: demoted it; the next leader removes it", a.Instance)
		if err := m.Queue.Hide(ctx, n.Receipt, 0); err != nil {
			m.Log("handing the notice back to the queue: %v", err)
		}
		return m.State.Remove(file)
	}
	m.Log("the last manager's instance %s is terminating: backing the swarm up for its replacement", a.Instance)
	if err := m.backUp(ctx, true); err != nil {
		return err
	}
	return m.complete(ctx, file, n, a)
}

// complete lets Auto Scaling go on terminating the instance, and forgets
// the notice.
func (m *Manager) complete(ctx context.Context, file string, n notice, a Action) error {
	ended, err := m.Scaling.Complete(ctx, a)
	if err != nil {
		return err
	}
	if ended {
		m.Log("the lifecycle action of %s has already ended", a.Instance)
	} else {
		m.Log("completed the lifecycle action of %s", a.Instance)
	}
	return m.forget(ctx, file, n)
}

// heartbeat keeps the lifecycle actions of the notices kept (the one being
// drained and those received behind it) and their messages alive while a
// drain takes its time: an action not heartbeated ends at the hook's
// timeout, and its instance would go undrained.
func (m *Manager) heartbeat(ctx context.Context) {
	files, err := m.State.List(noticeDir)
	if err != nil {
		m.Log("listing the notices kept: %v", err)
		return
	}
	for _, f := range files {
		var n notice
		if ok, err := m.State.Load(f, &n); err != nil || !ok {
			continue
		}
		if e, err := wire.ParseEvent(n.Body); err == nil {
			if d, err := e.Lifecycle(); err == nil {
				a := actionOf(d)
				if err := m.Scaling.Heartbeat(ctx, a); err != nil {
					m.Log("heartbeat of the lifecycle action of %s failed: %v", a.Instance, err)
				}
			}
		}
		_ = m.Queue.Hide(ctx, n.Receipt, m.T.Visibility)
	}
}

// drained tells whether the drained nodes run nothing any more and every
// service that had tasks on them runs its replicas elsewhere (or cannot be
// placed anywhere else: waiting would not help).
func (m *Manager) drained(ctx context.Context, n notice) (bool, error) {
	for _, id := range n.Nodes {
		node, err := m.Engine.Node(ctx, id)
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
		tasks, err := m.Engine.Tasks(ctx, TaskFilter{Node: id})
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
		want, replicated, err := m.Engine.Replicas(ctx, s)
		if errors.Is(err, ErrNoService) || err == nil && !replicated {
			continue
		}
		if err != nil {
			return false, err
		}
		tasks, err := m.Engine.Tasks(ctx, TaskFilter{Service: s, DesiredRunning: true})
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
