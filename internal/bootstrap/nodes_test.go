package bootstrap

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/render"
)

const (
	controlIP = "10.0.1.10"
	agentIP   = "10.0.2.20"
)

// controlScript renders the core of cluster "prod" and returns its control
// node's user data as the instance would receive it.
func controlScript(t *testing.T, bucket string) string {
	t.Helper()
	r, err := render.Core("prod", spec.Core{
		InstanceType: "t3.medium", VpcID: "vpc-0123456789abcdef0", SubnetIDs: []string{"subnet-0000000000000000a"},
	}, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	return userData(t, r, "ControlLaunchTemplate", map[string]string{
		"AWS::StackName": "prod", "AWS::Region": region, "Bucket": bucket,
	})
}

// agentGroup renders group "g" of cluster "prod" joined to a core whose
// bucket is bucket, and uploads its node configuration there as clusterctl
// does before it creates the stack.
func agentGroup(t *testing.T, c *s3.Client, bucket string) (*render.Rendered, string) {
	t.Helper()
	two, one, three := 2, 1, 3
	r, err := render.Group("prod", spec.Group{
		Name: "g", InstanceType: spec.InstanceTypes{"m7g.large"}, Count: &two, Min: &one, Max: &three,
		Labels: spec.Labels{"role": "worker", "tier": "memory"},
	}, render.Join{
		ClusterName: "prod", BucketName: bucket, ControlPrivateIp: controlIP,
		ControlSecurityGroupId: "sg-0c0c0c0c0c0c0c0c0", AgentSecurityGroupId: "sg-0a0a0a0a0a0a0a0a0",
		AgentInstanceProfile: "arn:aws:iam::123456789012:instance-profile/prod-agents",
		VpcId:                "vpc-0123456789abcdef0", SubnetIds: []string{"subnet-0000000000000000a"},
		ContractVersion: render.ContractVersion,
	}, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.UploadArtifacts(context.Background(), c, bucket, r.Artifacts); err != nil {
		t.Fatal(err)
	}
	return r, userData(t, r, "LaunchTemplate", map[string]string{"AWS::StackName": r.StackName, "AWS::Region": region})
}

// runControl runs the control node's user data to its end: the swarm is
// initialised and its join material published in bucket.
func runControl(t *testing.T, sw *swarm, bucket string) {
	t.Helper()
	control := newNode(t, sw, controlIP, "t3.medium")
	if code, out := control.exec(t, control.script(t, "user-data", controlScript(t, bucket))); code != 0 {
		t.Fatalf("control script exited %d:\n%s", code, out)
	}
}

// fastAgent makes an agent wait seconds at most, polling every second.
func fastAgent(timeout string) []string {
	return []string{"CLUSTERCTL_JOIN_TIMEOUT=" + timeout, "CLUSTERCTL_RETRY_MIN=1", "CLUSTERCTL_RETRY_MAX=1"}
}

func wantCalls(t *testing.T, n *node, program string, want ...string) {
	t.Helper()
	if got := n.calls(t, program); !slices.Equal(got, want) {
		t.Errorf("%s calls:\n  %s\nwant:\n  %s", program, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestControlInitialisesAndPublishes(t *testing.T) {
	c := s3Client(t)
	bucket := newBucket(t, c)
	sw := newSwarm(t)
	n := newNode(t, sw, controlIP, "t3.medium")
	script := n.script(t, "user-data", controlScript(t, bucket))

	code, out := n.exec(t, script)
	if code != 0 {
		t.Fatalf("control script exited %d:\n%s", code, out)
	}
	wantCalls(t, n, "cfn-signal", "--exit-code 0 --reason control\\ node\\ ready --stack prod --resource ControlInstance --region us-east-1")
	wantCalls(t, n, "dnf", "install -y aws-cfn-bootstrap", "install -y docker")
	wantCalls(t, n, "systemctl", "enable --now docker")
	if init := n.calls(t, "docker"); !slices.Contains(init, "swarm init --advertise-addr "+controlIP) {
		t.Errorf("no swarm init on the private IP: %v", init)
	}
	if strings.Contains(out, sw.token) {
		t.Error("the join token is in the boot log")
	}
	if tokens, reads, bad := n.imds.counts(); tokens == 0 || reads < 2 || bad != 0 {
		t.Errorf("instance metadata: %d tokens, %d reads, %d refused requests", tokens, reads, bad)
	}

	// The join material, encrypted, where the agents read it.
	token, sse := getObject(t, c, bucket, names.SwarmPrefix+"/"+names.SwarmToken)
	if strings.TrimSpace(string(token)) != sw.token || sse != "AES256" {
		t.Errorf("published token %q (encryption %q), want the swarm's, AES256", token, sse)
	}
	ca, sse := getObject(t, c, bucket, names.SwarmPrefix+"/"+names.SwarmCA)
	if string(ca) != sw.ca || sse != "AES256" {
		t.Errorf("published CA certificate differs (encryption %q)", sse)
	}
	// Only what the control role may write (PutObject on the swarm prefix).
	for _, k := range listKeys(t, c, bucket) {
		if !strings.HasPrefix(k, names.SwarmPrefix+"/") {
			t.Errorf("control node wrote %s, outside %s/", k, names.SwarmPrefix)
		}
	}
	if got := n.file(t, "etc/docker/daemon.json"); !strings.Contains(got, `"clusterctl.group=control", "clusterctl.instance-type=t3.medium"`) {
		t.Errorf("control daemon.json:\n%s", got)
	}

	// A reboot runs the per-boot copy: no second init, the material is
	// published again, no second signal.
	perBoot := filepath.Join(n.root, "var/lib/cloud/scripts/per-boot/clusterctl-control.sh")
	if b, err := os.ReadFile(perBoot); err != nil || string(b) != controlScript(t, bucket) {
		t.Fatalf("per-boot copy missing or different: %v", err)
	}
	if _, err := c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(names.SwarmPrefix + "/" + names.SwarmToken)}); err != nil {
		t.Fatal(err)
	}
	if code, out := n.exec(t, perBoot); code != 0 {
		t.Fatalf("control script on reboot exited %d:\n%s", code, out)
	}
	inits := 0
	for _, call := range n.calls(t, "docker") {
		if strings.HasPrefix(call, "swarm init") {
			inits++
		}
	}
	if inits != 1 {
		t.Errorf("swarm init ran %d times", inits)
	}
	if token, _ := getObject(t, c, bucket, names.SwarmPrefix+"/"+names.SwarmToken); strings.TrimSpace(string(token)) != sw.token {
		t.Error("token not published again after the reboot")
	}
	if n := len(n.calls(t, "cfn-signal")); n != 1 {
		t.Errorf("%d signals after a reboot, want the first one only", n)
	}
}

func TestControlFailureSignals(t *testing.T) {
	c := s3Client(t)
	bucket := newBucket(t, c)
	sw := newSwarm(t)
	sw.write(t, "fail-init", "")
	n := newNode(t, sw, controlIP, "t3.medium")
	code, out := n.exec(t, n.script(t, "user-data", controlScript(t, bucket)))
	if code == 0 {
		t.Fatalf("control script succeeded although swarm init failed:\n%s", out)
	}
	wantCalls(t, n, "cfn-signal", "--exit-code 1 --reason clusterctl:\\ control\\ node\\ failed\\ while\\ initialising\\ the\\ swarm --stack prod --resource ControlInstance --region us-east-1")
	if keys := listKeys(t, c, bucket); len(keys) != 0 {
		t.Errorf("published %v after a failure", keys)
	}
}

// An agent that boots before the control node waits, then joins with the
// published token, on the control node's address, with its labels.
func TestAgentWaitsThenJoins(t *testing.T) {
	c := s3Client(t)
	bucket := newBucket(t, c)
	sw := newSwarm(t)
	r, ud := agentGroup(t, c, bucket)
	if _, sse := getObject(t, c, bucket, r.Artifacts[0].Key); sse != "AES256" {
		t.Errorf("node configuration stored with encryption %q", sse)
	}

	agent := newNode(t, sw, agentIP, "m7g.large", fastAgent("90")...)
	run := agent.start(t, agent.script(t, "user-data", ud))
	// The agent has looked for the join material at least once.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(run.out.String(), "worker-token: An error occurred (NoSuchKey)") {
		if time.Now().After(deadline) {
			t.Fatalf("agent never waited for the join material:\n%s", run.out)
		}
		time.Sleep(200 * time.Millisecond)
	}

	runControl(t, sw, bucket)
	code, out := run.wait(t)
	if code != 0 {
		t.Fatalf("agent exited %d:\n%s", code, out)
	}
	wantCalls(t, agent, "cfn-signal", "--exit-code 0 --reason agent\\ ready --stack prod-g --resource AutoScalingGroup --region us-east-1")
	wantCalls(t, agent, "dnf", "install -y aws-cfn-bootstrap", "install -y docker")
	joins := slices.DeleteFunc(agent.calls(t, "docker"), func(c string) bool { return !strings.HasPrefix(c, "swarm join") })
	if want := "swarm join --token " + sw.token + " --advertise-addr " + agentIP + " " + controlIP + ":2377"; !slices.Equal(joins, []string{want}) {
		t.Errorf("joins %q, want %q", joins, want)
	}
	want := `{
  "labels": [
    "role=worker",
    "tier=memory",
    "clusterctl.group=g",
    "clusterctl.instance-type=m7g.large",
    "clusterctl.lifecycle=on-demand",
    "clusterctl.zone=us-east-1a"
  ]
}
`
	if got := agent.file(t, "etc/docker/daemon.json"); got != want {
		t.Errorf("agent daemon.json:\n%s\nwant:\n%s", got, want)
	}
	if got := agent.file(t, "etc/clusterctl/swarm-ca.pem"); got != sw.ca {
		t.Error("agent did not keep the swarm CA certificate")
	}
	if env := agent.file(t, "etc/clusterctl/node.env"); !strings.Contains(env, "NODE_GROUP=g\n") || !strings.Contains(env, "CONTROL_SECURITY_GROUP_ID=sg-0c0c0c0c0c0c0c0c0\n") {
		t.Errorf("node.env:\n%s", env)
	}
	if strings.Contains(out, sw.token) {
		t.Error("the join token is in the boot log")
	}
	if _, _, bad := agent.imds.counts(); bad != 0 {
		t.Errorf("%d instance metadata requests without a session token", bad)
	}
}

func TestAgentGivesUpWithoutControl(t *testing.T) {
	c := s3Client(t)
	bucket := newBucket(t, c)
	sw := newSwarm(t)
	_, ud := agentGroup(t, c, bucket)
	agent := newNode(t, sw, agentIP, "m7g.large", fastAgent("3")...)
	start := time.Now()
	code, out := agent.exec(t, agent.script(t, "user-data", ud))
	if code == 0 {
		t.Fatalf("agent succeeded without a control node:\n%s", out)
	}
	if d := time.Since(start); d > 45*time.Second {
		t.Errorf("gave up after %v with a 3 s timeout", d)
	}
	if !strings.Contains(out, "could not join the swarm at "+controlIP+":2377 within 3 s") {
		t.Errorf("output does not say why:\n%s", out)
	}
	wantCalls(t, agent, "cfn-signal", "--exit-code 1 --reason clusterctl:\\ agent\\ failed\\ while\\ configuring\\ the\\ node --stack prod-g --resource AutoScalingGroup --region us-east-1")
	for _, call := range agent.calls(t, "docker") {
		if strings.HasPrefix(call, "swarm join") {
			t.Errorf("joined without join material: %s", call)
		}
	}
}

// Join material the swarm does not accept: a rotated token, or a CA
// certificate of another swarm. The agent retries until its timeout, then
// signals failure.
func TestAgentRefusesBadJoinMaterial(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tamper  func(t *testing.T, c *s3.Client, bucket string, sw *swarm)
		joins   bool
		message string
	}{
		{"rotated token", func(t *testing.T, c *s3.Client, bucket string, sw *swarm) {
			sw.write(t, "token", joinToken(t, sw.ca))
		}, true, "A valid join token is necessary"},
		{"other swarm's CA", func(t *testing.T, c *s3.Client, bucket string, sw *swarm) {
			other := newSwarm(t)
			if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(names.SwarmPrefix + "/" + names.SwarmCA), Body: strings.NewReader(other.ca)}); err != nil {
				t.Fatal(err)
			}
		}, false, "the published CA certificate does not match the join token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := s3Client(t)
			bucket := newBucket(t, c)
			sw := newSwarm(t)
			runControl(t, sw, bucket)
			tc.tamper(t, c, bucket, sw)
			_, ud := agentGroup(t, c, bucket)
			agent := newNode(t, sw, agentIP, "m7g.large", fastAgent("3")...)
			code, out := agent.exec(t, agent.script(t, "user-data", ud))
			if code == 0 || !strings.Contains(out, tc.message) {
				t.Fatalf("agent exited %d, want a failure saying %q:\n%s", code, tc.message, out)
			}
			if calls := agent.calls(t, "cfn-signal"); len(calls) != 1 || !strings.HasPrefix(calls[0], "--exit-code 1 ") {
				t.Errorf("signals %v, want one failure", calls)
			}
			joined := slices.ContainsFunc(agent.calls(t, "docker"), func(c string) bool { return strings.HasPrefix(c, "swarm join") })
			if joined != tc.joins {
				t.Errorf("attempted to join: %v, want %v", joined, tc.joins)
			}
		})
	}
}

