package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// A spot interruption warning or a rebalance recommendation on the queue
// is anyone's word (whoever may send to the queue), so the leader drains
// a node on it only once the node's own agent confirms it from its
// instance metadata: the agent's InterruptionWatch writes what the
// metadata says to the bucket, at a key that only that instance's session
// of the agents' role may write (names.InterruptionPrefix). A drained
// instance that outlives the warning is set active again
// (drains.release).

// confirmWindow bounds how far a confirmation's metadata time may be from
// when the queue received the warning: a spot action's time is two
// minutes after its warning, a recommendation's when it was made.
const confirmWindow = 15 * time.Minute

// interruptedRecord is the leader's record of a drain on a confirmed
// warning, under names.Interrupted: any leader may set the nodes active
// again.
type interruptedRecord struct {
	Instance string    `json:"instance"`
	Kind     string    `json:"kind"`
	Nodes    []string  `json:"nodes"`
	Since    time.Time `json:"since"`
}

func interruptedKey(instance string) string {
	return names.ControlKey(names.Interrupted + "/" + instance)
}

// handleInterruption drains the swarm nodes of an instance that EC2 is
// about to interrupt (a spot interruption warning) or advises to replace
// (a rebalance recommendation) once the node's agent confirms it, so that
// their tasks start elsewhere while it still runs. An instance with no
// proven node in this swarm is another cluster's (the rule takes every
// such event of the account and region), and its notice is dropped; so
// is one its agent does not confirm within ConfirmWait. The node stays,
// drained, until its termination goes through the lifecycle hook, or, if
// the instance runs on, until release sets it active again.
func (d *drains) handleInterruption(ctx context.Context, file string, n notice, e wire.Event) error {
	instance, kind := e.Interruption(), wire.InterruptionKind(e.DetailType)
	if instance == "" {
		d.Log("ignoring a notice of %s without an instance", e.DetailType)
		return d.inbox.forget(ctx, file, n)
	}
	_, ids, err := d.prover.nodesIdentified(ctx)
	if err != nil {
		return err
	}
	if len(ids.Nodes(instance)) == 0 {
		d.Log("dropping the %s notice of %s: no node of this swarm is that instance", kind, instance)
		return d.inbox.forget(ctx, file, n)
	}
	now := d.Clock.Now()
	if n.Since.IsZero() {
		n.Since = now
		if err := d.State.Save(file, n); err != nil {
			return err
		}
	}
	ok, err := d.confirmed(ctx, instance, kind, n.Sent)
	if err != nil {
		return err
	}
	if !ok {
		if now.Sub(n.Since) < d.T.ConfirmWait {
			return nil // the agent checks its metadata every few seconds
		}
		d.Log("dropping the %s notice of %s: its agent did not confirm it from the instance metadata within %s; nothing is drained",
			kind, instance, d.T.ConfirmWait)
		return d.inbox.forget(ctx, file, n)
	}
	drained, err := d.prover.setAvailability(ctx, instance, wire.AvailabilityDrain, e.DetailType+", confirmed by the node's agent")
	if err != nil {
		return err
	}
	if len(drained) > 0 {
		rec := interruptedRecord{Instance: instance, Kind: kind, Nodes: drained, Since: now.UTC()}
		b, _ := json.Marshal(rec)
		if err := d.Bucket.Put(ctx, interruptedKey(instance), b, "application/json", nil); err != nil {
			d.Log("recording the drain of %s (to set it active again should it run on): %v", instance, err)
		}
	}
	return d.inbox.forget(ctx, file, n)
}

// confirmed tells whether the agent of instance confirmed a warning of
// kind the queue received at sent: a confirmation at a key of
// names.InterruptionPrefix that ends in ":<instance>" (the writer's
// aws:userid: only that instance's session may write it).
func (d *drains) confirmed(ctx context.Context, instance, kind string, sent time.Time) (bool, error) {
	list, err := d.Bucket.List(ctx, names.InterruptionPrefix+"/")
	if err != nil {
		return false, fmt.Errorf("listing the agents' confirmations: %w", err)
	}
	for _, o := range list {
		if wire.ConfirmationOwner(o.Key) != instance {
			continue
		}
		body, _, err := d.Bucket.Get(ctx, o.Key)
		if errors.Is(err, ErrMissing) {
			continue
		}
		if err != nil {
			return false, err
		}
		c, err := wire.ParseInterruptionConfirmation(body)
		if err != nil {
			d.Log("ignoring %s: %v", o.Key, err)
			continue
		}
		if c.Confirms(instance, kind, sent, confirmWindow) {
			return true, nil
		}
	}
	return false, nil
}

