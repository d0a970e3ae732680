package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clusterctl/clusterctl/internal/names"
)

// On moto there is no swarm: these tests play the managers' leader. They
// read the requests clusterctl puts on the core's queue and publish the
// status snapshot of the swarm, in the shapes the managers' housekeeping
// reads and writes (internal/node, the node agent; the real thing runs in
// internal/bootstrap).

// statusNode is one node of a status snapshot, as the leader writes it.
func statusNode(instance, role, availability string, tasks int) map[string]any {
	id := strings.Repeat(strings.TrimPrefix(instance, "i-")+"x", 2)[:25]
	manager := ""
	if role == "manager" {
		manager = "reachable"
	}
	return map[string]any{
		"nodeId": id, "instanceId": instance, "hostname": "ip-10-0-0-1", "address": "10.0.0.1",
		"role": role, "state": "ready", "availability": availability, "managerStatus": manager,
		"engineLabels":  map[string]string{names.EngineLabelInstanceID: instance},
		"engineVersion": "25.0.6", "runningTasks": tasks,
	}
}

// putStatus publishes a status snapshot of the swarm of cluster core as
// its leader does.
func putStatus(t *testing.T, c clients, bucket string, nodes ...map[string]any) {
	t.Helper()
	putStatusOf(t, c, "core", bucket, nodes...)
}

func putStatusOf(t *testing.T, c clients, cluster, bucket string, nodes ...map[string]any) {
	t.Helper()
	if nodes == nil {
		nodes = []map[string]any{}
	}
	// The swarm sees a node at its instance's private IP: the leader
	// publishes that address, and clusterctl believes no other.
	for _, n := range nodes {
		id, _ := n["instanceId"].(string)
		out, err := c.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{
			Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: []string{id}}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Reservations {
			for _, i := range r.Instances {
				if ip := aws.ToString(i.PrivateIpAddress); ip != "" {
					n["address"], n["hostname"] = ip, "ip-"+strings.ReplaceAll(ip, ".", "-")
				}
			}
		}
	}
	body, _ := json.Marshal(map[string]any{
		"version": 1, "cluster": cluster, "time": time.Now().UTC().Format(time.RFC3339), "publisher": "i-0000000000000000a",
		"caDigest": strings.Repeat("ab", 32), "lastBackup": nil, "nodes": nodes,
	})
	if _, err := c.s3.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(names.StatusKey), Body: bytes.NewReader(body), ContentType: aws.String("application/json"),
	}); err != nil {
		t.Fatal(err)
	}
}

func sqsClient(t *testing.T) *sqs.Client {
	t.Helper()
	return sqs.NewFromConfig(motoConfig(t))
}

// receive takes the next message off a queue (nil when none came within
// a long poll), with the time it was sent.
func receive(t *testing.T, q *sqs.Client, queue string) *sqstypes.Message {
	t.Helper()
	out, err := q.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(queue), WaitTimeSeconds: 2, MaxNumberOfMessages: 1,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) == 0 {
		return nil
	}
	return &out.Messages[0]
}

// queueEmpty fails the test when the queue holds a message.
func queueEmpty(t *testing.T, q *sqs.Client, queue, after string) {
	t.Helper()
	if m := receive(t, q, queue); m != nil {
		t.Errorf("%s: the queue holds %s", after, aws.ToString(m.Body))
	}
}

// instancesOf lists the instance ids of a group of cluster core.
func instancesOf(t *testing.T, group string) []string {
	t.Helper()
	var ids []string
	for _, n := range decode[[]node](t, must(t, "list-nodes", "-j", "core", "-n", group, "-o", "json")) {
		ids = append(ids, n.InstanceID)
	}
	return ids
}

