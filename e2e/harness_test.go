// Package e2e runs the real clusterctl binary against a moto_server started
// on a free loopback port, and checks the endpoint's state with the SDK.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/awsx"
	"github.com/clusterctl/clusterctl/internal/motoserver"
	"github.com/clusterctl/clusterctl/internal/testlanes"
)

var (
	agentsDir string // the node agents every run uploads (CLUSTERCTL_NODE_AGENTS)
	configDir string // XDG_CONFIG_HOME of every run: no default cluster (clusterctl use)
	binary    string // the clusterctl binary under test
	// endpoint is the default moto server's URL: the one of the tests that
	// do not run in parallel (see parallel), and of env.
	endpoint string
	// motos are the moto servers: the default one and the pool of the
	// tests that run in parallel.
	motos *motoPool
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "clusterctl-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "clusterctl")
	// Built as released (scripts/release.sh): without cgo, trimmed and
	// stripped, so that TestBinarySize weighs what users download. The
	// release test, the node agents' builds and their size test build
	// without cgo too, so a cold build cache compiles the SDK's clients
	// once for all of them (with cgo, net and all that imports it differ).
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", binary, "../cmd/clusterctl")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building clusterctl:", err)
		return 1
	}
	// Every run takes its node agents from CLUSTERCTL_NODE_AGENTS. They are
	// stand-ins: nodes never run on moto, and the CLI treats an agent as
	// bytes to hash, compress and upload, whatever they hold; the real
	// ones (21.7 MB) would cost every deploying run here about 1.2 s of
	// compression. The agent's own tests build and run the real one.
	agentsDir = filepath.Join(dir, "agents")
	if err := writeAgents(agentsDir, "e2e"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	os.Setenv("CLUSTERCTL_NODE_AGENTS", agentsDir)
	// The user's default cluster (clusterctl use) never reaches a run:
	// each reads an empty configuration directory.
	configDir = filepath.Join(dir, "config")
	flag.Parse()
	size, err := poolSize()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 2
	}
	motos, err = startMotos(size)
	if err != nil {
		// Never a silent skip: without moto these tests cannot say anything.
		fmt.Fprintln(os.Stderr, "e2e: FAIL:", err)
		return 1
	}
	defer motos.close()
	endpoint = motos.def.URL
	// Every run of the binary, of every test and against any server of
	// the pool, records its AWS calls for the operator policy's check
	// (operatorpolicy_test.go): the variable reaches each run through
	// os.Environ, and each call is one O_APPEND write of whole lines, so
	// the runs of parallel tests do not interleave. The check runs once,
	// after every test, parallel ones included, has ended.
	calls := filepath.Join(dir, "aws-calls")
	os.Setenv(awsx.EnvRecordCalls, calls)
	whole := testlanes.WholeRun()
	code := motos.gate.Checked(os.Stderr, m.Run(), whole)
	if code == 0 {
		if err := checkOperatorPolicy(os.Stderr, calls, whole); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: FAIL:", err)
			code = 1
		}
	}
	return code
}

// writeAgents writes stand-in node agents for both architectures into
// dir, made different by mark.
func writeAgents(dir, mark string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, arch := range []string{"amd64", "arm64"} {
		body := "#!/bin/sh\n# clusterctl-node linux/" + arch + " (" + mark + ")\n"
		if err := os.WriteFile(filepath.Join(dir, "clusterctl-node-linux-"+arch), []byte(body), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// resetMoto forgets every resource of the test's moto server, so the
// test starts from an empty account.
func resetMoto(t *testing.T) {
	t.Helper()
	if err := motos.of(t).Reset(); err != nil {
		t.Fatal(err)
	}
}

// result is one run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// env is the environment of a run against the default moto server.
func env() []string { return envAt(endpoint) }

// envOf is the environment of a run of test t against its moto server.
func envOf(t *testing.T) []string { return envAt(endpointOf(t)) }

func envAt(url string) []string {
	return append(os.Environ(),
		"AWS_ENDPOINT_URL="+url, "AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_SESSION_TOKEN=",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_PROFILE=", "NO_COLOR=1",
		"XDG_CONFIG_HOME="+configDir, "CLUSTERCTL_CLUSTER=", "COLUMNS=")
}

// clusterctl runs the binary against the test's moto server and returns
// what it did.
func clusterctl(t *testing.T, args ...string) result {
	t.Helper()
	return clusterctlAt(t, endpointOf(t), args...)
}

// clusterctlAt runs the binary against another endpoint.
func clusterctlAt(t *testing.T, url string, args ...string) result {
	t.Helper()
	return clusterctlEnv(t, envAt(url), args...)
}

// clusterctlEnv runs the binary with the whole environment given.
func clusterctlEnv(t *testing.T, environ []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = environ
	return runCommand(t, cmd)
}

// runCommand runs cmd to its end and returns its exit code and output.
func runCommand(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", strings.Join(cmd.Args, " "), err)
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// newCluster starts from an empty account with cluster core and groups
// of one t3.small node each, and returns the clients and the core's bucket.
func newCluster(t *testing.T, groups ...string) (clients, string) {
	t.Helper()
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	for _, g := range groups {
		must(t, "add-agents", "-n", g, "-t", "t3.small", "-j", "core", "-q")
	}
	return c, outputs(describeStack(t, c, "core"))["BucketName"]
}

// must runs clusterctl and fails the test unless it exits 0.
func must(t *testing.T, args ...string) result {
	t.Helper()
	r := clusterctl(t, args...)
	if r.code != 0 {
		t.Fatalf("clusterctl %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// clients talk to the moto server directly, to check what clusterctl did.
type clients struct {
	cfn *cloudformation.Client
	ec2 *ec2.Client
	asg *autoscaling.Client
	s3  *s3.Client
}

// motoConfig is the AWS configuration of the tests' own clients: moto's
// endpoint, its region and test credentials.
func motoConfig(t *testing.T) aws.Config {
	t.Helper()
	cfg, err := motoserver.Config(context.Background(), endpointOf(t))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newClients(t *testing.T) clients {
	t.Helper()
	cfg := motoConfig(t)
	return clients{
		cfn: cloudformation.NewFromConfig(cfg),
		ec2: ec2.NewFromConfig(cfg),
		asg: autoscaling.NewFromConfig(cfg),
		s3:  s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }),
	}
}

// stackNames lists the stacks that exist (not deleted).
func (c clients) stackNames(t *testing.T) []string {
	t.Helper()
	out, err := c.cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range out.Stacks {
		if s.StackStatus != "DELETE_COMPLETE" {
			names = append(names, aws.ToString(s.StackName))
		}
	}
	return names
}
