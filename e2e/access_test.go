package e2e

import (
	"bytes"
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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
	target, _ := url.Parse(endpoint)
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
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("testing", "testing", "")), config.WithBaseEndpoint(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	return ssm.NewFromConfig(cfg)
}

// clusterctl docker sends exactly one AWS-RunShellScript command to the
// leader's instance, with the output going to the cluster bucket, and
// prints what the output objects hold, exiting with the command's code.
func TestDockerRunsOnTheLeader(t *testing.T) {
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

	r := clusterctlAt(t, url, "docker", "-j", "core", "--", "node", "ls")
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
		!strings.Contains(script, "docker node ls </dev/null") {
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
	c, _ := newCluster(t)
	f, url := runCommandEndpoint(t)
	playAgent(t, c, f, "Creating service app_web\n", "", 0)
	cmd := exec.Command(binary, "docker", "-j", "core", "--", "stack", "deploy", "-c", "-", "app")
	cmd.Env = append(env(), "AWS_ENDPOINT_URL="+url)
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
	if !strings.Contains(script, "base64 -d") || !strings.Contains(script, "docker stack deploy -c - app <\"$in\"") {
		t.Errorf("script does not carry the input:\n%s", script)
	}
}

// Ctrl-C cancels the command on the node and exits 130.
func TestDockerCtrlCCancels(t *testing.T) {
	newCluster(t)
	f, url := runCommandEndpoint(t)
	cmd := exec.Command(binary, "docker", "-j", "core", "--", "service", "create", "--name", "web", "busybox")
	cmd.Env = append(env(), "AWS_ENDPOINT_URL="+url)
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
}

// What needs a terminal is refused before anything is sent.
func TestDockerRefusesTerminalCommands(t *testing.T) {
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
