package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// DrainOptions says which node drain-node drains, or makes active again.
type DrainOptions struct {
	Instance string
	Cluster  string // "": the cluster the instance's tags name
	Undo     bool   // make the node active again
	// Progress gets a line for each change seen while waiting; nil for
	// none.
	Progress io.Writer
}

// Drain is how drain-node ended. The JSON keys are a public interface.
type Drain struct {
	Cluster      string `json:"cluster"`
	Group        string `json:"group"`
	InstanceID   string `json:"instanceId"`
	Availability string `json:"availability"` // what was asked: drain or active
	// Changed is false when the nodes already were as asked: nothing was
	// sent.
	Changed   bool   `json:"changed"`
	RequestID string `json:"requestId"` // "" when nothing was sent
	// Nodes are the instance's swarm nodes, as last seen.
	Nodes           []SwarmNode `json:"nodes"`
	DurationSeconds float64     `json:"durationSeconds"`
}

// pollStatus is how often a command waiting on the swarm reads its status
// snapshot (a small object; the leader publishes it at once after a
// request, then every 15 s).
const pollStatus = 2 * time.Second

// DrainNode sets the swarm nodes of an instance to drain (active with
// Undo) through the managers' housekeeping, and waits until the status
// snapshot shows them so and, drained, running no task. Nodes that
// already are so make it a success with nothing sent. The request is
// idempotent: interrupted, the command can be run again.
func (s *Nodes) DrainNode(ctx context.Context, o DrainOptions) (*Drain, error) {
	start := time.Now()
	want := AvailabilityDrain
	if o.Undo {
		want = AvailabilityActive
	}
	n, err := s.findNode(ctx, o.Instance, o.Cluster)
	if err != nil {
		return nil, err
	}
	bucket, err := s.find.bucketOf(ctx, n.core)
	if err != nil {
		return nil, err
	}
	queue, err := s.leases.queueOf(ctx, n.core)
	if err != nil {
		return nil, err
	}
	st, err := s.status.currentStatus(ctx, n, bucket)
	if err != nil {
		return nil, err
	}
	d := &Drain{Cluster: n.Cluster, Group: n.Group, InstanceID: n.InstanceID, Availability: want, Nodes: st.nodesOf(n.InstanceID, n.PrivateIP)}
	if len(d.Nodes) == 0 {
		return nil, refused("%s has no node in the swarm (status of %s ago): nothing to set %s", n.what(), query.FormatAge(st.age(time.Now())), want)
	}
	if availabilityReached(d.Nodes, want) {
		d.DurationSeconds = seconds(time.Since(start))
		return d, nil
	}
	if want == AvailabilityDrain && n.manager() {
		s.say.printf("Note: %s is a manager: drained, it runs no tasks but stays a manager; the swarm keeps its quorum\n", n.InstanceID)
	}
	caller, err := s.leases.caller(ctx)
	if err != nil {
		return nil, err
	}
	id := wire.NewRequestID()
	req, err := availabilityRequest(id, time.Now(), caller, s.Region, n.Cluster, n.InstanceID, want)
	if err != nil {
		return nil, err
	}
	sent := time.Now()
	if _, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(req)}); err != nil {
		return nil, fmt.Errorf("sending the request to the core's queue: %w", err)
	}
	d.Changed, d.RequestID = true, id
	progressf(o.Progress, "Asked the managers of cluster %s to set %s to %s (request %s)\n", n.Cluster, n.InstanceID, want, id)
	err = s.awaitAvailability(ctx, n, bucket, want, sent, d, o.Progress)
	d.DurationSeconds = seconds(time.Since(start))
	if err != nil {
		return nil, err
	}
	return d, nil
}

// awaitAvailability waits until the status snapshot shows the nodes of
// the instance as asked, keeping the last seen in d. A request the
// managers have not acted on when it is older than names.RequestMaxAge
// never will be: they drop it.
func (s *Nodes) awaitAvailability(ctx context.Context, n *clusterNode, bucket, want string, sent time.Time, d *Drain, progress io.Writer) error {
	hint := fmt.Sprintf("the request stands: the managers act on it if they take it within %s of sending; `clusterctl drain-node %s` again waits for it", names.RequestMaxAge, n.InstanceID)
	if want == AvailabilityActive {
		hint = strings.Replace(hint, "drain-node "+n.InstanceID, "drain-node "+n.InstanceID+" --undo", 1)
	}
	// The snapshot may lag a request that was acted on by one publication.
	deadline := sent.Add(names.RequestMaxAge + time.Minute)
	last := nodesLine(d.Nodes)
	tick := time.NewTicker(pollStatus)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return stoppedWaiting(fmt.Errorf("waiting for %s to be %s: %w", n.InstanceID, want, ctx.Err()), hint)
		case <-tick.C:
		}
		st, err := s.status.readStatus(ctx, bucket, n.Cluster)
		if ctx.Err() != nil {
			return stoppedWaiting(fmt.Errorf("waiting for %s to be %s: %w", n.InstanceID, want, ctx.Err()), hint)
		}
		if err != nil {
			return err
		}
		if st == nil {
			continue
		}
		nodes := st.nodesOf(n.InstanceID, n.PrivateIP)
		if len(nodes) == 0 {
			return refused("%s left the swarm while it was being set %s (is it terminating?)", n.what(), want)
		}
		d.Nodes = nodes
		if line := nodesLine(nodes); line != last {
			progressf(progress, "%s: %s\n", n.InstanceID, line)
			last = line
		}
		if availabilityReached(nodes, want) {
			return nil
		}
		if !availabilitySet(nodes, want) && time.Now().After(deadline) {
			return refused("the managers of cluster %q did not act on request %s within %s: they drop it now (is their housekeeping running? clusterctl describe %s)",
				n.Cluster, d.RequestID, names.RequestMaxAge, n.Cluster)
		}
	}
}

// availabilitySet says whether every node has the availability asked.
func availabilitySet(nodes []SwarmNode, want string) bool {
	for _, n := range nodes {
		if n.Availability != want {
			return false
		}
	}
	return len(nodes) > 0
}

// availabilityReached says whether the nodes are as asked: each has the
// availability, and drained ones run no task.
func availabilityReached(nodes []SwarmNode, want string) bool {
	if !availabilitySet(nodes, want) {
		return false
	}
	for _, n := range nodes {
		if want == AvailabilityDrain && n.RunningTasks > 0 {
			return false
		}
	}
	return true
}

// nodesLine says how the nodes are, for progress.
func nodesLine(nodes []SwarmNode) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprintf("node %s %s, %s, %s running", short(n.NodeID), n.State, n.Availability, query.Plural(n.RunningTasks, "task"))
	}
	return strings.Join(parts, "; ")
}

// short is a swarm node id as docker node ls shows it.
func short(id string) string { return id[:min(len(id), 12)] }

// stoppedWaiting is the error of a wait that Ctrl-C (exit 130) or
// --timeout (exit 1) stopped, with what to do next.
func stoppedWaiting(err error, hint string) error {
	if errors.Is(err, context.Canceled) {
		return &errs.InterruptedError{Err: err, Hint: hint}
	}
	return fmt.Errorf("%w\n%s", err, hint)
}

// progressf writes a progress line when there is somewhere to write it.
func progressf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*10) / 10 }
