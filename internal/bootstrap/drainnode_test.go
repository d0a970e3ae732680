package bootstrap

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/iostreams"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// service is what the clusterctl commands run on, against the lab's moto.
func (tc *testCluster) service() *cluster.Clients {
	cfg := awsConfig()
	ios, _, _, _ := iostreams.Test()
	return &cluster.Clients{
		Stacks: stacks.NewManager(tc.c.cfn, stacks.Options{RunID: "drainnode"}),
		CFN:    tc.c.cfn, EC2: tc.c.ec2, ASG: tc.c.asg, S3: tc.c.s3, SQS: tc.c.sqs, STS: sts.NewFromConfig(cfg),
		Region: region, IO: ios, Version: version,
		Run: cluster.Run{Command: "drain-node", ID: "drainnode"},
	}
}

// drain-node, run against the lab, drains a real agent through the
// managers' housekeeping: when it returns, the agent is drained and runs
// no task — its containers are gone, although they outlive the drain by
// their stop grace period (sleep as a container's first process ignores
// SIGTERM) — and every replica of the service runs on the other agent;
// --undo makes it active again, and the swarm places tasks on it. A
// request that waited on the queue beyond the bound is dropped, and
// changes nothing.
func TestDrainNodeCommand(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "drainnode")
	g := tc.deployGroup(t, "g", 2, nil)
	// A bound the test can outwait: a request delayed on the queue longer
	// than this is too old when housekeeping sees it. The snapshot's
	// regular interval is long: drain-node sees the containers gone in time
	// only because the leader publishes often after a request.
	control := tc.bootControl(t, "CLUSTERCTL_REQUEST_MAX_AGE=25", "CLUSTERCTL_STATUS_INTERVAL=100")
	agents := []*enginetest.Node{g.bootAgent(t, 0), g.bootAgent(t, 1)}
	for _, a := range agents {
		g.readyAgent(t, a)
	}
	leaving, staying := g.instances[0].id, g.instances[1].id
	var leavingNode, stayingNode string
	eventually(t, time.Minute, "both agents in the swarm", func() (bool, string) {
		nodes, err := trySwarmNodes(control)
		if err != nil {
			return false, err.Error()
		}
		l, s := byInstance(nodes, leaving), byInstance(nodes, staying)
		if l == nil || s == nil || l.Status.State != "ready" || s.Status.State != "ready" {
			return false, fmt.Sprintf("%d nodes", len(nodes))
		}
		leavingNode, stayingNode = l.ID, s.ID
		return true, ""
	})
	createService(t, control, "web", 4, "--constraint", "engine.labels.clusterctl.group==g", "--stop-grace-period", "20s")
	eventually(t, time.Minute, "web runs on both agents", func() (bool, string) {
		on := runningOn(serviceTasks(t, control, "web"))
		return on[leavingNode] > 0 && on[stayingNode] > 0 && on[leavingNode]+on[stayingNode] == 4, fmt.Sprint(on)
	})
	// The leader's status snapshot, which the command reads, is published.
	eventually(t, time.Minute, "the status snapshot", func() (bool, string) {
		_, err := tc.tryObject(names.StatusKey)
		return err == nil, fmt.Sprint(err)
	})

	svc := tc.service()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// When the leaving agent's last container went, as its engine says.
	var lastGone time.Time
	watching, stopWatching := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watching.Err() == nil {
			if out, err := agents[0].Docker(watching, "ps", "-q"); err == nil && strings.TrimSpace(out) == "" && lastGone.IsZero() {
				lastGone = time.Now()
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	// Within the snapshot's regular interval: only frequent publication
	// after the request lets drain-node see the drain through in time.
	drainCtx, drainCancel := context.WithTimeout(ctx, 80*time.Second)
	d, err := cluster.NewNodes(svc).DrainNode(drainCtx, cluster.DrainOptions{Instance: leaving})
	drainCancel()
	returned := time.Now()
	stopWatching()
	<-watched
	if err != nil {
		t.Fatalf("drain-node: %v\n%s", err, control.Logs())
	}
	if out, err := docker(ctx, agents[0], "ps", "-q"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("drain-node returned while the drained agent still runs containers %q (%v)", out, err)
	} else {
		t.Logf("drain-node returned %v after the drained agent's last container stopped, %.1f s after it was run", returned.Sub(lastGone).Round(100*time.Millisecond), d.DurationSeconds)
	}
	if !d.Changed || d.Availability != "drain" || len(d.Nodes) != 1 || d.Nodes[0].NodeID != leavingNode || d.Nodes[0].RunningTasks != 0 {
		t.Errorf("drain-node: %+v", d)
	}
	if n := byInstance(swarmNodes(t, control), leaving); n == nil || n.Spec.Availability != "drain" {
		t.Errorf("the drained agent in the swarm: %+v", n)
	}
	if on := runningOn(serviceTasks(t, control, "web")); on[leavingNode] != 0 {
		t.Errorf("web still runs on the drained agent: %v", on)
	}
	eventually(t, time.Minute, "every replica runs on the other agent", func() (bool, string) {
		on := runningOn(serviceTasks(t, control, "web"))
		return on[stayingNode] == 4, fmt.Sprint(on)
	})
	if !strings.Contains(control.Logs(), fmt.Sprintf("set node %s of instance %s to drain: request %s", leavingNode, leaving, d.RequestID)) {
		t.Errorf("housekeeping did not log the request:\n%s", control.Logs())
	}
	eventually(t, 30*time.Second, "the request leaves the queue", func() (bool, string) { return tc.queueEmpty(t) })

	// Again: drained already, nothing sent.
	if d, err := cluster.NewNodes(svc).DrainNode(ctx, cluster.DrainOptions{Instance: leaving}); err != nil || d.Changed {
		t.Errorf("drain-node of a drained agent: %+v, %v", d, err)
	}

	// --undo: active again, and it takes tasks.
	d, err = cluster.NewNodes(svc).DrainNode(ctx, cluster.DrainOptions{Instance: leaving, Undo: true})
	if err != nil {
		t.Fatalf("drain-node --undo: %v\n%s", err, control.Logs())
	}
	if !d.Changed || d.Availability != "active" || len(d.Nodes) != 1 || d.Nodes[0].Availability != "active" {
		t.Errorf("drain-node --undo: %+v", d)
	}
	if n := byInstance(swarmNodes(t, control), leaving); n == nil || n.Spec.Availability != "active" {
		t.Errorf("the agent after --undo: %+v", n)
	}
	createService(t, control, "batch", 2, "--constraint", "node.id=="+leavingNode)
	eventually(t, time.Minute, "the active agent runs new tasks", func() (bool, string) {
		on := runningOn(serviceTasks(t, control, "batch"))
		return on[leavingNode] == 2, fmt.Sprint(on)
	})

	// A request that waited on the queue beyond the bound: dropped.
	stale := requestBody(t, tc.name, staying, "drain")
	if _, err := tc.c.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(tc.queue), MessageBody: aws.String(stale.body), DelaySeconds: 30}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "housekeeping drops the old request", func() (bool, string) {
		return strings.Contains(control.Logs(), "dropping request "+stale.id+" to set instance "+staying+" drain"), "not yet"
	})
	eventually(t, 30*time.Second, "the old request leaves the queue", func() (bool, string) { return tc.queueDrained(t) })
	if n := byInstance(swarmNodes(t, control), staying); n == nil || n.Spec.Availability != "active" {
		t.Errorf("an old request drained %+v", n)
	}
}

