package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/names"
)

var agentParams = map[string]string{"amd64": names.ParamNodeAgentAmd64, "arm64": names.ParamNodeAgentArm64}

// checkAgents checks that bucket holds, at the keys the stack's pins name,
// the gzip of the agents of dir, recorded by their hash.
func checkAgents(t *testing.T, c clients, bucket string, pins map[string]string, dir string) {
	t.Helper()
	for arch, param := range agentParams {
		want, err := os.ReadFile(filepath.Join(dir, "clusterctl-node-linux-"+arch))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(want)
		if pins[param] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s = %q, want the SHA-256 of the agent, %x", param, pins[param], sum)
			continue
		}
		key := names.AgentKey(arch, pins[param])
		obj, err := c.s3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Errorf("s3://%s/%s: %v", bucket, key, err)
			continue
		}
		zr, err := gzip.NewReader(obj.Body)
		if err != nil {
			t.Fatalf("%s is not gzip: %v", key, err)
		}
		got, err := io.ReadAll(zr)
		obj.Body.Close()
		if err != nil || !bytes.Equal(got, want) || obj.Metadata["sha256"] != pins[param] {
			t.Errorf("%s holds %q (%v), metadata %v", key, got, err, obj.Metadata)
		}
	}
}

// create-core uploads both agents into the core's bucket, at the keys the
// deployed stack's parameters pin; add-agents uploads them (when missing)
// before it creates the group's stack.
func TestCreateCoreUploadsTheNodeAgent(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	r := must(t, "create-core", "core")
	if !strings.Contains(r.stderr, "Uploading the node agent (linux/amd64, linux/arm64) to s3://") {
		t.Errorf("create-core does not say it uploads the node agent:\n%s", r)
	}
	bucket := outputs(describeStack(t, c, "core"))["BucketName"]
	checkAgents(t, c, bucket, deployedStack(t, c, "core").params, agentsDir)
	if n := objectsUnder(t, c, bucket, names.AgentPrefix+"/"); n != 2 {
		t.Errorf("%d objects under %s, want the 2 agents", n, names.AgentPrefix)
	}

	// Gone from the bucket (by hand), add-agents puts them back before it
	// creates the group, which pins them too.
	for _, arch := range []string{"amd64", "arm64"} {
		key := names.AgentKey(arch, deployedStack(t, c, "core").params[agentParams[arch]])
		if _, err := c.s3.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}
	r = must(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-q")
	up, create := strings.Index(r.stderr, "Uploading the node agent (linux/amd64, linux/arm64)"), strings.Index(r.stderr, "Creating group stack core-g")
	if up < 0 || create < 0 || up > create {
		t.Errorf("add-agents does not upload the agent before it creates the group:\n%s", r)
	}
	checkAgents(t, c, bucket, deployedStack(t, c, "core-g").params, agentsDir)

	// Everything there already: nothing is uploaded again.
	before := objectsUnder(t, c, bucket, names.AgentPrefix+"/")
	r = must(t, "add-agents", "-n", "h", "-t", "t3.small", "-j", "core", "-q")
	if strings.Contains(r.stderr, "node agent") {
		t.Errorf("add-agents uploaded the agent again:\n%s", r)
	}
	if n := objectsUnder(t, c, bucket, names.AgentPrefix+"/"); n != before {
		t.Errorf("%d object versions under %s, %d before: uploaded again", n, names.AgentPrefix, before)
	}

	// Deleted again, an update-group that changes nothing puts them back
	// and says so: "No changes" only of a whole group.
	for _, arch := range []string{"amd64", "arm64"} {
		key := names.AgentKey(arch, deployedStack(t, c, "core-g").params[agentParams[arch]])
		if _, err := c.s3.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}
	r = must(t, "update-group", "-n", "g", "-j", "core", "--dry-run")
	if !strings.Contains(r.stdout+r.stderr, "node agent s3://"+bucket+"/join/agent/clusterctl-node-linux-amd64-") || !strings.Contains(r.stdout+r.stderr, "is missing (would be uploaded again)") {
		t.Errorf("update-group --dry-run of a group whose agent is missing:\n%s", r)
	}
	r = must(t, "update-group", "-n", "g", "-j", "core")
	if strings.Contains(r.stderr, "No changes") || !strings.Contains(r.stderr, "Repaired core-g: uploaded the missing node agent s3://"+bucket+"/join/agent/clusterctl-node-linux-amd64-") {
		t.Errorf("update-group of a group whose agent is missing:\n%s", r)
	}
	checkAgents(t, c, bucket, deployedStack(t, c, "core-g").params, agentsDir)
	if r := must(t, "update-group", "-n", "g", "-j", "core"); !strings.Contains(r.stderr, "No changes") {
		t.Errorf("update-group of a whole group:\n%s", r)
	}
}

// Another agent (another clusterctl) plans the replacement of the nodes,
// saying the agent changes, old → new; applied, the new one is uploaded
// and pinned.
func TestUpdateToAnotherAgentPlansTheReplacement(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t, "g")
	old := deployedStack(t, c, "core-g").params
	other := filepath.Join(t.TempDir(), "agents")
	if err := writeAgents(other, "other"); err != nil {
		t.Fatal(err)
	}
	environ := append(envOf(t), "CLUSTERCTL_NODE_AGENTS="+other)
	short := func(h string) string { return h[:12] }
	newSum := func(arch string) string {
		b, _ := os.ReadFile(filepath.Join(other, "clusterctl-node-linux-"+arch))
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}

	r := clusterctlEnv(t, environ, "update-group", "-n", "g", "-j", "core", "--dry-run")
	want := "node agent " + short(old[names.ParamNodeAgentAmd64]) + " → " + short(newSum("amd64"))
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "1 node will be replaced: "+want) {
		t.Errorf("update-group --dry-run with another agent does not say %q:\n%s", "1 node will be replaced: "+want, r)
	}
	r = clusterctlEnv(t, environ, "update-core", "core", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "will be replaced: "+want) {
		t.Errorf("update-core --dry-run with another agent does not say %q:\n%s", want, r)
	}
	if n := objectsUnder(t, c, bucket, names.AgentPrefix+"/"); n != 2 {
		t.Errorf("the dry runs uploaded: %d objects under %s", n, names.AgentPrefix)
	}

	r = clusterctlEnv(t, environ, "update-group", "-n", "g", "-j", "core", "--yes", "-q")
	if r.code != 0 {
		t.Fatalf("update-group with another agent:\n%s", r)
	}
	checkAgents(t, c, bucket, deployedStack(t, c, "core-g").params, other)
	// The core's agent is still there for its managers.
	checkAgents(t, c, bucket, deployedStack(t, c, "core").params, agentsDir)
}