// release sets active again, every Every, the nodes drained on a confirmed
// warning whose instance still runs, InService, InterruptedHold later: a
// rebalance recommendation need not be followed by a replacement, nor a
// stopped spot instance stay stopped, and nothing else would make them
// active. A record of an instance gone (terminated, unknown) is dropped:
// the lifecycle hook or the dead-node check removed its nodes; one of an
// instance terminating or stopped waits.
func (d *drains) release(ctx context.Context) error {
	now := d.Clock.Now()
	if now.Before(d.nextRelease) {
		return nil
	}
	d.nextRelease = now.Add(d.T.DeadEvery)
	list, err := d.Bucket.List(ctx, names.ControlKey(names.Interrupted)+"/")
	if err != nil {
		return err
	}
	for _, o := range list {
		body, _, err := d.Bucket.Get(ctx, o.Key)
		if errors.Is(err, ErrMissing) {
			continue
		}
		if err != nil {
			return err
		}
		var rec interruptedRecord
		if json.Unmarshal(body, &rec) != nil || !wire.ValidInstanceID(rec.Instance) || o.Key != interruptedKey(rec.Instance) {
			d.Log("removing %s: not a record of a drain", o.Key)
			if err := d.Bucket.Delete(ctx, o.Key); err != nil {
				return err
			}
			continue
		}
		if now.Sub(rec.Since) < d.T.InterruptedHold {
			continue
		}
		states, err := d.Instances.States(ctx, []string{rec.Instance})
		if err != nil {
			return err
		}
		switch states[rec.Instance] {
		case "running":
		case "", "terminated", "shutting-down":
			if err := d.Bucket.Delete(ctx, o.Key); err != nil {
				return err
			}
			continue
		default:
			continue // stopped, stopping, pending: it may come back
		}
		_, state, err := d.Scaling.LifecycleState(ctx, rec.Instance)
		if err != nil {
			return err
		}
		if strings.HasPrefix(state, "Terminating") {
			continue // the lifecycle hook drains and removes it
		}
		if err := eachNode(ctx, d.Engine, rec.Nodes, func(node Node) error {
			if node.Availability != wire.AvailabilityDrain {
				return nil
			}
			if err := d.Engine.SetAvailability(ctx, node.ID, wire.AvailabilityActive); err != nil {
				return err
			}
			d.Log("set node %s of instance %s active again: drained on a confirmed %s notice %s ago, the instance runs on (%s)",
				node.ID, rec.Instance, rec.Kind, now.Sub(rec.Since).Round(time.Second), orQ(state))
			return nil
		}); err != nil {
			return err
		}
		if err := d.Bucket.Delete(ctx, o.Key); err != nil {
			return err
		}
	}
	return nil
}

// InstanceNotices is what an agent reads of its own instance metadata.
type InstanceNotices interface {
	// Interruption is the interruption notice the metadata gives now: a
	// spot instance-action first, else a rebalance recommendation; ok
	// false when there is none.
	Interruption(ctx context.Context, instance string) (c wire.InterruptionConfirmation, ok bool)
}

// Writer writes objects of the cluster bucket.
type Writer interface {
	Put(ctx context.Context, key string, body []byte, contentType string, meta map[string]string) error
}

// InterruptionWatch runs beside an agent: every Every it reads the
// instance metadata and writes what it says of an interruption to the
// bucket at the key only this instance may write (Key: the prefix and
// the session's aws:userid), once per notice.
type InterruptionWatch struct {
	InstanceID string
	Metadata   InstanceNotices
	Bucket     Writer
	// Key is this instance's confirmation key (asked once, when first
	// needed).
	Key   func(ctx context.Context) (string, error)
	Clock Clock
	Log   Logger
	Every time.Duration

	key, written string
}

// Run watches until ctx ends.
func (w *InterruptionWatch) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := w.Check(ctx); err != nil {
			w.Log("confirming this instance's interruption notice: %v", err)
		}
		_ = w.Clock.Sleep(ctx, w.Every)
	}
	return ctx.Err()
}

// Check writes the metadata's interruption notice, when there is one not
// yet written.
func (w *InterruptionWatch) Check(ctx context.Context) error {
	c, ok := w.Metadata.Interruption(ctx, w.InstanceID)
	if !ok {
		return nil
	}
	body := string(c.Marshal())
	if body == w.written {
		return nil
	}
	if w.key == "" {
		k, err := w.Key(ctx)
		if err != nil {
			return err
		}
		w.key = k
	}
	if err := w.Bucket.Put(ctx, w.key, []byte(body), "application/json", nil); err != nil {
		return err
	}
	w.written = body
	w.Log("the instance metadata gives a %s notice (%s %s): confirmed it at %s", c.Kind, orQ(c.Action), c.Time.Format(time.RFC3339), w.key)
	return nil
}
