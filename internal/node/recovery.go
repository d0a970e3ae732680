package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// A swarm that lost its quorum has no leader, so no housekeeping round
// acts; the managers that survive run Recovery instead (docs/design.md,
// "Quorum loss"). After QuorumGrace without a leader, when every manager
// that does not answer is proven gone by EC2 and Auto Scaling (never by the
// swarm's word: a partitioned manager runs on), exactly one survivor, by a
// conditional write of names.QuorumRecovery, forces a new cluster from its
// state; the other survivors leave and join it once it is done, as do the
// replacements the Auto Scaling group launches.

// QuorumView is what this manager's engine knows of its swarm, leader or
// none.
type QuorumView struct {
	NodeID string
	// Manager: a manager of an active swarm.
	Manager bool
	// Leaderless: the swarm has no leader (it lost its quorum).
	Leaderless bool
	// Managers are the swarm's managers as this engine knows them.
	Managers []RemoteManager
}

// RemoteManager is a manager of the swarm: its node id and ip:port.
type RemoteManager struct{ NodeID, Addr string }

// QuorumEngine is what recovery needs of the local engine.
type QuorumEngine interface {
	Quorum(ctx context.Context) (QuorumView, error)
	// ForceNewCluster makes this engine the single manager of its swarm,
	// keeping its state (docker swarm init --force-new-cluster).
	ForceNewCluster(ctx context.Context, advertise string) error
	Leave(ctx context.Context) error
}

// InstanceAt is an instance EC2 lists at an address, with its state.
type InstanceAt struct{ ID, State string }

// ManagerProof is what EC2 and Auto Scaling say of the managers.
type ManagerProof interface {
	// At are the instances EC2 lists at each private IPv4 address.
	At(ctx context.Context, addrs []string) (map[string][]InstanceAt, error)
	// ManagerGroup are the instances of the managers' Auto Scaling group of
	// cluster (proven by its tags).
	ManagerGroup(ctx context.Context, cluster string) ([]string, error)
	// Fence terminates a manager's instance through its Auto Scaling
	// group, keeping the group's desired capacity (a replacement comes).
	Fence(ctx context.Context, instance string) error
}

// Recovery heals a quorum loss; it runs on a manager that does not lead.
type Recovery struct {
	Cluster, InstanceID, Address string

	Engine  QuorumEngine
	Proof   ManagerProof
	Bucket  Bucket
	Network Network
	Clock   Clock
	Log     Logger
	State   State
	// Grace is how long the swarm is without a leader before anything is
	// decided (an election takes seconds).
	Grace time.Duration
	// Rejoin joins the swarm a survivor forced, as a manager.
	Rejoin func(ctx context.Context) bool

	said string // the last decision logged
}

const quorumState = "quorum-lost"

// lossRecord is since when this manager sees no leader.
type lossRecord struct {
	Since time.Time `json:"since"`
	Left  bool      `json:"left"` // left to join the survivor that forced
}

var recoveryKey = names.ControlKey(names.QuorumRecovery)