// A CLUSTERCTL_NODE_AGENTS directory that lacks an agent is bad input: one
// line, exit 2, nothing created or uploaded.
func TestBadAgentsDirectory(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	half := t.TempDir()
	if err := os.WriteFile(filepath.Join(half, "clusterctl-node-linux-amd64"), []byte("agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{half, filepath.Join(half, "nosuch")} {
		r := clusterctlEnv(t, append(envOf(t), "CLUSTERCTL_NODE_AGENTS="+dir), "create-core", "core")
		line := strings.TrimSpace(r.stderr)
		if r.code != 2 || strings.Contains(line, "\n") || !strings.Contains(line, "CLUSTERCTL_NODE_AGENTS="+dir+": clusterctl-node-linux-a") {
			t.Errorf("create-core with agents from %s:\n%s", dir, r)
		}
		if left := c.stackNames(t); len(left) != 0 {
			t.Errorf("stacks created: %v", left)
		}
	}
	_, bucket := newCluster(t)
	r := clusterctlEnv(t, append(envOf(t), "CLUSTERCTL_NODE_AGENTS="+half), "add-agents", "-n", "g", "-t", "t3.small", "-j", "core")
	if r.code != 2 || strings.Count(r.stderr, "clusterctl:") != 1 || !strings.Contains(r.stderr, "clusterctl: CLUSTERCTL_NODE_AGENTS="+half+": clusterctl-node-linux-arm64: no such file or directory") {
		t.Errorf("add-agents with half the agents:\n%s", r)
	}
	if left := c.stackNames(t); !sameSet(left, []string{"core"}) || objectsUnder(t, c, bucket, names.NodeConfigPrefix+"/") != 0 {
		t.Errorf("add-agents with half the agents left stacks %v or node configurations", left)
	}
}

// A create-core interrupted while CloudFormation creates the core, before
// its bucket exists, has uploaded nothing; `clusterctl wait` re-attached to
// the creation uploads the agents the stack pins once the bucket is
// there, and so does a re-run of create-core for another.
func TestInterruptedCreateCoreUploadsTheAgentOnResume(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	fake := cfnfake.New(t)
	environ := append(envOf(t), "AWS_ENDPOINT_URL_CLOUDFORMATION="+fake.URL)
	for _, resume := range [][]string{{"wait", "acore"}, {"create-core", "bcore"}} {
		cluster := resume[1]
		// The fake names the bucket it creates <stack>-bucket-0001: it is
		// made on moto beforehand, tagged as the core's.
		bucket := cluster + "-bucket-0001"
		if _, err := c.s3.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.s3.PutBucketTagging(t.Context(), &s3.PutBucketTaggingInput{Bucket: aws.String(bucket), Tagging: &s3types.Tagging{TagSet: []s3types.Tag{
			{Key: aws.String("clusterctl:cluster"), Value: aws.String(cluster)}, {Key: aws.String("clusterctl:role"), Value: aws.String("core")}}}}); err != nil {
			t.Fatal(err)
		}
		fake.Script(cluster, cfnfake.Create,
			cfnfake.Step{Status: "CREATE_IN_PROGRESS", Reason: "User Initiated"},
			cfnfake.Step{At: 10 * time.Minute, Events: []cfnfake.Ev{{LogicalID: "Bucket", Type: "AWS::S3::Bucket", Status: "CREATE_IN_PROGRESS"}}},
			cfnfake.Step{At: 20 * time.Minute, Events: []cfnfake.Ev{{LogicalID: "Bucket", Type: "AWS::S3::Bucket", Status: "CREATE_COMPLETE"}}},
			cfnfake.Step{At: time.Hour, Status: "CREATE_COMPLETE"})

		r := interruptAfterCreate(t, environ, fake, cluster)
		if r.code != 130 || !strings.Contains(r.stderr, "clusterctl wait "+cluster) {
			t.Errorf("interrupted create-core:\n%s", r)
		}
		if n := objectsUnder(t, c, bucket, names.AgentPrefix+"/"); n != 0 {
			t.Fatalf("%d agents uploaded before the bucket was created", n)
		}
		out, err := runWhileAdvancing(t, environ, fake, time.Hour, resume...)
		if err != nil || !strings.Contains(out, "Uploading the node agent (linux/amd64, linux/arm64) to s3://"+bucket) {
			t.Errorf("clusterctl %s: %v\n%s", strings.Join(resume, " "), err, out)
		}
		pins, err := fake.Client().DescribeStacks(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		params := map[string]string{}
		for _, st := range pins.Stacks {
			if aws.ToString(st.StackName) == cluster {
				for _, p := range st.Parameters {
					params[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
				}
			}
		}
		checkAgents(t, c, bucket, params, agentsDir)
	}
}

// interruptAfterCreate runs create-core of cluster and interrupts it
// (SIGINT) once CloudFormation (the fake) has the stack.
func interruptAfterCreate(t *testing.T, environ []string, fake *cfnfake.Server, cluster string) result {
	t.Helper()
	cmd := exec.Command(binary, "create-core", cluster)
	cmd.Env = environ
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for fake.Status(cluster) == "" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}
