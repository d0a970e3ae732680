package bootstrap

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
)

var (
	agentOnce sync.Once
	agentBin  *agentbin.Binary
	agentGz   []byte
	agentErr  error
)

// nodeAgent builds the node agent (cmd/clusterctl-node) for the lab's
// nodes once per run, as clusterctl builds it, and returns it with its
// gzip form, as uploaded.
func nodeAgent(t *testing.T) (*agentbin.Binary, []byte) {
	t.Helper()
	agentOnce.Do(func() {
		module, err := filepath.Abs("../..")
		if err != nil {
			agentErr = err
			return
		}
		out := filepath.Join(lab.Dir, "agent", "clusterctl-node")
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append(agentbin.BuildFlags(""), "-o", out, "./cmd/clusterctl-node")...)
		cmd.Dir = module
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if b, err := cmd.CombinedOutput(); err != nil {
			agentErr = fmt.Errorf("building the node agent: %v: %s", err, b)
			return
		}
		body, err := os.ReadFile(out)
		if err != nil {
			agentErr = err
			return
		}
		agentBin = agentbin.New(runtime.GOARCH, body)
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(body); err == nil {
			err = zw.Close()
		}
		agentGz, agentErr = buf.Bytes(), err
	})
	if agentErr != nil {
		t.Fatal(agentErr)
	}
	return agentBin, agentGz
}

// testBuild is what the lab's stacks are rendered with: the agent built
// for this machine's architecture, pinned for both (the lab's nodes are
// all of this machine's).
func testBuild(t *testing.T) render.Build {
	t.Helper()
	bin, _ := nodeAgent(t)
	return render.Build{Version: version, Agents: map[string]string{"amd64": bin.SHA256, "arm64": bin.SHA256}}
}

// uploadAgent puts the agent into the cluster's bucket where the loader
// fetches it, as create-core does.
func (tc *testCluster) uploadAgent(t *testing.T) {
	t.Helper()
	bin, gz := nodeAgent(t)
	for _, arch := range []string{"amd64", "arm64"} {
		if _, err := tc.c.s3.PutObject(context.Background(), &s3.PutObjectInput{
			Bucket: aws.String(tc.bucket), Key: aws.String(names.AgentKey(arch, bin.SHA256)), Body: bytes.NewReader(gz),
		}); err != nil {
			t.Fatalf("uploading the node agent: %v", err)
		}
	}
}