// A node configuration whose content is not what the launch template's
// hash says is never run.
func TestAgentRefusesTamperedConfig(t *testing.T) {
	c := s3Client(t)
	bucket := newBucket(t, c)
	sw := newSwarm(t)
	r, ud := agentGroup(t, c, bucket)
	key := r.Artifacts[0].Key
	tampered := strings.Replace(string(r.Artifacts[0].Body), "control_ip='"+controlIP+"'", "control_ip='203.0.113.9'", 1)
	if tampered == string(r.Artifacts[0].Body) {
		t.Fatal("nothing to tamper with")
	}
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(tampered)}); err != nil {
		t.Fatal(err)
	}
	agent := newNode(t, sw, agentIP, "m7g.large", fastAgent("3")...)
	code, out := agent.exec(t, agent.script(t, "user-data", ud))
	if code == 0 || !strings.Contains(out, "does not have SHA-256") {
		t.Fatalf("agent exited %d, want a refusal:\n%s", code, out)
	}
	wantCalls(t, agent, "cfn-signal", "--exit-code 1 --reason clusterctl:\\ agent\\ failed\\ while\\ verifying\\ the\\ node\\ configuration --stack prod-g --resource AutoScalingGroup --region us-east-1")
	wantCalls(t, agent, "dnf", "install -y aws-cfn-bootstrap")
	wantCalls(t, agent, "docker")
}