// background is a run of the binary that the test plays along with.
type background struct {
	out, errOut lockedBuffer
	done        chan struct{}
	res         result
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startClusterctl starts the binary against moto without waiting for it.
func startClusterctl(t *testing.T, args ...string) *background {
	t.Helper()
	b := &background{done: make(chan struct{})}
	cmd := exec.Command(binary, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = envOf(t), &b.out, &b.errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(b.done)
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			b.res.code = ee.ExitCode()
		} else if err != nil {
			b.res.code = -1
		}
		b.res.stdout, b.res.stderr = b.out.String(), b.errOut.String()
	}()
	t.Cleanup(func() {
		if !b.exited() {
			cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

func (b *background) exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// wait waits for the run to end and returns it.
func (b *background) wait() result {
	<-b.done
	return b.res
}

// until polls f until it holds; the run's own --timeout bounds the test.
func (b *background) until(t *testing.T, what string, f func() bool) {
	t.Helper()
	for !f() {
		if b.exited() {
			t.Fatalf("the run ended before %s:\n%s", what, b.res)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// drain-node refuses what is not a node of a cluster before it sends
// anything; it sends the request in the documented shape and waits until
// the status snapshot shows the node drained and running no task; a node
// already as asked is a success with nothing sent.
func TestDrainNode(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t, "g")
	q := sqsClient(t)
	queue := stackResource(t, c, "core", names.ResourceLifecycleQueue)
	agent := instancesOf(t, "g")[0]
	manager := instancesOf(t, "control")[0]
	// An instance carrying the cluster's tags, outside its groups.
	run, err := c.ec2.RunInstances(context.Background(), &ec2.RunInstancesInput{
		ImageId: aws.String("ami-12c6146b"), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: aws.String(names.TagCluster), Value: aws.String("core")}, {Key: aws.String(names.TagGroup), Value: aws.String("g")},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	copied := aws.ToString(run.Instances[0].InstanceId)

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"bad id", []string{"drain-node", "i-xyz"}, "invalid instance id"},
		{"bad cluster", []string{"drain-node", agent, "-j", "9core"}, "-j/--cluster: invalid cluster name"},
		{"unknown instance", []string{"drain-node", "i-0123456789abcdef0"}, "instance i-0123456789abcdef0 not found"},
		{"another cluster", []string{"drain-node", agent, "-j", "other"}, `is a node of cluster "core", not of "other"`},
		{"tags copied", []string{"drain-node", copied}, "is in no Auto Scaling group"},
		{"replace, unknown instance", []string{"replace-node", "i-0123456789abcdef0"}, "not found"},
	} {
		r := clusterctl(t, tt.args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "clusterctl: ") || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s: want one line with %q, exit 2\n%s", tt.name, tt.want, r)
		}
	}
	queueEmpty(t, q, queue, "after the refusals")

	// No manager has published the swarm's status: nothing would act.
	if r := clusterctl(t, "drain-node", agent); r.code != 1 || !strings.Contains(r.stderr, "no swarm status") {
		t.Errorf("drain-node without a status snapshot:\n%s", r)
	}
	queueEmpty(t, q, queue, "without a status snapshot")

	// Already active: --undo sends nothing.
	putStatus(t, c, bucket, statusNode(manager, "manager", "active", 0), statusNode(agent, "worker", "active", 3))
	r := must(t, "drain-node", agent, "--undo")
	if !strings.Contains(r.stdout, "is active already; nothing sent") {
		t.Errorf("--undo of an active node:\n%s", r)
	}
	queueEmpty(t, q, queue, "after --undo of an active node")

	// The drain, with the test as the leader.
	b := startClusterctl(t, "drain-node", agent, "-o", "json", "--timeout", "5m")
	var msg *sqstypes.Message
	b.until(t, "the request reaches the queue", func() bool {
		msg = receive(t, q, queue)
		return msg != nil
	})
	var req struct {
		Version, ID, Account, Time, Region, Source string
		DetailType                                 string   `json:"detail-type"`
		Resources                                  []string `json:"resources"`
		Detail                                     map[string]string
	}
	if err := json.Unmarshal([]byte(aws.ToString(msg.Body)), &req); err != nil {
		t.Fatalf("request %s: %v", aws.ToString(msg.Body), err)
	}
	sent, _ := time.Parse(time.RFC3339, req.Time)
	if req.Version != "0" || req.Source != "clusterctl" || req.DetailType != "NodeAvailabilityRequest" || req.Region != "us-east-1" ||
		req.Account != "123456789012" || !slices.Equal(req.Resources, []string{"arn:aws:ec2:us-east-1:123456789012:instance/" + agent}) ||
		time.Since(sent) > time.Hour || req.Detail["request-id"] != req.ID || req.Detail["time"] != req.Time ||
		req.Detail["cluster"] != "core" || req.Detail["instance-id"] != agent || req.Detail["availability"] != "drain" ||
		!strings.HasPrefix(req.Detail["requested-by"], "arn:aws:") || len(req.Detail) != 6 {
		t.Errorf("request %s", aws.ToString(msg.Body))
	}
	if msg.Attributes["SentTimestamp"] == "" {
		t.Errorf("the request has no SentTimestamp: %v", msg.Attributes)
	}
	// Drained, its tasks still stopping: not done yet.
	putStatus(t, c, bucket, statusNode(manager, "manager", "active", 0), statusNode(agent, "worker", "drain", 2))
	b.until(t, "the drain shows", func() bool { return strings.Contains(b.errOut.String(), "drain, 2 tasks running") })
	if b.exited() {
		t.Fatalf("drain-node ended while tasks still ran on the node:\n%s", b.res)
	}
	putStatus(t, c, bucket, statusNode(manager, "manager", "active", 0), statusNode(agent, "worker", "drain", 0))
	r = b.wait()
	if r.code != 0 {
		t.Fatalf("drain-node: %s", r)
	}
	d := decode[struct {
		Cluster, Group, InstanceID, Availability, RequestID string
		Changed                                             bool
		Nodes                                               []struct {
			NodeID, Availability string
			RunningTasks         int
		}
	}](t, r)
	if d.Cluster != "core" || d.Group != "g" || d.InstanceID != agent || d.Availability != "drain" || !d.Changed || d.RequestID != req.ID ||
		len(d.Nodes) != 1 || d.Nodes[0].Availability != "drain" || d.Nodes[0].RunningTasks != 0 {
		t.Errorf("drain-node -o json: %s", r.stdout)
	}
	// Drained already: nothing sent.
	r = must(t, "drain-node", agent)
	if !strings.Contains(r.stdout, "is drained already; nothing sent") {
		t.Errorf("drain-node of a drained node:\n%s", r)
	}
	queueEmpty(t, q, queue, "after drain-node of a drained node")

	// A manager may be drained: it stays a manager, and says so.
	b = startClusterctl(t, "drain-node", manager, "--timeout", "5m")
	b.until(t, "the manager's request reaches the queue", func() bool { return receive(t, q, queue) != nil })
	putStatus(t, c, bucket, statusNode(manager, "manager", "drain", 0), statusNode(agent, "worker", "drain", 0))
	if r := b.wait(); r.code != 0 || !strings.Contains(r.stderr, "is a manager: drained, it runs no tasks but stays a manager") ||
		!strings.Contains(r.stdout, "Drained "+manager+" (group control of cluster core)") {
		t.Errorf("drain-node of the manager:\n%s", r)
	}
}

// replace-node terminates the instance through its group, keeping the
// desired capacity, and waits until the status snapshot shows the
// replacement Ready and the old node gone; managers are replaced only
// when the swarm keeps its quorum, the only one only when confirmed.
func TestReplaceNode(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t, "g")
	old := instancesOf(t, "g")[0]
	manager := instancesOf(t, "control")[0]
	asg := asgOf(t, c, old)
	desired := desiredOf(t, c, asg)
	putStatus(t, c, bucket, statusNode(manager, "manager", "active", 0), statusNode(old, "worker", "active", 2))

	b := startClusterctl(t, "replace-node", old, "-o", "json", "-v", "--timeout", "5m")
	var replacement string
	b.until(t, "the group replaces the instance", func() bool {
		is := groupMembers(t, c, asg)
		if slices.Contains(is, old) || len(is) != 1 {
			return false
		}
		replacement = is[0]
		return true
	})
	if got := desiredOf(t, c, asg); got != desired {
		t.Errorf("desired capacity %d after replace-node, was %d: it must not be decremented", got, desired)
	}
	if st := instanceState(t, c, old); st != "terminated" && st != "shutting-down" {
		t.Errorf("the replaced instance is %s", st)
	}
	// The replacement is in service, but not in the swarm: not done.
	b.until(t, "the replacement shows", func() bool {
		return strings.Contains(b.errOut.String(), replacement+": InService, not Ready in the swarm yet")
	})
	if b.exited() {
		t.Fatalf("replace-node ended before the replacement was in the swarm:\n%s", b.res)
	}
	putStatus(t, c, bucket, statusNode(manager, "manager", "active", 0), statusNode(replacement, "worker", "active", 0))
	r := b.wait()
	if r.code != 0 {
		t.Fatalf("replace-node: %s", r)
	}
	if !strings.Contains(r.stderr, "TerminateInstanceInAutoScalingGroup") {
		t.Errorf("replace-node called no TerminateInstanceInAutoScalingGroup:\n%s", r.stderr)
	}
	got := decode[struct{ Cluster, Group, InstanceID, AutoScalingGroup, Replacement, NodeID string }](t, r)
	if got.Cluster != "core" || got.Group != "g" || got.InstanceID != old || got.AutoScalingGroup != asg || got.Replacement != replacement ||
		got.NodeID != statusNode(replacement, "worker", "", 0)["nodeId"] {
		t.Errorf("replace-node -o json: %s", r.stdout)
	}

	// The only manager: the control plane goes down for a while, which
	// needs --yes without a terminal; nothing is terminated otherwise.
	r = clusterctl(t, "replace-node", manager)
	if r.code != 2 || !strings.Contains(r.stderr, "is the only manager: the control plane is down until its replacement restores the swarm") ||
		!strings.Contains(r.stderr, "pass --yes") {
		t.Errorf("replace-node of the only manager without --yes:\n%s", r)
	}
	if st := instanceState(t, c, manager); st != "running" {
		t.Errorf("the manager is %s", st)
	}

	// Three managers, one of the others unreachable: replacing a reachable
	// one would cost the quorum.
	must(t, "create-core", "ha", "--managers", "3", "-q")
	var ms []string
	for _, n := range decode[[]node](t, must(t, "list-nodes", "-j", "ha", "-n", "control", "-o", "json")) {
		ms = append(ms, n.InstanceID)
	}
	haBucket := outputs(describeStack(t, c, "ha"))["BucketName"]
	down := statusNode(ms[1], "manager", "active", 0)
	down["managerStatus"], down["state"] = "unreachable", "down"
	putStatusOf(t, c, "ha", haBucket, statusNode(ms[0], "manager", "active", 0), down, statusNode(ms[2], "manager", "active", 0))
	r = clusterctl(t, "replace-node", ms[2], "--yes")
	if r.code != 2 || !strings.Contains(r.stderr, "fewer than the 2 its quorum needs (unreachable: "+ms[1]+"); replace the unreachable first") {
		t.Errorf("replace-node losing the quorum:\n%s", r)
	}
	if st := instanceState(t, c, ms[2]); st != "running" {
		t.Errorf("the manager is %s", st)
	}
	if is := groupMembers(t, c, asgOf(t, c, ms[0])); len(is) != 3 {
		t.Errorf("the managers' group has %v", is)
	}
}

// A snapshot naming a second reachable manager that is no instance of the
// cluster is not trusted: the only real manager is still the only one, and
// its replacement needs --yes; nothing is terminated without it.
func TestReplaceNodeCountsRealManagersOnly(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t)
	manager := instancesOf(t, "control")[0]
	stranger := statusNode("i-0fedcba9876543210", "manager", "drain", 0)
	putStatus(t, c, bucket, statusNode(manager, "manager", "drain", 0), stranger)

	r := clusterctl(t, "replace-node", manager, "--timeout", "30s")
	if r.code != 2 || !strings.Contains(r.stderr, manager+" is the only manager") || !strings.Contains(r.stderr, "pass --yes") {
		t.Errorf("replace-node of the only real manager, a stranger in the snapshot:\n%s", r)
	}
	if !strings.Contains(r.stderr, "i-0fedcba9876543210") {
		t.Errorf("replace-node does not name the manager it did not count:\n%s", r)
	}
	if st := instanceState(t, c, manager); st != "running" {
		t.Errorf("the only manager is %s", st)
	}
}

// asgOf is the Auto Scaling group of an instance.
func asgOf(t *testing.T, c clients, instance string) string {
	t.Helper()
	out, err := c.asg.DescribeAutoScalingInstances(context.Background(), &autoscaling.DescribeAutoScalingInstancesInput{InstanceIds: []string{instance}})
	if err != nil || len(out.AutoScalingInstances) != 1 {
		t.Fatalf("the auto scaling group of %s: %v", instance, err)
	}
	return aws.ToString(out.AutoScalingInstances[0].AutoScalingGroupName)
}

func describeGroup(t *testing.T, c clients, asg string) *autoscaling.DescribeAutoScalingGroupsOutput {
	t.Helper()
	out, err := c.asg.DescribeAutoScalingGroups(context.Background(), &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{asg}})
	if err != nil || len(out.AutoScalingGroups) != 1 {
		t.Fatalf("auto scaling group %s: %v", asg, err)
	}
	return out
}

func desiredOf(t *testing.T, c clients, asg string) int32 {
	t.Helper()
	return aws.ToInt32(describeGroup(t, c, asg).AutoScalingGroups[0].DesiredCapacity)
}

// groupMembers lists the instances of an Auto Scaling group.
func groupMembers(t *testing.T, c clients, asg string) []string {
	t.Helper()
	var ids []string
	for _, i := range describeGroup(t, c, asg).AutoScalingGroups[0].Instances {
		ids = append(ids, aws.ToString(i.InstanceId))
	}
	return ids
}