// Round decides once; forced tells that this manager forced a new cluster
// (it leads it now: its join material is to be published).
func (r *Recovery) Round(ctx context.Context) (forced bool, err error) {
	var rec lossRecord
	if _, err := r.State.Load(quorumState, &rec); err != nil {
		return false, err
	}
	if rec.Left {
		// Out of the swarm, to join the one forced: until it takes us.
		if r.Rejoin(ctx) {
			r.say("joined the swarm another survivor recovered")
			return false, r.State.Remove(quorumState)
		}
		return false, nil
	}
	v, err := r.Engine.Quorum(ctx)
	if err != nil {
		return false, err
	}
	now := r.Clock.Now()
	if !v.Manager || !v.Leaderless {
		if !rec.Since.IsZero() {
			r.say("the swarm has a leader again")
			return false, r.State.Remove(quorumState)
		}
		return false, nil
	}
	if rec.Since.IsZero() {
		rec.Since = now
		if err := r.State.Save(quorumState, rec); err != nil {
			return false, err
		}
	}
	if now.Before(rec.Since.Add(r.Grace)) {
		r.note(ctx, rec.Since, "waiting", fmt.Sprintf("no leader since %s: deciding after %s", rec.Since.UTC().Format(time.RFC3339), r.Grace))
		return false, nil
	}
	var missing []RemoteManager
	for _, m := range v.Managers {
		if m.NodeID != v.NodeID && !r.Network.Answers(ctx, m.Addr) {
			missing = append(missing, m)
		}
	}
	if len(missing) == 0 {
		r.note(ctx, rec.Since, "stuck", "every manager answers but none leads: nothing is forced")
		return false, nil
	}
	var addrs []string
	for _, m := range missing {
		addrs = append(addrs, host(m.Addr))
	}
	at, err := r.Proof.At(ctx, addrs)
	if err != nil {
		return false, fmt.Errorf("asking EC2 for the lost managers: %w", err)
	}
	group, err := r.Proof.ManagerGroup(ctx, r.Cluster)
	if err != nil {
		return false, fmt.Errorf("asking Auto Scaling for the managers' group: %w", err)
	}
	alive, gone := judgeLost(ctx, r.Proof, r.Log, addrs, at, group)
	if len(alive) > 0 {
		r.note(ctx, rec.Since, "stuck", fmt.Sprintf("no leader since %s, and %s: a partition or a stopped engine, never taken as gone; nothing is forced. "+
			"The swarm recovers on its own once those managers answer again, or once their instances are terminated; "+
			"or, on purpose, `docker swarm init --force-new-cluster` on a surviving manager",
			rec.Since.UTC().Format(time.RFC3339), strings.Join(alive, "; ")))
		return false, nil
	}
	return r.claim(ctx, v, rec, lossOf(v), addrs, gone)
}

// claim takes the recovery claim of this loss, and forces a new cluster
// when it won; a survivor that lost leaves once the winner is done, to
// join it.
func (r *Recovery) claim(ctx context.Context, v QuorumView, rec lossRecord, loss string, lost, gone []string) (bool, error) {
	body, obj, err := r.Bucket.Get(ctx, recoveryKey)
	etag := ""
	switch {
	case errors.Is(err, ErrMissing):
	case err != nil:
		return false, err
	default:
		c, perr := wire.ParseRecoveryClaim(body)
		if perr == nil && c.Loss == loss && c.Instance != r.InstanceID {
			if !c.Done {
				r.note(ctx, rec.Since, "joining", fmt.Sprintf("survivor %s at %s recovers the swarm; joining it when it is done", c.Instance, c.Address))
				return false, nil
			}
			r.say(fmt.Sprintf("survivor %s forced a new cluster: leaving this one to join it", c.Instance))
			if err := r.Engine.Leave(ctx); err != nil {
				return false, err
			}
			rec.Left = true
			return false, r.State.Save(quorumState, rec)
		}
		if perr == nil && c.Loss == loss {
			break // ours: an earlier round won and did not finish
		}
		etag = obj.ETag // the claim of an earlier loss
	}
	c := wire.RecoveryClaim{Instance: r.InstanceID, Address: r.Address, Loss: loss, Time: r.Clock.Now().UTC(), Lost: lost}
	if etag != "" || errors.Is(err, ErrMissing) {
		if err := r.Bucket.Claim(ctx, recoveryKey, c.Marshal(), etag); errors.Is(err, ErrLost) {
			return false, nil // another survivor's: read next round
		} else if err != nil {
			return false, err
		}
	}
	r.say(fmt.Sprintf("the swarm has had no leader since %s and every lost manager is proven gone (%s): forcing a new cluster on %s",
		rec.Since.UTC().Format(time.RFC3339), strings.Join(gone, "; "), r.Address))
	if err := r.Engine.ForceNewCluster(ctx, r.Address); err != nil {
		return false, fmt.Errorf("forcing a new cluster: %w", err)
	}
	c.Done = true
	if err := r.Bucket.Put(ctx, recoveryKey, c.Marshal(), "application/json", nil); err != nil {
		return true, err
	}
	r.say("forced a new cluster: this manager leads the swarm; the Auto Scaling group's replacements join it")
	return true, r.State.Remove(quorumState)
}