// A stack whose join parameters were changed by other means than clusterctl
// no longer matches its node configuration: the agent refuses to join.
func TestAgentChecksStackParameters(t *testing.T) {
	c := s3Client(t)
	bucket := newBucket(t, c)
	sw := newSwarm(t)
	r, _ := agentGroup(t, c, bucket)
	r.Parameters["ControlPrivateIp"] = "10.0.9.9"
	ud := userData(t, r, "LaunchTemplate", map[string]string{"AWS::StackName": r.StackName, "AWS::Region": region})
	agent := newNode(t, sw, agentIP, "m7g.large", fastAgent("3")...)
	code, out := agent.exec(t, agent.script(t, "user-data", ud))
	if code == 0 || !strings.Contains(out, "the stack's ControlPrivateIp is '10.0.9.9' but this node configuration has '"+controlIP+"'") {
		t.Fatalf("agent exited %d, want a refusal:\n%s", code, out)
	}
	wantCalls(t, agent, "docker")
	if calls := agent.calls(t, "cfn-signal"); len(calls) != 1 || !strings.HasPrefix(calls[0], "--exit-code 1 ") {
		t.Errorf("signals %v, want one failure", calls)
	}
}

// A node labels itself with what it really is, from its instance metadata
// (in a mixed group: one of the types, spot or on-demand, one of the
// zones), in daemon.json and on its instance's tags.
func TestAgentLabelsWhatItIs(t *testing.T) {
	c := s3Client(t)
	ec := ec2.NewFromConfig(awsConfig(t))
	ctx := context.Background()
	bucket := newBucket(t, c)
	sw := newSwarm(t)
	runControl(t, sw, bucket)
	// The group asks for m7g.large first; EC2 launched an m6g.large on spot.
	images, err := ec.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(images.Images) == 0 {
		t.Fatalf("moto's images: %v", err)
	}
	run, err := ec.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: images.Images[0].ImageId, InstanceType: ec2types.InstanceTypeM6gLarge, MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		InstanceMarketOptions: &ec2types.InstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeSpot},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: aws.String(names.TagCluster), Value: aws.String("prod")}, {Key: aws.String(names.TagGroup), Value: aws.String("g")},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(run.Instances[0].InstanceId)

	_, ud := agentGroup(t, c, bucket)
	agent := newNode(t, sw, agentIP, "m6g.large", fastAgent("30")...)
	agent.meta["instance-id"], agent.meta["instance-life-cycle"], agent.meta["placement/availability-zone"] = id, "spot", "us-east-1c"
	if code, out := agent.exec(t, agent.script(t, "user-data", ud)); code != 0 {
		t.Fatalf("agent exited %d:\n%s", code, out)
	}
	daemon := agent.file(t, "etc/docker/daemon.json")
	var engine struct{ Labels []string }
	if err := json.Unmarshal([]byte(daemon), &engine); err != nil {
		t.Fatalf("daemon.json is not JSON: %v\n%s", err, daemon)
	}
	for _, want := range []string{"clusterctl.instance-type=m6g.large", "clusterctl.lifecycle=spot", "clusterctl.zone=us-east-1c", "clusterctl.group=g"} {
		if !slices.Contains(engine.Labels, want) {
			t.Errorf("engine labels %q lack %s", engine.Labels, want)
		}
	}
	if env := agent.file(t, "etc/clusterctl/node.env"); !strings.Contains(env, "INSTANCE_TYPE=m6g.large\n") || !strings.Contains(env, "INSTANCE_TYPES=m7g.large\n") || !strings.Contains(env, "LIFECYCLE=spot\n") {
		t.Errorf("node.env:\n%s", env)
	}
	out, err := ec.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]string{}
	for _, tg := range out.Reservations[0].Instances[0].Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	for k, v := range map[string]string{names.TagInstanceType: "m6g.large", names.TagLifecycle: "spot", names.TagZone: "us-east-1c"} {
		if tags[k] != v {
			t.Errorf("instance tag %s = %q, want %q (tags %v)", k, tags[k], v, tags)
		}
	}
}

