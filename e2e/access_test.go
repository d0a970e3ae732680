package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/remote"
	"github.com/clusterctl/clusterctl/internal/ssmfake"
)

// The docker commands go through moto's Run Command, which records them
// (checked here with the SDK) but ends each one a success at once; the
// invocation's state is played in front of it (internal/ssmfake), and
// the test plays the SSM agent: it takes the command, writes the output
// objects where the agent writes them and says how it ended.

// runCommandEndpoint is moto behind the Run Command stand-in.
func runCommandEndpoint(t *testing.T) (*ssmfake.RunCommand, string) {
	t.Helper()
	target, _ := url.Parse(endpointOf(t))
	f := ssmfake.New(httputil.NewSingleHostReverseProxy(target))
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// playAgent answers each command sent with stdout, stderr and code,
// written where the SSM agent writes them.
func playAgent(t *testing.T, c clients, f *ssmfake.RunCommand, stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case cmd := <-f.Sent():
				f.Start(cmd)
				for stream, body := range map[string]string{"stdout": stdout, "stderr": stderr} {
					if body == "" {
						continue // the agent uploads no empty stream
					}
					c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(cmd.Bucket),
						Key: aws.String(remote.OutputPath(cmd.Prefix, cmd.ID, cmd.Instance, stream)), Body: strings.NewReader(body)})
				}
				f.Finish(cmd, code)
			}
		}
	}()
}

func ssmClient(t *testing.T) *ssm.Client {
	t.Helper()
	return ssm.NewFromConfig(motoConfig(t))
}

// clusterctl docker sends exactly one AWS-RunShellScript command to the
// leader's instance, with the output going to the cluster bucket, and
// prints what the output objects hold, exiting with the command's code.
func TestDockerRunsOnTheLeader(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t)
	must(t, "update-core", "core", "--managers", "3", "--yes", "-q")
	insts := clusterInstances(t, c, "core")
	managers := insts[names.GroupControl]
	if len(managers) != 3 {
		t.Fatalf("managers: %v", managers)
	}
	// The second manager leads.
	nodes := []query.SwarmNode{joined(managers[0], 0, "reachable"), joined(managers[1], 1, "leader"), joined(managers[2], 2, "reachable")}
	publish(t, c, bucket, "core", time.Now(), nil, nodes)
	f, url := runCommandEndpoint(t)
	playAgent(t, c, f, "ID   HOSTNAME   STATUS\nnode01 *   ip-10-0-0-2   Ready\n", "a warning\n", 0)

	start := time.Now()
	r := clusterctlAt(t, url, "docker", "-j", "core", "--", "node", "ls")
	t.Logf("docker node ls took %s (moto, the agent played at once)", time.Since(start).Round(time.Millisecond))
	if r.code != 0 || r.stdout != "ID   HOSTNAME   STATUS\nnode01 *   ip-10-0-0-2   Ready\n" || r.stderr != "a warning\n" {
		t.Fatalf("docker node ls:\n%s", r)
	}
	list, err := ssmClient(t).ListCommands(context.Background(), &ssm.ListCommandsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Commands) != 1 {
		t.Fatalf("%d commands sent, want 1", len(list.Commands))
	}
	cmd := list.Commands[0]
	script := strings.Join(cmd.Parameters["commands"], "\n")
	// moto lists every instance of the account on a command sent without
	// targets: the instances the request named are what the stand-in saw.
	sent := f.Commands()
	if len(sent) != 1 || sent[0].ID != aws.ToString(cmd.CommandId) || sent[0].Instance != managers[1].id {
		t.Errorf("sent to %+v, want the leader %s alone", sent, managers[1].id)
	}
	if aws.ToString(cmd.DocumentName) != "AWS-RunShellScript" ||
		aws.ToString(cmd.OutputS3BucketName) != bucket || !strings.HasPrefix(aws.ToString(cmd.OutputS3KeyPrefix), names.CommandPrefix+"/") ||
		!strings.Contains(script, `docker "$@" </dev/null`) || !strings.Contains(script, "'"+base64.StdEncoding.EncodeToString([]byte("node"))+"'") {
		t.Errorf("command sent: document %s, output s3://%s/%s, script:\n%s",
			aws.ToString(cmd.DocumentName), aws.ToString(cmd.OutputS3BucketName), aws.ToString(cmd.OutputS3KeyPrefix), script)
	}

	// A failing command: its output, and its exit code as clusterctl's.
	f2, url2 := runCommandEndpoint(t)
	playAgent(t, c, f2, "", "Error: No such service: nope\n", 1)
	r = clusterctlAt(t, url2, "docker", "-j", "core", "--", "service", "rm", "nope")
	if r.code != 1 || r.stdout != "" || r.stderr != "Error: No such service: nope\n" {
		t.Errorf("failing command:\n%s", r)
	}
}

