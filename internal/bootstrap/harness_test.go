package bootstrap

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/motoserver"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/testlanes"
)

const (
	region  = "us-east-1"
	account = "123456789012" // moto's
	version = "1.2.3"
)

var (
	// lab is the test network: a bridge, moto on it and the AWS endpoint
	// the nodes use. Every test deploys its own cluster into the lab's VPC.
	lab *enginetest.Lab
	// endpoint is moto's URL, for the test's own SDK clients.
	endpoint         string
	vpcID, subnetID  string
	availabilityZone string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if err := setLanes(); err != nil {
		fmt.Fprintln(os.Stderr, "bootstrap:", err)
		return 2
	}
	// Never a silent skip: without root, docker.io, busybox-static, ... the
	// nodes cannot boot. moto's output is not kept: no test reads it (the
	// lab's endpoint records every call the nodes make).
	var err error
	lab, err = enginetest.Start(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bootstrap: FAIL:", err)
		return 1
	}
	defer lab.Close()
	// An interrupted run still removes its engines and network.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		lab.Close()
		os.Exit(130)
	}()
	endpoint = lab.MotoURL
	if err := makeVPC(); err != nil {
		fmt.Fprintln(os.Stderr, "bootstrap: FAIL:", err)
		return 1
	}
	return gate.Checked(os.Stderr, m.Run(), testlanes.WholeRun())
}

func awsConfig() aws.Config {
	cfg, err := motoserver.Config(context.Background(), endpoint)
	if err != nil {
		panic(err) // static configuration: cannot fail
	}
	return cfg
}

// makeVPC creates the VPC and subnet of every test cluster, with the
// bridge's range, so each instance's private IP is an address of the
// bridge.
func makeVPC() error {
	ctx := context.Background()
	c := ec2.NewFromConfig(awsConfig())
	vpc, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String(lab.Subnet.String())})
	if err != nil {
		return fmt.Errorf("creating the VPC: %w", err)
	}
	vpcID = aws.ToString(vpc.Vpc.VpcId)
	sub, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String(lab.Subnet.String()), AvailabilityZone: aws.String(region + "a")})
	if err != nil {
		return fmt.Errorf("creating the subnet: %w", err)
	}
	subnetID, availabilityZone = aws.ToString(sub.Subnet.SubnetId), aws.ToString(sub.Subnet.AvailabilityZone)
	return nil
}

type clients struct {
	cfn *cloudformation.Client
	ec2 *ec2.Client
	asg *autoscaling.Client
	s3  *s3.Client
	sqs *sqs.Client
}

func newClients() clients {
	cfg := awsConfig()
	return clients{
		cfn: cloudformation.NewFromConfig(cfg),
		ec2: ec2.NewFromConfig(cfg),
		asg: autoscaling.NewFromConfig(cfg),
		s3: s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.UsePathStyle = true
			o.DisableLogOutputChecksumValidationSkipped = true
		}),
		sqs: sqs.NewFromConfig(cfg),
	}
}

// testCluster is a core deployed on moto from the rendered template.
type testCluster struct {
	name    string
	c       clients
	outputs map[string]string
	join    render.Join
	bucket  string
	queue   string // the lifecycle queue's URL
	// managerGroup is the managers' Auto Scaling group; managers its
	// instances when the stack was created, by id; control the first.
	managerGroup string
	managers     []instance
	control      instance
	// controlUserData is the managers' user data as EC2 hands it to an
	// instance: what moto's CloudFormation resolved into the launch
	// template.
	controlUserData string
}

// instance is one EC2 instance of the cluster in moto.
type instance struct {
	id, ip, instanceType string
	lifecycle            string // what its metadata says: spot, or on-demand when empty
}

// deployCore creates the core stack of cluster name with one manager on
// moto and returns it.
func deployCore(t *testing.T, name string) *testCluster {
	t.Helper()
	return deployManagers(t, name, 1)
}

// deployManagers creates the core stack of cluster name with n managers
// on moto and returns it.
func deployManagers(t *testing.T, name string, n int) *testCluster {
	t.Helper()
	return deployCoreSpec(t, name, spec.Core{Managers: &n})
}