type rawRequest struct{ id, body string }

// requestBody is a node availability request as clusterctl sends it
// (docs/design.md, "Node requests").
func requestBody(t *testing.T, clusterName, instance, availability string) rawRequest {
	t.Helper()
	id := "5a1e2f3c-4b5d-4e6f-8a9b-0c1d2e3f4a5b"
	now := time.Now().UTC().Format(time.RFC3339)
	b, err := json.Marshal(map[string]any{
		"version": "0", "id": id, "detail-type": names.RequestNodeAvailability, "source": names.RequestSource,
		"account": account, "time": now, "region": region,
		"resources": []string{"arn:aws:ec2:" + region + ":" + account + ":instance/" + instance},
		"detail":    map[string]string{"request-id": id, "time": now, "cluster": clusterName, "instance-id": instance, "availability": availability},
	})
	if err != nil {
		t.Fatal(err)
	}
	return rawRequest{id: id, body: string(b)}
}

// queueDrained says whether the core's queue holds no message at all,
// delayed ones included.
func (tc *testCluster) queueDrained(t *testing.T) (bool, string) {
	t.Helper()
	out, err := tc.c.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(tc.queue), AttributeNames: []sqstypes.QueueAttributeName{
			"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := out.Attributes
	return a["ApproximateNumberOfMessages"] == "0" && a["ApproximateNumberOfMessagesNotVisible"] == "0" && a["ApproximateNumberOfMessagesDelayed"] == "0",
		fmt.Sprint(a)
}