// Without a fresh snapshot the command runs on a manager in service, and
// says so; standard input is sent along.
func TestDockerWithoutSnapshotSendsStdin(t *testing.T) {
	parallel(t)
	c, _ := newCluster(t)
	f, url := runCommandEndpoint(t)
	playAgent(t, c, f, "Creating service app_web\n", "", 0)
	cmd := exec.Command(binary, "docker", "-j", "core", "--", "stack", "deploy", "-c", "-", "app")
	cmd.Env = append(envOf(t), "AWS_ENDPOINT_URL="+url)
	compose := "services:\n  web:\n    image: busybox\n"
	cmd.Stdin = strings.NewReader(compose)
	r := runCommand(t, cmd)
	if r.code != 0 || r.stdout != "Creating service app_web\n" || !strings.Contains(r.stderr, "not known to lead") {
		t.Fatalf("stack deploy:\n%s", r)
	}
	sent := f.Commands()
	if len(sent) != 1 || sent[0].Instance != clusterInstances(t, c, "core")[names.GroupControl][0].id {
		t.Fatalf("sent %+v", sent)
	}
	script := sent[0].Parameters["commands"][0]
	// Pinned: the version put, and the hash of what was sent.
	sum := sha256.Sum256([]byte(compose))
	if !strings.Contains(script, "--sha256 "+hex.EncodeToString(sum[:])+" commands/") || !strings.Contains(script, "get --version-id ") ||
		!strings.Contains(script, `docker "$@" <"$in"`) || strings.Contains(script, "services:") {
		t.Errorf("script does not fetch the input from the bucket:\n%s", script)
	}
}

// Nothing typed reaches Run Command's parameters in a form Systems Manager
// resolves ({{ssm:NAME}} is replaced in them before the script runs, so a
// parameter's value would reach the node's shell unquoted), and standard
// input is never in them, however small: Run Command keeps them for 30
// days, readable with ssm:ListCommands. It goes through the bucket, and
// no version of it is left there once the command ended. What moto
// recorded is what is checked.
func TestDockerSendsNeitherTypedWordsNorStdinInTheParameters(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t)
	ctx := context.Background()
	api := ssmClient(t)
	// A value that would break out of the quoting were it resolved.
	if _, err := api.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/prod/db"), Value: aws.String("x'; id; echo '"), Type: "String"}); err != nil {
		t.Fatal(err)
	}
	versioned(t, c, bucket)
	f, url := runCommandEndpoint(t)
	playAgent(t, c, f, "created\n", "", 0)
	secret := "pw-0f3c9a7e"
	docker := func(stdin string, args ...string) result {
		cmd := exec.Command(binary, append([]string{"docker", "-j", "core", "--"}, args...)...)
		cmd.Env = append(envOf(t), "AWS_ENDPOINT_URL="+url)
		cmd.Stdin = strings.NewReader(stdin)
		return runCommand(t, cmd)
	}
	if r := docker(secret, "secret", "create", "db", "-"); r.code != 0 || r.stdout != "created\n" {
		t.Fatalf("secret create:\n%s", r)
	}
	if r := docker("", "service", "create", "--env", "D={{ssm:/prod/db}}", "--env", "S={{ssm-secure:/prod/pw}}", "nginx"); r.code != 0 {
		t.Fatalf("service create:\n%s", r)
	}
	list, err := api.ListCommands(ctx, &ssm.ListCommandsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Commands) != 2 {
		t.Fatalf("%d commands sent, want 2", len(list.Commands))
	}
	for _, cmd := range list.Commands {
		params, _ := json.Marshal(cmd.Parameters)
		for _, bad := range []string{"{{", "ssm:/prod", secret, base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawStdEncoding.EncodeToString([]byte(secret)),
			base64.URLEncoding.EncodeToString([]byte(secret)), hex.EncodeToString([]byte(secret))} {
			if strings.Contains(string(params), bad) {
				t.Errorf("command %s's parameters hold %q:\n%s", aws.ToString(cmd.CommandId), bad, params)
			}
		}
	}
	if left := inputsLeft(t, c, bucket); len(left) > 0 {
		t.Errorf("the standard input is left in the bucket: %v", left)
	}
}

