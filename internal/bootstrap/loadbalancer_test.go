package bootstrap

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// A group with a load balancer on real engines: a service published on the
// node port (host networking) answers on every node's address, as the load
// balancer's health checks and traffic reach it; a node terminated through
// the lifecycle hook is taken out of the target groups first — the test
// plays Auto Scaling: it deregisters the instance, waits the deregistration
// delay, and only then puts the instance in the hook — so the drain starts
// on a node the load balancer no longer sends to, while the other node
// keeps answering.
func TestLoadBalancedNode(t *testing.T) {
	scenario(t)
	const nodePort = 30080
	tc := deployCore(t, "lb")
	g := tc.deployLoadBalanced(t, spec.Group{Name: "web", InstanceType: spec.InstanceTypes{"m5.large"}, Count: aws.Int(2),
		Publish: spec.Ports{"80:" + strconv.Itoa(nodePort)}, DeregistrationDelay: aws.Int(2)})
	elb := elbv2.NewFromConfig(awsConfig())
	tgs := autoScalingGroup(t, tc.c, g.asg).TargetGroupARNs
	if len(tgs) != 1 {
		t.Fatalf("the group's Auto Scaling group is attached to %v, want one target group", tgs)
	}
	for _, i := range g.instances {
		if !slices.Contains(targets(t, elb, tgs[0]), i.id) {
			t.Fatalf("instance %s is not a target of %s", i.id, tgs[0])
		}
	}

	control := tc.bootControl(t)
	agents := []*enginetest.Node{g.bootAgent(t, 0), g.bootAgent(t, 1)}
	for _, n := range agents {
		g.readyAgent(t, n)
	}
	dockerOn(t, control, "service", "create", "--detach", "--name", "web", "--mode", "global", "--no-resolve-image", "--network", "host",
		"--constraint", "engine.labels.clusterctl.group==web", "--stop-grace-period", "2s", enginetest.Image,
		"sh", "-c", fmt.Sprintf("echo web > /tmp/index.html && exec httpd -f -p %d -h /tmp", nodePort))
	for _, i := range g.instances {
		eventually(t, 3*time.Minute, "the service answers on "+i.ip, func() (bool, string) {
			body, err := get(i.ip, nodePort)
			return body == "web\n", fmt.Sprintf("%q, %v", body, err)
		})
	}

	// Auto Scaling terminates the first node: it deregisters it from the
	// target groups and waits the deregistration delay before the
	// lifecycle hook.
	leaving, staying := g.instances[0], g.instances[1]
	node := nodeOf(t, control, leaving.id)
	events := watchNodeEvents(t, control)
	if _, err := elb.DeregisterTargets(context.Background(), &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(tgs[0]),
		Targets: []elbtypes.TargetDescription{{Id: aws.String(leaving.id), Port: aws.Int32(nodePort)}}}); err != nil {
		t.Fatal(err)
	}
	delay, err := strconv.Atoi(g.rendered.Parameters[names.ParamDeregistrationDelay])
	if err != nil || delay != 2 {
		t.Fatalf("deregistration delay %q", g.rendered.Parameters[names.ParamDeregistrationDelay])
	}
	time.Sleep(time.Duration(delay) * time.Second)
	deregistered := slices.Clone(events.of(node))
	if slices.Contains(targets(t, elb, tgs[0]), leaving.id) || len(deregistered) != 0 {
		t.Fatalf("before the hook: targets %v, the node's events %v", targets(t, elb, tgs[0]), deregistered)
	}
	token := tc.terminate(t, g.asg, leaving.id, agents[0])
	eventually(t, 3*time.Minute, "the node drains", func() (bool, string) {
		n := byInstance(swarmNodes(t, control), leaving.id)
		return n == nil || n.Spec.Availability == "drain", fmt.Sprintf("%+v", n)
	})
	// Draining, it is no target; the other node answers, and is one.
	if got := targets(t, elb, tgs[0]); !slices.Equal(got, []string{staying.id}) {
		t.Errorf("targets while the node drains: %v, want only %s", got, staying.id)
	}
	if body, err := get(staying.ip, nodePort); body != "web\n" {
		t.Errorf("the staying node while the other drains: %q, %v", body, err)
	}
	if act := completed(t, token, 4*time.Minute); act.Result != "CONTINUE" {
		t.Errorf("lifecycle action %+v", act)
	}
	eventually(t, 2*time.Minute, "the node's events", func() (bool, string) {
		got := events.of(node)
		d, r := slices.Index(got, "drain"), slices.Index(got, "remove")
		return d >= 0 && r > d, fmt.Sprintf("events of %s: %v, want a drain, then the removal", node, got)
	})
	if body, err := get(staying.ip, nodePort); body != "web\n" {
		t.Errorf("the staying node after the other left: %q, %v", body, err)
	}
}

// deployLoadBalanced is deployGroupOf for a group with a load balancer.
func (tc *testCluster) deployLoadBalanced(t *testing.T, g spec.Group) *testGroup {
	t.Helper()
	tg := tc.deployGroupOf(t, g)
	if len(tg.instances) != g.Desired() || tg.outputs[names.OutputLoadBalancerDNSName] == "" {
		t.Fatalf("group %s: %d instances, outputs %v", g.Name, len(tg.instances), tg.outputs)
	}
	return tg
}

// targets are the instances registered with a target group, sorted.
func targets(t *testing.T, elb *elbv2.Client, tg string) []string {
	t.Helper()
	out, err := elb.DescribeTargetHealth(context.Background(), &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(tg)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range out.TargetHealthDescriptions {
		ids = append(ids, aws.ToString(d.Target.Id))
	}
	slices.Sort(ids)
	return ids
}

// get fetches / from a node's address and port, as the load balancer
// forwards to it.
func get(ip string, port int) (string, error) {
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://" + ip + ":" + strconv.Itoa(port) + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return string(b), err
}
