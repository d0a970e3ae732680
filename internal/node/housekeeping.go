package node

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
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

// Manager is a manager node: its boot (manager.go) and its housekeeping.
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

	nextStatus, watchUntil, nextDead, nextRelease time.Time
	// managers is the number of managers last recorded in the bucket (0:
	// not read yet); backupDeferred why a backup due is not taken (last
	// logged); legacyGone: the lone manager's single backup of before is
	// removed.
	managers       int
	backupDeferred string
	legacyGone     bool
	// backupMeta and backupList: the backups kept, for the snapshot.
	backupMeta map[string]wire.BackupMeta
	backupList []wire.BackupInfo
	// republish: the first round this service leads publishes the join
	// material whatever was last recorded, as every boot does (the
	// objects may have been removed or overwritten meanwhile).
	republish bool
	// demoted: this manager demoted itself in this round.
	demoted bool
	// restored: the last restore request acted on, for the snapshot.
	restored *wire.RestoreStatus

	// The autoscaler's memory, its last decisions (loaded from the last
	// snapshot once), the unplaceable tasks and the instance types read.
	auto          *Autoscaler
	nextScale     time.Time
	decisions     []wire.ScalingDecision
	decisionsRead bool
	unplaceable   []wire.Unplaceable
	types         map[string]InstanceType

	// identityProblems are the nodes whose instance label EC2 does not
	// bear out, with why, as last logged.
	identityProblems map[string]string
	// unprovenNoted: the unproven nodes, with why, as last logged;
	// quorumKept: the unproven managers kept for the quorum (logged).
	unprovenNoted map[string]string
	quorumKept    map[string]bool
	// nextLabels: when the proven nodes' labels are read again.
	nextLabels time.Time
}

// Housekeeping runs until ctx ends: only while this manager leads the
// swarm does it act, so there is one actor however many managers there
// are, and another takes over when the leader is lost.
func (m *Manager) Housekeeping(ctx context.Context) error {
	m.Backups.Resume()
	m.republish = true
	m.Log("housekeeping of cluster %s started", m.Cluster)
	for ctx.Err() == nil {
		m.Round(ctx)
	}
	return ctx.Err()
}

// Round is one round of housekeeping.
func (m *Manager) Round(ctx context.Context) {
	if err := m.applyAliases(ctx); err != nil {
		m.Log("applying the managers' addresses failed: %v", err)
	}
	leader, err := m.leader(ctx)
	if err != nil || !leader {
		// Another leader may change the record meanwhile: read again
		// when leading again. The autoscaler starts afresh too: a node
		// idle before may have worked since, and the decisions are the
		// other leader's to publish.
		m.managers, m.backupDeferred = 0, ""
		m.auto, m.decisionsRead, m.decisions = nil, false, nil
		m.follow(ctx)
		_ = m.Clock.Sleep(ctx, m.T.Idle)
		return
	}
	if err := m.PublishJoinMaterial(ctx, m.republish); err != nil {
		m.Log("publishing the join material failed: %v", err)
	} else {
		m.republish = false
	}
	if err := m.cleanDeadNodes(ctx); err != nil {
		m.Log("the dead-node check failed: %v", err)
	}
	// Before the notices: a node proven again gets its availability back
	// before a notice may drain it, so that no drain of a notice is undone.
	m.logFailure("guarding the swarm from unproven nodes", m.guardNodes(ctx))
	if now := m.Clock.Now(); !now.Before(m.nextRelease) {
		m.nextRelease = now.Add(m.T.DeadEvery)
		m.logFailure("setting active the nodes of interrupted instances that run on", m.releaseInterrupted(ctx))
	}
	if err := m.autoscale(ctx); err != nil {
		m.Log("autoscaling failed: %v", err)
	}
	m.logFailure("syncing the secrets", m.Secrets.Sync(ctx))
	snap, err := m.publishStatus(ctx)
	if err != nil {
		m.Log("publishing the status snapshot failed: %v", err)
	}
	m.Metrics.Publish(ctx, snap)
	if err := m.backUp(ctx, false); err != nil {
		m.Log("the backup of the swarm state failed: %v", err)
	}
	files, err := m.State.List(noticeDir)
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
	if m.Clock.Now().Before(m.watchUntil) && m.T.WatchEvery < wait {
		wait = m.T.WatchEvery
	}
	if err := m.receive(ctx, wait); err != nil {
		m.Log("receiving notices failed: %v", err)
		_ = m.Clock.Sleep(ctx, m.T.Idle)
	}
}

// logFailure logs what failed, if it did.
func (m *Manager) logFailure(what string, err error) {
	if err != nil {
		m.Log("%s failed: %v", what, err)
	}
}

// leader tells whether this engine leads its swarm.
func (m *Manager) leader(ctx context.Context) (bool, error) {
	self, err := m.Engine.Self(ctx)
	if err != nil || self.NodeID == "" || !self.ControlAvailable {
		return false, err
	}
	n, err := m.Engine.Node(ctx, self.NodeID)
	return err == nil && n.Leader, err
}