// deployCoreSpec creates the core stack of cluster name with the settings
// of core, in the lab's VPC and subnet, on moto and returns it.
func deployCoreSpec(t *testing.T, name string, core spec.Core) *testCluster {
	t.Helper()
	core.InstanceType, core.VpcID, core.SubnetIDs = "t3.medium", vpcID, []string{subnetID}
	if core.Operators == nil {
		// As create-core makes them: the creator, moto's IAM user.
		core.Operators = []string{"arn:aws:iam::123456789012:user/moto"}
	}
	n := core.ManagerCount()
	r, err := render.Core(name, core, testBuild(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newClients()
	outputs := createStack(t, c, r)
	tc := &testCluster{name: name, c: c, outputs: outputs, bucket: outputs[names.OutputBucketName], managerGroup: outputs[names.OutputManagerGroupName]}
	if tc.join, err = render.JoinFromOutputs(outputs); err != nil {
		t.Fatal(err)
	}
	tc.managers = groupInstances(t, c, tc.managerGroup)
	if len(tc.managers) != n {
		t.Fatalf("%d managers, want %d", len(tc.managers), n)
	}
	tc.control = tc.managers[0]
	tc.controlUserData = launchTemplateUserData(t, c, r.StackName, names.ResourceControlLaunchTemplate)
	tc.queue = stackResources(t, c, name)["LifecycleQueue"]
	// As create-core does once the bucket exists: the nodes' loader
	// fetches the agent from there.
	tc.uploadAgent(t)
	return tc
}

// autoScalingGroup describes the Auto Scaling group named asg.
func autoScalingGroup(t *testing.T, c clients, asg string) asgtypes.AutoScalingGroup {
	t.Helper()
	out, err := c.asg.DescribeAutoScalingGroups(context.Background(), &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{asg}})
	if err != nil || len(out.AutoScalingGroups) != 1 {
		t.Fatalf("auto scaling group %s: %v", asg, err)
	}
	return out.AutoScalingGroups[0]
}

// groupInstances lists the instances of an Auto Scaling group, by id.
func groupInstances(t *testing.T, c clients, asg string) []instance {
	t.Helper()
	var is []instance
	for _, i := range autoScalingGroup(t, c, asg).Instances {
		is = append(is, describeInstance(t, c, aws.ToString(i.InstanceId)))
	}
	slices.SortFunc(is, func(a, b instance) int { return strings.Compare(a.id, b.id) })
	return is
}

// createStack creates a rendered stack on moto, which does it at once, and
// returns its outputs.
func createStack(t *testing.T, c clients, r *render.Rendered) map[string]string {
	t.Helper()
	ctx := context.Background()
	in := &cloudformation.CreateStackInput{
		StackName:    aws.String(r.StackName),
		TemplateBody: aws.String(string(r.Template)),
	}
	for _, k := range slices.Sorted(maps.Keys(r.Parameters)) {
		in.Parameters = append(in.Parameters, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(r.Parameters[k])})
	}
	for _, k := range slices.Sorted(maps.Keys(r.Tags)) {
		in.Tags = append(in.Tags, cfntypes.Tag{Key: aws.String(k), Value: aws.String(r.Tags[k])})
	}
	for _, cp := range r.Capabilities {
		in.Capabilities = append(in.Capabilities, cfntypes.Capability(cp))
	}
	if _, err := c.cfn.CreateStack(ctx, in); err != nil {
		t.Fatalf("creating stack %s: %v", r.StackName, err)
	}
	out, err := c.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(r.StackName)})
	if err != nil {
		t.Fatal(err)
	}
	st := out.Stacks[0]
	if st.StackStatus != cfntypes.StackStatusCreateComplete {
		t.Fatalf("stack %s: %s %s", r.StackName, st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	outputs := map[string]string{}
	for _, o := range st.Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return outputs
}

func describeInstance(t *testing.T, c clients, id string) instance {
	t.Helper()
	out, err := c.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(out.Reservations) == 0 || len(out.Reservations[0].Instances) == 0 {
		t.Fatalf("instance %s: %v", id, err)
	}
	i := out.Reservations[0].Instances[0]
	return instance{id: id, ip: aws.ToString(i.PrivateIpAddress), instanceType: string(i.InstanceType)}
}

// stackResources maps a stack's logical resource ids to physical ids.
func stackResources(t *testing.T, c clients, stack string) map[string]string {
	t.Helper()
	out, err := c.cfn.DescribeStackResources(context.Background(), &cloudformation.DescribeStackResourcesInput{StackName: aws.String(stack)})
	if err != nil {
		t.Fatalf("resources of %s: %v", stack, err)
	}
	res := map[string]string{}
	for _, r := range out.StackResources {
		res[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
	}
	return res
}

// launchTemplateUserData returns the user data of the latest version of a
// stack's launch template, decoded.
func launchTemplateUserData(t *testing.T, c clients, stack, logicalID string) string {
	t.Helper()
	ctx := context.Background()
	out, err := c.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
		LaunchTemplateId: aws.String(stackResources(t, c, stack)[logicalID]), Versions: []string{"$Latest"},
	})
	if err != nil || len(out.LaunchTemplateVersions) == 0 {
		t.Fatalf("launch template %s of %s: %v", logicalID, stack, err)
	}
	ud, err := base64.StdEncoding.DecodeString(aws.ToString(out.LaunchTemplateVersions[0].LaunchTemplateData.UserData))
	if err != nil {
		t.Fatal(err)
	}
	return string(ud)
}