// versioned turns the cluster bucket's versioning on: the core's template
// does, moto's CloudFormation does not apply it, so the test does, as AWS
// would have.
func versioned(t *testing.T, c clients, bucket string) {
	t.Helper()
	if _, err := c.s3.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
}

// inputsLeft lists the versions and delete markers of a command's
// standard input left in the bucket.
func inputsLeft(t *testing.T, c clients, bucket string) []string {
	t.Helper()
	var left []string
	versions, err := c.s3.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(names.CommandPrefix + "/")})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions.Versions {
		if strings.HasSuffix(aws.ToString(v.Key), "/stdin") {
			left = append(left, aws.ToString(v.Key)+"@"+aws.ToString(v.VersionId))
		}
	}
	for _, v := range versions.DeleteMarkers {
		if strings.HasSuffix(aws.ToString(v.Key), "/stdin") {
			left = append(left, aws.ToString(v.Key)+"@"+aws.ToString(v.VersionId)+" (delete marker)")
		}
	}
	return left
}

// Bad input to docker is refused with exit 2 before anything is read,
// sent or uploaded.
func TestDockerRefusesBadInputBeforeUploading(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t)
	f, url := runCommandEndpoint(t)
	for _, tc := range []struct {
		args []string
		says string
	}{
		// --timeout: were it sent, nothing would play the agent.
		{[]string{"--timeout", "30s", "docker", "-j", "core", "--", "config", "create", "c", strings.Repeat("x", 16<<10)}, "too long"},
		{[]string{"--timeout", "30s", "docker", "-j", "core", "--", "service", "create", "--env", "A=\xff", "nginx"}, "not valid UTF-8"},
		{[]string{"--timeout", "49h", "docker", "-j", "core", "--", "node", "ls"}, "48h"},
	} {
		cmd := exec.Command(binary, tc.args...)
		cmd.Env = append(envOf(t), "AWS_ENDPOINT_URL="+url)
		cmd.Stdin = strings.NewReader("some input")
		r := runCommand(t, cmd)
		if r.code != 2 || !strings.Contains(r.stderr, tc.says) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%.80q:\n%s", tc.args, r)
		}
	}
	if n := len(f.Commands()); n != 0 {
		t.Errorf("%d commands sent", n)
	}
	versions, err := c.s3.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(names.CommandPrefix + "/")})
	if err != nil || len(versions.Versions)+len(versions.DeleteMarkers) != 0 {
		t.Errorf("uploaded: %+v, %v", versions.Versions, err)
	}
}

// Ctrl-C cancels the command on the node and exits 130.
func TestDockerCtrlCCancels(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t)
	versioned(t, c, bucket)
	f, url := runCommandEndpoint(t)
	cmd := exec.Command(binary, "docker", "-j", "core", "--", "secret", "create", "db", "-")
	cmd.Env = append(envOf(t), "AWS_ENDPOINT_URL="+url)
	cmd.Stdin = strings.NewReader("pw")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var sent *ssmfake.Command
	select {
	case sent = <-f.Sent():
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("no command sent: %s", errOut.String())
	}
	f.Start(sent)
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	select {
	case <-sent.Cancelled:
	default:
		t.Errorf("the command was not cancelled")
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || !strings.Contains(errOut.String(), "cancelled command "+sent.ID) {
		t.Errorf("exit %v, stderr:\n%s", err, errOut.String())
	}
	// The standard input is deleted on Ctrl-C too, every version.
	if left := inputsLeft(t, c, bucket); len(left) > 0 {
		t.Errorf("the standard input is left in the bucket: %v", left)
	}
}