// joinMaterial is what the leader publishes for newcomers.
type joinMaterial struct {
	worker, manager, ca string
	managers, aliases   []string
}

// readJoinMaterial reads the swarm's join material from the engine: each
// manager at the address it has; and, where the swarm knows it by another
// (a swarm restored onto another host keeps the lost host's address), that
// pair, for the managers to reach it (applyAliases).
func (m *Manager) readJoinMaterial(ctx context.Context) (joinMaterial, error) {
	var j joinMaterial
	var err error
	if j.worker, j.manager, err = m.Engine.JoinTokens(ctx); err != nil {
		return j, err
	}
	if j.ca, err = m.Engine.CA(ctx); err != nil {
		return j, err
	}
	self, err := m.Engine.Self(ctx)
	if err != nil {
		return j, err
	}
	nodes, err := m.Engine.Nodes(ctx)
	if err != nil {
		return j, err
	}
	for _, n := range nodes {
		if n.Role != "manager" || !n.Manager() {
			continue
		}
		real, known := n.Addr, host(n.ManagerAddr)
		if n.ID == self.NodeID {
			real = m.Address
		}
		if n.Reachability == "reachable" {
			at := real
			if at == "" || at == "0.0.0.0" {
				at = known
			}
			j.managers = append(j.managers, fmt.Sprintf("%s:%d", at, SwarmPort))
		}
		if real != "" && real != "0.0.0.0" && known != real {
			j.aliases = append(j.aliases, known+" "+real)
		}
	}
	sort.Strings(j.managers)
	sort.Strings(j.aliases)
	for _, a := range j.managers {
		if !ValidManager(a) {
			return j, fmt.Errorf("a manager at %q", a)
		}
	}
	for _, a := range j.aliases {
		k, r, _ := strings.Cut(a, " ")
		if !ValidIPv4(k) || !ValidIPv4(r) {
			return j, fmt.Errorf("a manager known as %q", a)
		}
	}
	if !ValidToken(j.worker) || !ValidToken(j.manager) {
		return j, fmt.Errorf("the engine's join tokens are not of the shape of one")
	}
	if !CAMatchesToken(j.worker, j.ca) {
		return j, fmt.Errorf("the swarm's CA certificate does not match the digest in its join token")
	}
	return j, nil
}

func lines(l []string) []byte {
	if len(l) == 0 {
		return nil
	}
	return []byte(strings.Join(l, "\n") + "\n")
}

// PublishJoinMaterial publishes the swarm's join material when it is not
// what was last published (always with force): the CA certificate, the
// manager token (for the managers only), the managers' addresses, and last
// the worker token, which agents wait for.
func (m *Manager) PublishJoinMaterial(ctx context.Context, force bool) error {
	j, err := m.readJoinMaterial(ctx)
	if err != nil {
		return err
	}
	sum := Digest([]byte(strings.Join([]string{j.worker, j.manager, j.ca, string(lines(j.managers)), string(lines(j.aliases))}, "\x00")))
	var last string
	if _, err := m.State.Load("published", &last); err != nil {
		return err
	}
	if !force && last == sum {
		return nil
	}
	for _, o := range []struct {
		key, kind string
		body      []byte
	}{
		{names.SwarmPrefix + "/" + names.SwarmCA, "application/x-pem-file", []byte(j.ca)},
		{names.ControlKey(names.ManagerToken), "text/plain", []byte(j.manager)},
		{names.ControlKey(names.ManagerAliases), "text/plain", lines(j.aliases)},
		{names.ManagersKey, "text/plain", lines(j.managers)},
		{names.SwarmPrefix + "/" + names.SwarmToken, "text/plain", []byte(j.worker)},
	} {
		if err := m.Bucket.Put(ctx, o.key, o.body, o.kind, nil); err != nil {
			return err
		}
	}
	if err := m.State.Save("published", sum); err != nil {
		return err
	}
	m.Log("published the join material (%d managers)", len(j.managers))
	return nil
}

// applyAliases makes this node reach a manager that the swarm knows by an
// address it no longer has: Docker keeps a manager's address when its
// swarm is restored onto another host, and tells the other managers to
// reach it there.
func (m *Manager) applyAliases(ctx context.Context) error {
	b, _, err := m.Bucket.Get(ctx, names.ControlKey(names.ManagerAliases))
	if errors.Is(err, ErrMissing) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(b), "\n") {
		known, real, ok := strings.Cut(strings.TrimSpace(l), " ")
		if !ok || !ValidIPv4(known) || !ValidIPv4(real) {
			continue
		}
		added, err := m.Network.Redirect(ctx, known, real)
		if err != nil {
			return err
		}
		if added {
			m.Log("the swarm knows manager %s as %s: reaching it there", real, known)
		}
	}
	return nil
}