// judgeLost sorts the lost managers at addrs into those not proven gone
// (alive: why each) and those proven gone (why each), from what EC2 (at)
// and Auto Scaling (group) say. A manager whose instance is stopped or
// stopping in the managers' group is fenced first: terminated through the
// group, its desired capacity kept, since an EBS-backed instance started
// again would come back with the old Raft state beside the recovered
// swarm; it counts as gone only once EC2 shows it terminated.
func judgeLost(ctx context.Context, proof ManagerProof, log Logger, addrs []string, at map[string][]InstanceAt, group []string) (alive, gone []string) {
	for _, a := range addrs {
		ok, why, fence := provenGone(a, at[a], group)
		for _, id := range fence {
			if err := proof.Fence(ctx, id); err != nil {
				why = fmt.Sprintf("the manager at %s is unreachable and its instance %s stopped; terminating it through the managers' group failed: %v", a, id, err)
				log("%s", why)
				continue
			}
			log("fencing the lost manager at %s: its instance %s is stopped; terminated it through the managers' Auto Scaling group (desired capacity kept), so that it never comes back beside a recovered swarm; nothing is forced until EC2 shows it terminated", a, id)
		}
		if ok {
			gone = append(gone, why)
		} else {
			alive = append(alive, why)
		}
	}
	return alive, gone
}

// provenGone tells whether the manager at addr is proven gone, and why
// (or why not): no instance at its address is in the managers' Auto
// Scaling group but as terminated. An instance stopping or shutting down
// is not gone yet: its engine may still answer a moment later; one
// stopped or stopping in the group is to be fenced (its ids), and is not
// gone until terminated. A stopped instance detached from the group is
// gone: the group no longer starts or counts it.
func provenGone(addr string, at []InstanceAt, group []string) (bool, string, []string) {
	var said []string
	var fence []string
	for _, i := range at {
		inGroup := slices.Contains(group, i.ID)
		switch {
		case i.State == "terminated":
			said = append(said, fmt.Sprintf("%s %s", i.ID, i.State))
			continue
		case (i.State == "stopped" || i.State == "stopping") && inGroup:
			fence = append(fence, i.ID)
			continue
		case inGroup:
			return false, fmt.Sprintf("the manager at %s is unreachable but its instance %s is %s", addr, i.ID, i.State), fence
		}
		said = append(said, fmt.Sprintf("%s %s, out of the managers' group", i.ID, i.State))
	}
	if len(fence) > 0 {
		return false, fmt.Sprintf("the manager at %s is unreachable and its instance %s stopped: being terminated before anything is forced",
			addr, strings.Join(fence, ", ")), fence
	}
	if len(said) == 0 {
		return true, fmt.Sprintf("%s: no instance", addr), nil
	}
	return true, fmt.Sprintf("%s: %s", addr, strings.Join(said, ", ")), nil
}

// lossOf identifies a loss of quorum: the swarm's managers as this engine
// knows them, the same for every survivor of that loss; a later loss, of
// the swarm forced since, has other managers.
func lossOf(v QuorumView) string {
	var ids []string
	for _, m := range v.Managers {
		ids = append(ids, m.NodeID)
	}
	sort.Strings(ids)
	return Digest([]byte(strings.Join(ids, "\n")))
}

// say logs a decision once, not every round.
func (r *Recovery) say(s string) {
	if s != r.said {
		r.Log("%s", s)
	}
	r.said = s
}

// note logs the decision and puts it in the status snapshot, which no
// leader publishes meanwhile (only when it is stale: a leader elsewhere,
// which this manager is cut from, keeps publishing its own).
func (r *Recovery) note(ctx context.Context, since time.Time, decision, reason string) {
	r.say(reason)
	body, _, err := r.Bucket.Get(ctx, names.StatusKey)
	if err != nil {
		return
	}
	snap, err := wire.ParseSnapshot(names.StatusKey, body, r.Cluster)
	now := r.Clock.Now()
	if err != nil || now.Sub(snap.Time) < wire.StaleAfter {
		return
	}
	snap.QuorumLoss = &wire.QuorumLoss{Since: since.UTC(), Checked: now.UTC().Truncate(time.Second), Observer: r.InstanceID, Decision: decision, Reason: reason}
	if b, err := snap.Marshal(); err == nil {
		if err := r.Bucket.Put(ctx, names.StatusKey, b, "application/json", nil); err != nil {
			r.Log("noting the quorum loss in the status snapshot: %v", err)
		}
	}
}