// --timeout cancels the command on the node too, and exits 1.
func TestDockerTimeoutCancels(t *testing.T) {
	parallel(t)
	newCluster(t)
	f, url := runCommandEndpoint(t)
	r := clusterctlAt(t, url, "--timeout", "3s", "docker", "-j", "core", "--", "service", "create", "--name", "web", "busybox")
	sent := f.Commands()
	if r.code != 1 || !strings.Contains(r.stderr, "--timeout reached") || len(sent) != 1 || !strings.Contains(r.stderr, "cancelled command "+sent[0].ID) {
		t.Fatalf("timeout:\n%s", r)
	}
	select {
	case <-sent[0].Cancelled:
	default:
		t.Errorf("the command was not cancelled")
	}
	if got := sent[0].Parameters["executionTimeout"]; len(got) != 1 || got[0] != "3" {
		t.Errorf("execution timeout %v, want 3", got)
	}
}

// What needs a terminal is refused before anything is sent.
func TestDockerRefusesTerminalCommands(t *testing.T) {
	parallel(t)
	newCluster(t)
	f, url := runCommandEndpoint(t)
	for _, args := range [][]string{{"exec", "-it", "c", "sh"}, {"logs", "-f", "c"}, {"attach", "c"}} {
		r := clusterctlAt(t, url, append([]string{"docker", "-j", "core", "--"}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "clusterctl shell") {
			t.Errorf("docker %v:\n%s", args, r)
		}
	}
	if n := len(f.Commands()); n != 0 {
		t.Errorf("%d commands sent", n)
	}
}

// publishServices puts a status snapshot whose swarm runs web (2 of 3
// replicas, one pending for want of resources) on the cluster's nodes.
func publishServices(t *testing.T, c clients, bucket string) map[string][]instanceOf {
	t.Helper()
	insts := clusterInstances(t, c, "core")
	nodes := everyoneReady(insts)
	agents := insts["g"]
	var nodeOf = map[string]string{}
	for _, n := range nodes {
		nodeOf[n.InstanceID] = n.NodeID
	}
	body, err := json.Marshal(map[string]any{
		"version": 1, "cluster": "core", "time": time.Now().UTC().Format(time.RFC3339), "publisher": nodes[0].InstanceID,
		"caDigest": strings.Repeat("ab", 32), "nodes": nodes, "lastBackup": time.Now().UTC().Format(time.RFC3339),
		"services": []map[string]any{{
			"ID": "svc1", "Name": "web", "Mode": map[string]any{"Replicated": map[string]any{"Replicas": 3}}, "Image": "busybox:latest@sha256:0123",
			"Endpoint":  map[string]any{"Ports": []map[string]any{{"Protocol": "tcp", "TargetPort": 8080, "PublishedPort": 80, "PublishMode": "ingress"}}},
			"Placement": map[string]any{"Constraints": []string{"node.labels.clusterctl.group==g"}},
		}},
		"tasks": []map[string]any{
			{"ServiceID": "svc1", "NodeID": nodeOf[agents[0].id], "DesiredState": "running", "Status": map[string]any{"State": "running"}},
			{"ServiceID": "svc1", "NodeID": nodeOf[agents[1].id], "DesiredState": "running", "Status": map[string]any{"State": "running"}},
			{"ServiceID": "svc1", "NodeID": "", "DesiredState": "running", "Status": map[string]any{"State": "pending", "Message": "pending task scheduling", "Err": "no suitable node (insufficient resources on 2 nodes)"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(names.StatusKey), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	return insts
}

// services shows what the leader's snapshot says of the swarm's services,
// from one read of the bucket.
func TestServices(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t)
	must(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-c", "2", "-q")
	r := clusterctl(t, "services", "-j", "core")
	if r.code != 1 || !strings.Contains(r.stderr, "no status snapshot") {
		t.Errorf("services without a snapshot:\n%s", r)
	}
	insts := publishServices(t, c, bucket)
	r = must(t, "services", "-j", "core")
	rows := tableRows(t, r.stdout)
	if len(rows) != 1 || rows[0]["NAME"] != "web" || rows[0]["REPLICAS"] != "2/3" || rows[0]["IMAGE"] != "busybox:latest" || rows[0]["PORTS"] != "80->8080/tcp" ||
		rows[0]["PENDING"] != "no suitable node (insufficient resources on 2 nodes)" ||
		!strings.Contains(rows[0]["TASKS"], insts["g"][0].id+" (g) running") || !strings.Contains(rows[0]["TASKS"], insts["g"][1].id+" (g) running") {
		t.Errorf("services:\n%s", r.stdout)
	}
	type task struct {
		InstanceID, Group, State string
	}
	type service struct {
		Name, Mode, Pending string
		Running, Desired    int
		Constraints         []string
		Tasks               []task
	}
	got := decode[[]service](t, must(t, "services", "-j", "core", "web", "-o", "json"))
	if len(got) != 1 || got[0].Running != 2 || got[0].Desired != 3 || got[0].Mode != "replicated" || len(got[0].Tasks) != 3 ||
		len(got[0].Constraints) != 1 || got[0].Constraints[0] != "node.labels.clusterctl.group==g" {
		t.Errorf("services web -o json: %+v", got)
	}
	if r := must(t, "services", "-j", "core", "--query", ".[].pending"); r.stdout != "no suitable node (insufficient resources on 2 nodes)\n" {
		t.Errorf("--query: %q", r.stdout)
	}
	if r := clusterctl(t, "services", "-j", "core", "nope"); r.code != 1 || !strings.Contains(r.stderr, `no service "nope"`) {
		t.Errorf("unknown service:\n%s", r)
	}
	// One read of the bucket, nothing sent to the managers.
	r = must(t, "services", "-j", "core", "-v")
	if n := strings.Count(r.stderr, "aws S3.GetObject "); n != 1 || strings.Contains(r.stderr, "SSM.") {
		t.Errorf("calls:\n%s", r.stderr)
	}
}

// list-clusters lists every core with what its swarm's snapshot says.
func TestListClusters(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t, "g")
	must(t, "update-group", "-n", "g", "-j", "core", "-c", "2", "-q")
	must(t, "create-core", "other", "-q")
	publishServices(t, c, bucket)
	r := must(t, "list-clusters")
	rows := tableRows(t, r.stdout)
	if len(rows) != 2 || rows[0]["CLUSTER"] != "core" || rows[1]["CLUSTER"] != "other" {
		t.Fatalf("list-clusters:\n%s", r.stdout)
	}
	if rows[0]["STATUS"] != "CREATE_COMPLETE" && rows[0]["STATUS"] != "UPDATE_COMPLETE" || rows[0]["HEALTH"] != "healthy" || rows[0]["MANAGERS"] != "1/1" ||
		rows[0]["GROUPS"] != "1" || rows[0]["NODES"] != "3/3" || rows[0]["SERVICES"] != "1" {
		t.Errorf("core: %v", rows[0])
	}
	if rows[1]["MANAGERS"] != "?/1" || rows[1]["NODES"] != "?/?" || rows[1]["GROUPS"] != "0" || rows[1]["HEALTH"] == "healthy" {
		t.Errorf("other, no snapshot: %v", rows[1])
	}
	type summary struct {
		Cluster string
		Nodes   *int
		Swarm   string
	}
	if rows[0]["ALARMS"] != "0" || rows[1]["ALARMS"] != "0" {
		t.Errorf("alarms in ALARM: %v, %v", rows[0], rows[1])
	}
	// One DescribeStacks page; per cluster, its bucket's tags (which prove
	// it the cluster's), one snapshot read, and its alarms: the core's
	// resources, their states.
	r = must(t, "list-clusters", "-v")
	if !strings.Contains(r.stderr, "aws calls: 9 (CloudFormation.DescribeStacks=1 CloudFormation.ListStackResources=2 CloudWatch.DescribeAlarms=2 S3.GetBucketTagging=2 S3.GetObject=2)") {
		t.Errorf("calls:\n%s", r.stderr)
	}
	got := decode[[]summary](t, must(t, "list-clusters", "-o", "json"))
	if len(got) != 2 || got[0].Nodes == nil || *got[0].Nodes != 3 || got[1].Nodes != nil || !strings.Contains(got[1].Swarm, "no status snapshot") {
		t.Errorf("list-clusters -o json: %+v", got)
	}
}

// shell starts a session on the cluster's leader and hands it to the
// Session Manager plugin as the AWS CLI does; without the plugin it says
// how to install it (exit 1); an instance that is no node is refused.
func TestShell(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t)
	managers := clusterInstances(t, c, "core")[names.GroupControl]
	publish(t, c, bucket, "core", time.Now(), nil, []query.SwarmNode{joined(managers[0], 0, "leader")})
	f, url := runCommandEndpoint(t)
	dir := t.TempDir()
	noPlugin := append(envOf(t), "AWS_ENDPOINT_URL="+url, "PATH="+dir+":/usr/bin:/bin")
	r := clusterctlEnv(t, noPlugin, "shell", "-j", "core")
	if r.code != 1 || !strings.Contains(r.stderr, "session-manager-plugin") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || len(f.Sessions()) != 0 {
		t.Errorf("shell without the plugin:\n%s", r)
	}
	if r := clusterctlEnv(t, noPlugin, "shell", "i-0123456789abcdef0"); r.code != 2 {
		t.Errorf("shell on no node:\n%s", r)
	}
	// A plugin that records what it was given and exits 3.
	plugin := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >\"" + dir + "/args\"\nexit 3\n"
	if err := os.WriteFile(filepath.Join(dir, "session-manager-plugin"), []byte(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	r = clusterctlEnv(t, noPlugin, "shell", "-j", "core")
	if r.code != 3 {
		t.Fatalf("shell with the plugin: %s", r)
	}
	b, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	want := []string{`{"SessionId":"clusterctl-test-1","StreamUrl":"wss://ssmmessages.example/v1/data-channel/clusterctl-test-1","TokenValue":"token-clusterctl-test-1"}`,
		"us-east-1", "StartSession", "", `{"Target":"` + managers[0].id + `"}`, url}
	if strings.Join(args, "\n") != strings.Join(want, "\n") {
		t.Errorf("plugin args:\n%q\nwant\n%q", args, want)
	}
	if s := f.Sessions(); len(s) != 1 || s[0] != managers[0].id {
		t.Errorf("sessions %v", s)
	}
}

// A manager is chosen only from the core's own managers' group: an
// instance of someone else's group, its tags copied from the cluster's
// managers and in service there, is never sent the command, while the
// core's manager is out of service (Standby).
func TestDockerNeverOnAStrangersManager(t *testing.T) {
	parallel(t)
	c, _ := newCluster(t)
	ctx := context.Background()
	managers := clusterInstances(t, c, "core")[names.GroupControl]
	group := stackResource(t, c, "core", names.ResourceManagerGroup)
	if _, err := c.asg.EnterStandby(ctx, &autoscaling.EnterStandbyInput{AutoScalingGroupName: aws.String(group),
		InstanceIds: []string{managers[0].id}, ShouldDecrementDesiredCapacity: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	// The stranger: its own launch template and group, the managers' tags.
	lt, err := c.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("stranger"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-12c6146b"), InstanceType: ec2types.InstanceTypeT3Micro}})
	if err != nil {
		t.Fatal(err)
	}
	var tags []asgtypes.Tag
	for k, v := range map[string]string{names.TagCluster: "core", names.TagGroup: names.GroupControl, names.TagRole: names.RoleCore} {
		tags = append(tags, asgtypes.Tag{Key: aws.String(k), Value: aws.String(v), PropagateAtLaunch: aws.Bool(true)})
	}
	if _, err := c.asg.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String("stranger"),
		LaunchTemplate: &asgtypes.LaunchTemplateSpecification{LaunchTemplateId: lt.LaunchTemplate.LaunchTemplateId},
		MinSize:        aws.Int32(1), MaxSize: aws.Int32(1), DesiredCapacity: aws.Int32(1), AvailabilityZones: []string{"us-east-1a"}, Tags: tags}); err != nil {
		t.Fatal(err)
	}
	if n := len(clusterInstances(t, c, "core")[names.GroupControl]); n != 2 {
		t.Fatalf("%d running instances with the managers' tags, want the core's and the stranger", n)
	}
	f, url := runCommandEndpoint(t)
	playAgent(t, c, f, "should not run\n", "", 0)
	r := clusterctlAt(t, url, "docker", "-j", "core", "--", "node", "ls")
	if r.code != 1 || !strings.Contains(r.stderr, `cluster "core" has no manager in service`) || len(f.Commands()) != 0 {
		t.Fatalf("docker with the core's manager in standby and a stranger in service: sent %+v\n%s", f.Commands(), r)
	}
}
