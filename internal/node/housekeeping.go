package node

import (
	"cmp"
	"context"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// Timings of housekeeping; Defaults are a node's, tests shorten them.
type Timings struct {
	PollWait       time.Duration // long poll of the queue
	Idle           time.Duration // pause of a manager that is not the leader
	StatusEvery    time.Duration // status snapshot
	WatchEvery     time.Duration // the snapshot after a request ...
	WatchFor       time.Duration // ... for this long
	DeadEvery      time.Duration // dead-node check
	DeadGrace      time.Duration // Down this long before removal
	DrainTimeout   time.Duration // bound of a drain
	DrainPoll      time.Duration // check of a drain
	HeartbeatEvery time.Duration
	Visibility     time.Duration // a notice is hidden this long while handled
	BackupEvery    time.Duration // a backup of the swarm, at least
	BackupSpacing  time.Duration // after the swarm changed, this far apart at most
	// BackupOrderWait is how long a follower has to take a backup
	// ordered before the leader asks another.
	BackupOrderWait time.Duration
	// QuorumGrace is how long the swarm is without a leader before a
	// survivor decides whether to recover it.
	QuorumGrace    time.Duration
	RequestMaxAge  time.Duration
	JoinTimeout    time.Duration // to be a manager (below the stack's 10 minutes)
	JoinPause      time.Duration
	AutoscaleEvery time.Duration // the autoscaler's decisions, at most this often
	SecretsEvery   time.Duration // the secrets' sources, read at most this often
	JoinWait       time.Duration // for the nodes of a scale-out to join
	MetricsEvery   time.Duration // the swarm's and the nodes' CloudWatch metrics
	// UnprovenGrace is how long a node the leader cannot prove stays in
	// the swarm (drained) before it is removed; LabelsEvery how often the
	// proven nodes' labels are read again from Auto Scaling and EC2.
	UnprovenGrace time.Duration
	LabelsEvery   time.Duration
	// ConfirmWait is how long a spot or rebalance warning waits for its
	// node's agent to confirm it before it is dropped.
	ConfirmWait time.Duration
	// InterruptedHold is how long a node drained on a confirmed warning
	// stays drained while its instance runs on, InService, before it is
	// set active again.
	InterruptedHold time.Duration
}

// Defaults are the timings of a node.
func Defaults() Timings {
	return Timings{
		PollWait: 10 * time.Second, Idle: 10 * time.Second, StatusEvery: wire.PublishEvery,
		WatchEvery: 2 * time.Second, WatchFor: 2 * time.Minute,
		DeadEvery: 30 * time.Second, DeadGrace: 5 * time.Minute,
		DrainTimeout: 10 * time.Minute, DrainPoll: 2 * time.Second, HeartbeatEvery: time.Minute,
		Visibility: 5 * time.Minute, BackupEvery: wire.BackupEvery, BackupSpacing: 30 * time.Second,
		BackupOrderWait: 2 * time.Minute, QuorumGrace: 2 * time.Minute,
		RequestMaxAge: names.RequestMaxAge, JoinTimeout: 9 * time.Minute, JoinPause: 5 * time.Second,
		AutoscaleEvery: 10 * time.Second, JoinWait: 10 * time.Minute, SecretsEvery: time.Minute,
		MetricsEvery: time.Minute, UnprovenGrace: 10 * time.Minute, LabelsEvery: time.Minute,
		ConfirmWait: 90 * time.Second, InterruptedHold: 30 * time.Minute,
	}
}

// Manager is a manager node: its boot (manager.go) and its housekeeping,
// whose round calls each capability by one line (parts, wiring.go).
type Manager struct {
	Cluster    string
	InstanceID string
	Address    string // this node's private IPv4

	Engine    Engine
	Bucket    Bucket
	Queue     Queue
	Scaling   Scaling
	Instances Instances
	// Facts says what the proven nodes' instances are, for their node
	// labels (labels.go); nil: the leader sets none.
	Facts Describer
	// Groups is Auto Scaling for the autoscaler; nil: no autoscaling.
	Groups  GroupScaling
	Backups Backups
	// Secrets keeps the declared secrets in step (secrets.go); nil: none.
	Secrets *SecretsSync
	// Metrics publishes the swarm's figures to CloudWatch; nil: none.
	Metrics *SwarmMetrics
	// Objects is what a backup is judged by: the swarm's id and objects.
	Objects SwarmObjects
	// Recovery heals a quorum loss (on a manager that does not lead).
	Recovery *Recovery
	// Tokens rotates the join tokens after a restore of another
	// cluster's backup (restore.go).
	Tokens TokenRotator
	// BackupKeep is how many backups of the swarm are kept (0:
	// wire.BackupKeep).
	BackupKeep int
	Network    Network
	Clock      Clock
	Log        Logger
	State      State
	T          Timings

	// p are the capabilities, built from the fields above when first
	// needed (parts).
	p *parts
	// about is the message of the queue being handled ("": none), which
	// every line logged meanwhile names (log).
	about string
	// demoted: this manager demoted itself in this round.
	demoted bool
}

// Housekeeping runs until ctx ends: only while this manager leads the
// swarm does it act, so there is one actor however many managers there
// are, and another takes over when the leader is lost.
func (m *Manager) Housekeeping(ctx context.Context) error {
	m.Backups.Resume()
	m.parts().join.republish = true
	m.Log("housekeeping of cluster %s started", m.Cluster)
	for ctx.Err() == nil {
		m.Round(ctx)
	}
	return ctx.Err()
}

// Round is one round of housekeeping.
func (m *Manager) Round(ctx context.Context) {
	p, log := m.parts(), Logger(m.log)
	if err := p.join.applyAliases(ctx); err != nil {
		m.Log("applying the managers' addresses failed: %v", err)
	}
	// One answer of the engine about itself serves the round's parts: an
	// /info costs the engine two program runs, and the node id it names
	// changes only when this program makes the engine leave or join.
	self, leader, err := m.leader(ctx)
	if err != nil || !leader {
		// Another leader may change the record meanwhile: read again
		// when leading again. The autoscaler starts afresh too.
		p.backups.reset()
		p.scaler.reset()
		m.follow(ctx)
		_ = m.Clock.Sleep(ctx, m.T.Idle)
		return
	}
	if err := p.join.round(ctx, self); err != nil {
		m.Log("publishing the join material failed: %v", err)
	}
	if err := p.guard.clean(ctx); err != nil {
		m.Log("the dead-node check failed: %v", err)
	}
	// Before the notices: a node proven again gets its availability back
	// before a notice may drain it, so that no drain of a notice is undone.
	log.failed("guarding the swarm from unproven nodes", p.guard.round(ctx, self))
	log.failed("setting active the nodes of interrupted instances that run on", p.drains.release(ctx))
	if decided, err := p.scaler.round(ctx); err != nil {
		m.Log("autoscaling failed: %v", err)
	} else if decided {
		p.status.now()
	}
	log.failed("syncing the secrets", m.Secrets.Sync(ctx))
	snap, err := p.status.publish(ctx)
	if err != nil {
		m.Log("publishing the status snapshot failed: %v", err)
	}
	m.Metrics.Publish(ctx, snap)
	if err := p.backups.backUp(ctx, false); err != nil {
		m.Log("the backup of the swarm state failed: %v", err)
	}
	files, err := p.inbox.kept()
	if err != nil {
		m.Log("listing the notices kept: %v", err)
	}
	for _, f := range files {
		if err := m.handleNotice(ctx, f); err != nil {
			m.Log("handling the notice in %s failed; trying again: %v", f, err)
		}
		if m.demoted {
			// No longer a manager that leads: the next leader takes the
			// notices from here.
			m.demoted = false
			return
		}
	}
	// While a request is watched, the wait on the queue is as short as
	// the snapshot's interval, so that the round publishes it in time.
	wait := m.T.PollWait
	if p.status.watching(m.Clock.Now()) && m.T.WatchEvery < wait {
		wait = m.T.WatchEvery
	}
	if err := p.inbox.receive(ctx, wait); err != nil {
		m.Log("receiving notices failed: %v", err)
		_ = m.Clock.Sleep(ctx, m.T.Idle)
	}
}

// leader tells whether this engine leads its swarm, and what the engine
// says of itself.
func (m *Manager) leader(ctx context.Context) (Self, bool, error) {
	self, err := m.Engine.Self(ctx)
	if err != nil || self.NodeID == "" || !self.ControlAvailable {
		return self, false, err
	}
	n, err := m.Engine.Node(ctx, self.NodeID)
	return self, err == nil && n.Leader, err
}

// handleNotice handles one notice kept in file, from where it stands, by
// the part its kind is for.
func (m *Manager) handleNotice(ctx context.Context, file string) error {
	p := m.parts()
	n, ok, err := p.inbox.load(file)
	if err != nil || !ok {
		return err
	}
	// Every decision taken on the message is logged with who sent it, as
	// the queue recorded it: the body's own words are anyone's.
	m.about = "message " + n.ID + ", sent by " + cmp.Or(n.Sender, "a sender the queue did not record")
	defer func() { m.about = "" }()
	e, err := wire.ParseEvent(n.Body)
	if err != nil {
		m.log("ignoring a message of the queue: %v", err)
		return p.inbox.forget(ctx, file, n)
	}
	switch e.DetailType {
	case wire.DetailSpot, wire.DetailRebalance:
		return p.drains.handleInterruption(ctx, file, n, e)
	case names.RequestNodeAvailability:
		return p.requests.availability(ctx, file, n, e)
	case names.RequestSecretsSync:
		return p.requests.secretsSync(ctx, file, n, e)
	case names.RequestBackup:
		return p.requests.backup(ctx, file, n, e)
	case names.RequestRestore:
		return p.requests.restore(ctx, file, n, e)
	}
	return p.drains.handleTermination(ctx, file, n, e)
}

// log is the parts' log: Log, each line naming the message being handled
// when there is one.
func (m *Manager) log(format string, args ...any) {
	if m.about != "" {
		format, args = format+" [%s]", append(args, m.about)
	}
	m.Log(format, args...)
}