// A node whose tags cannot be set (a core whose agent role predates the
// permission) joins all the same; metadata of an unexpected shape never
// reaches daemon.json or a tag.
func TestAgentIdentity(t *testing.T) {
	c := s3Client(t)
	bucket := newBucket(t, c)
	sw := newSwarm(t)
	runControl(t, sw, bucket)
	_, ud := agentGroup(t, c, bucket)

	untagged := newNode(t, sw, agentIP, "m7g.large", fastAgent("30")...)
	code, out := untagged.exec(t, untagged.script(t, "user-data", ud))
	if code != 0 || !strings.Contains(out, "could not tag instance "+untagged.meta["instance-id"]+", carrying on without the tags") {
		t.Errorf("agent without tagging exited %d:\n%s", code, out)
	}

	odd := newNode(t, sw, "10.0.2.21", "m7g.large", fastAgent("30")...)
	odd.meta["instance-life-cycle"] = `spot","x=1`
	code, out = odd.exec(t, odd.script(t, "user-data", ud))
	if code == 0 || !strings.Contains(out, `unexpected value in the instance metadata: 'spot","x=1'`) {
		t.Fatalf("agent with odd metadata exited %d:\n%s", code, out)
	}
	wantCalls(t, odd, "docker")
	if calls := odd.calls(t, "cfn-signal"); len(calls) != 1 || !strings.HasPrefix(calls[0], "--exit-code 1 ") {
		t.Errorf("signals %v, want one failure", calls)
	}
}