// testGroup is an agent group deployed on moto into a test cluster.
type testGroup struct {
	name, stack, asg string
	rendered         *render.Rendered
	outputs          map[string]string // the stack's
	userData         string
	instances        []instance
}

// deployGroup renders group name with count m5.large nodes joined to the
// cluster, uploads its node configuration as clusterctl does, and creates
// its stack.
func (tc *testCluster) deployGroup(t *testing.T, name string, count int, labels spec.Labels) *testGroup {
	t.Helper()
	g := tc.deployGroupOf(t, spec.Group{Name: name, InstanceType: spec.InstanceTypes{"m5.large"}, Count: &count, Labels: labels})
	if len(g.instances) != count {
		t.Fatalf("group %s has %d instances, want %d", name, len(g.instances), count)
	}
	return g
}

// deployGroupOf is deployGroup for a group of any settings.
func (tc *testCluster) deployGroupOf(t *testing.T, g spec.Group) *testGroup {
	t.Helper()
	r, err := render.Group(tc.name, g, tc.join, testBuild(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.UploadArtifacts(context.Background(), tc.c.s3, tc.bucket, r.Artifacts); err != nil {
		t.Fatal(err)
	}
	outputs := createStack(t, tc.c, r)
	out := &testGroup{name: g.Name, stack: r.StackName, asg: outputs[names.OutputAutoScalingGroupName], rendered: r, outputs: outputs,
		userData: launchTemplateUserData(t, tc.c, r.StackName, names.ResourceLaunchTemplate)}
	out.instances = groupInstances(t, tc.c, out.asg)
	return out
}

// Timing of the node services for tests (seconds); nothing sets these on
// a node. Each AWS CLI call costs a good part of a second of CPU: the
// loops poll no faster than the tests need.
var fastNodes = []string{
	// agents
	"CLUSTERCTL_JOIN_TIMEOUT=120", "CLUSTERCTL_RETRY_MIN=1", "CLUSTERCTL_RETRY_MAX=3",
	"CLUSTERCTL_CHECK_INTERVAL=5", "CLUSTERCTL_REJOIN_AFTER=20",
	// housekeeping
	"CLUSTERCTL_POLL_WAIT=5", "CLUSTERCTL_IDLE=3", "CLUSTERCTL_STATUS_INTERVAL=5",
	"CLUSTERCTL_DEAD_NODE_INTERVAL=3", "CLUSTERCTL_DEAD_NODE_GRACE=3",
	"CLUSTERCTL_DRAIN_POLL=1", "CLUSTERCTL_HEARTBEAT_INTERVAL=3", "CLUSTERCTL_NOTICE_VISIBILITY=60",
	"CLUSTERCTL_CONFIRM_WAIT=20", "CLUSTERCTL_INTERRUPTION_INTERVAL=2",
}

// labNode makes the lab node of an instance.
func labNode(t *testing.T, name string, i instance, inGroup bool, env ...string) *enginetest.Node {
	t.Helper()
	return lab.NewNode(t, nodeSpec(name, i, inGroup, env...))
}

// nodeSpec is the lab node spec of an instance.
func nodeSpec(name string, i instance, inGroup bool, env ...string) enginetest.NodeSpec {
	spec := enginetest.NodeSpec{
		Name: name, InstanceID: i.id, IP: netip.MustParseAddr(i.ip), InstanceType: i.instanceType, Zone: availabilityZone, Lifecycle: i.lifecycle,
		Env: append(append([]string(nil), fastNodes...), env...),
	}
	if inGroup {
		// What EC2 serves for an instance of an Auto Scaling group.
		spec.Metadata = map[string]string{"autoscaling/target-lifecycle-state": "InService"}
	}
	return spec
}

// boot starts a node's user data.
func boot(t *testing.T, n *enginetest.Node, userData string) *enginetest.Run {
	t.Helper()
	r, err := n.Boot("user-data", userData)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// eventually polls f every 250 ms until it returns true, and fails the test
// with f's last word when that takes longer than within. A wait of more
// than a few seconds is logged with its length (go test -v): where a
// scenario spends its time (docs/benchmarks.md, "CI time").
func eventually(t *testing.T, within time.Duration, what string, f func() (bool, string)) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for {
		ok, detail := f()
		if ok {
			if d := time.Since(start); d > 5*time.Second {
				t.Logf("waited %v: %s", d.Round(time.Second), what)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, within, detail)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// signalled waits until the node's cfn-signal stand-in has recorded a call
// and returns the calls.
func signalled(t *testing.T, n *enginetest.Node, within time.Duration) []string {
	t.Helper()
	eventually(t, within, n.Spec.Name+" signals CloudFormation", func() (bool, string) {
		return len(n.Calls("cfn-signal")) > 0, "no signal yet"
	})
	return n.Calls("cfn-signal")
}

// swarmNode is what `docker node inspect` says about a node.
type swarmNode struct {
	ID   string
	Spec struct {
		Role, Availability string
		Labels             map[string]string // node labels: only managers set them
	}
	Status struct {
		State, Addr string
	}
	ManagerStatus *struct {
		Leader       bool
		Reachability string
	}
	Description struct {
		Engine struct {
			Labels map[string]string
		}
	}
}

// swarmNodes lists the swarm's nodes as the manager m sees them.
func swarmNodes(t *testing.T, m *enginetest.Node) []swarmNode {
	t.Helper()
	nodes, err := trySwarmNodes(m)
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// trySwarmNodes asks the engine's API, not the docker CLI: the scenarios
// poll it several times a second, and a CLI process costs about 0.1 s of
// CPU. The list is what `docker node inspect` prints of every node, read
// at once.
func trySwarmNodes(m *enginetest.Node) ([]swarmNode, error) {
	var nodes []swarmNode
	err := engineGet(m, "/nodes", &nodes)
	return nodes, err
}

// engineGet reads path of m's engine API into v, waiting while the engine
// does not answer, as docker does.
func engineGet(m *enginetest.Node, path string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return answered(ctx, func() error { return m.EngineGet(ctx, path, v) })
}

// byInstance finds the swarm node of an instance by its engine label.
func byInstance(nodes []swarmNode, id string) *swarmNode {
	for i := range nodes {
		if nodes[i].Description.Engine.Labels[names.EngineLabelInstanceID] == id {
			return &nodes[i]
		}
	}
	return nil
}

func dockerOn(t *testing.T, n *enginetest.Node, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := docker(ctx, n, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// docker runs docker on a node, waiting while its engine does not answer.
func docker(ctx context.Context, n *enginetest.Node, args ...string) (out string, err error) {
	err = answered(ctx, func() error {
		out, err = n.Docker(ctx, args...)
		return err
	})
	return out, err
}

// answered asks again, a second apart, while the engine asked does not
// answer, until ctx is done: a lone manager's engine stops for a moment
// while the swarm is backed up, and a question then waits for it, as an
// operator's would.
func answered(ctx context.Context, ask func() error) error {
	for {
		err := ask()
		if !errors.Is(err, enginetest.ErrEngineUnreachable) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Second)
	}
}

// task is one task of a service as `docker service ps` shows it.
type task struct {
	ID, NodeID, DesiredState, State string
}

// serviceTasks returns the tasks of a service, as the manager m sees them.
func serviceTasks(t *testing.T, m *enginetest.Node, service string) []task {
	t.Helper()
	tasks, err := tryServiceTasks(m, service)
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// tryServiceTasks reads every task of the service, as `docker service ps`
// lists them (those shut down too), from the engine's API.
func tryServiceTasks(m *enginetest.Node, service string) ([]task, error) {
	filter, err := json.Marshal(map[string][]string{"service": {service}})
	if err != nil {
		return nil, err
	}
	var raw []struct {
		ID           string
		NodeID       string
		DesiredState string
		Status       struct{ State string }
	}
	if err := engineGet(m, "/tasks?filters="+url.QueryEscape(string(filter)), &raw); err != nil {
		return nil, err
	}
	var tasks []task
	for _, r := range raw {
		tasks = append(tasks, task{ID: r.ID, NodeID: r.NodeID, DesiredState: r.DesiredState, State: r.Status.State})
	}
	return tasks, nil
}

// runningOn counts a service's running tasks per node.
func runningOn(tasks []task) map[string]int {
	out := map[string]int{}
	for _, tk := range tasks {
		if tk.State == "running" && tk.DesiredState == "running" {
			out[tk.NodeID]++
		}
	}
	return out
}

// createService creates a replicated service of the test image on the
// swarm, with host networking (no IPVS here for a virtual IP).
func createService(t *testing.T, m *enginetest.Node, name string, replicas int, extra ...string) {
	t.Helper()
	args := []string{"service", "create", "--detach", "--name", name, "--replicas", fmt.Sprint(replicas),
		"--no-resolve-image", "--network", "host"}
	args = append(args, extra...)
	args = append(args, enginetest.Image, "sleep", "3600")
	dockerOn(t, m, args...)
}

// bootControl starts the first manager and waits for its signal, which
// must be a success.
func (tc *testCluster) bootControl(t *testing.T, env ...string) *enginetest.Node {
	t.Helper()
	n := tc.bootManager(t, tc.control, env...)
	tc.readyManager(t, n)
	return n
}

// bootManager starts the manager of instance i.
func (tc *testCluster) bootManager(t *testing.T, i instance, env ...string) *enginetest.Node {
	t.Helper()
	n := labNode(t, "manager-"+strings.TrimPrefix(i.id, "i-")[:6], i, true, env...)
	boot(t, n, tc.controlUserData)
	return n
}

// readyManager waits for a manager's signal, which must be a success.
func (tc *testCluster) readyManager(t *testing.T, n *enginetest.Node) {
	t.Helper()
	want := fmt.Sprintf("--exit-code 0 --reason control\\ node\\ ready --stack %s --resource %s --region %s", tc.name, names.ResourceManagerGroup, region)
	if calls := signalled(t, n, 5*time.Minute); !slices.Equal(calls, []string{want}) {
		t.Fatalf("%s signals %q, want %q", n.Spec.Name, calls, want)
	}
}

// bootAgent starts the agent of the group's instance i.
func (g *testGroup) bootAgent(t *testing.T, i int, env ...string) *enginetest.Node {
	t.Helper()
	return g.bootAgentAs(t, g.agentSpec(i, env...))
}

// agentSpec is the lab node spec of the group's instance i, for a
// scenario that changes it before bootAgentAs.
func (g *testGroup) agentSpec(i int, env ...string) enginetest.NodeSpec {
	return nodeSpec(fmt.Sprintf("%s-%d", g.name, i), g.instances[i], true, env...)
}

// bootAgentAs starts an agent of the group on the lab node of spec.
func (g *testGroup) bootAgentAs(t *testing.T, spec enginetest.NodeSpec) *enginetest.Node {
	t.Helper()
	n := lab.NewNode(t, spec)
	boot(t, n, g.userData)
	return n
}

// readyAgent waits for an agent's signal, which must be a success.
func (g *testGroup) readyAgent(t *testing.T, n *enginetest.Node) {
	t.Helper()
	want := fmt.Sprintf("--exit-code 0 --reason agent\\ ready --stack %s --resource AutoScalingGroup --region %s", g.stack, region)
	if calls := signalled(t, n, 4*time.Minute); !slices.Equal(calls, []string{want}) {
		t.Fatalf("%s signals %q, want %q", n.Spec.Name, calls, want)
	}
}

// startCluster deploys a core and a group of count instances, boots the
// control node and the first agents instances, and waits until they are
// all Ready in the swarm.
func startCluster(t *testing.T, name string, count, agents int) (*testCluster, *testGroup, *enginetest.Node, []*enginetest.Node) {
	t.Helper()
	tc := deployCore(t, name)
	g := tc.deployGroup(t, "g", count, spec.Labels{"role": "worker"})
	control := tc.bootControl(t)
	var nodes []*enginetest.Node
	for i := 0; i < agents; i++ {
		nodes = append(nodes, g.bootAgent(t, i))
	}
	for _, n := range nodes {
		g.readyAgent(t, n)
	}
	eventually(t, 3*time.Minute, "every node Ready in the swarm", func() (bool, string) {
		nodes, err := trySwarmNodes(control)
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, n := range nodes {
			if n.Status.State == "ready" {
				ready++
			}
		}
		return ready == agents+1, fmt.Sprintf("%d of %d Ready", ready, agents+1)
	})
	return tc, g, control, nodes
}

// nodeOf returns the swarm node id of an instance, as the manager sees it.
func nodeOf(t *testing.T, m *enginetest.Node, instanceID string) string {
	t.Helper()
	n := byInstance(swarmNodes(t, m), instanceID)
	if n == nil {
		t.Fatalf("instance %s has no swarm node", instanceID)
	}
	return n.ID
}

// terminate plays Auto Scaling starting to terminate an instance of a
// group with the cluster's hook: the instance's target lifecycle state
// becomes Terminated (n may be nil for an instance that never booted), the
// instance waits in the hook, and the notice reaches the core's queue as
// EventBridge delivers it. It returns the lifecycle action's token.
func (tc *testCluster) terminate(t *testing.T, asg, instanceID string, n *enginetest.Node) string {
	t.Helper()
	token := lab.AWS.BeginLifecycleAction(asg, names.LifecycleHook(tc.name), instanceID)
	if n != nil {
		n.SetMetadata("autoscaling/target-lifecycle-state", "Terminated")
	}
	act, _ := lab.AWS.Action(token)
	tc.putNotice(t, enginetest.TerminationNotice(account, region, act))
	return token
}

func (tc *testCluster) putNotice(t *testing.T, body string) {
	t.Helper()
	if tc.queue == "" {
		t.Fatal("the core has no lifecycle queue")
	}
	if _, err := tc.c.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(tc.queue), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
}

// queueEmpty says whether the core's queue holds no notice, visible or not.
func (tc *testCluster) queueEmpty(t *testing.T) (bool, string) {
	t.Helper()
	out, err := tc.c.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(tc.queue), AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := out.Attributes
	return a["ApproximateNumberOfMessages"] == "0" && a["ApproximateNumberOfMessagesNotVisible"] == "0",
		fmt.Sprintf("%s visible, %s being handled", a["ApproximateNumberOfMessages"], a["ApproximateNumberOfMessagesNotVisible"])
}

// completed waits until the lifecycle action with token is completed and
// returns it.
func completed(t *testing.T, token string, within time.Duration) enginetest.LifecycleAction {
	t.Helper()
	var act enginetest.LifecycleAction
	eventually(t, within, "the lifecycle action is completed", func() (bool, string) {
		act, _ = lab.AWS.Action(token)
		return act.Result != "", "still waiting in the hook"
	})
	return act
}

// terminateInstance plays EC2 terminating an instance after its lifecycle
// action: the node goes down at once, and moto records the instance as
// terminated.
func (tc *testCluster) terminateInstance(t *testing.T, n *enginetest.Node) {
	t.Helper()
	n.PowerOff()
	if _, err := tc.c.ec2.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{n.Spec.InstanceID}}); err != nil {
		t.Fatal(err)
	}
}

// nodeEvents records the swarm's node events as the manager m reports
// them, from now until the test ends.
type nodeEvents struct {
	mu     sync.Mutex
	events []nodeEvent
}

type nodeEvent struct {
	Action string
	Actor  struct {
		ID         string
		Attributes map[string]string
	}
}

func watchNodeEvents(t *testing.T, m *enginetest.Node) *nodeEvents {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := m.DockerCommand(ctx, "events", "--filter", "type=node", "--format", "{{json .}}")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ev := &nodeEvents{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		dec := json.NewDecoder(out)
		for {
			var e nodeEvent
			if dec.Decode(&e) != nil {
				return
			}
			ev.mu.Lock()
			ev.events = append(ev.events, e)
			ev.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); cmd.Wait(); <-done })
	return ev
}

// of returns the events of one node: "drain" for an update to drain,
// "update" for another update, "remove".
func (ev *nodeEvents) of(id string) []string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var out []string
	for _, e := range ev.events {
		if e.Actor.ID != id {
			continue
		}
		switch {
		case e.Action == "update" && e.Actor.Attributes["availability.new"] == "drain":
			out = append(out, "drain")
		default:
			out = append(out, e.Action)
		}
	}
	return out
}

// getObject reads an object of the cluster bucket.
// hasObject tells whether key is in the cluster's bucket yet.
func (tc *testCluster) hasObject(key string) bool {
	_, err := tc.c.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(key)})
	return err == nil
}

func (tc *testCluster) getObject(t *testing.T, key string) ([]byte, string) {
	t.Helper()
	out, err := tc.c.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("reading s3://%s/%s: %v", tc.bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, string(out.ServerSideEncryption)
}
