package bootstrap

import (
	"bytes"
	"context"
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
	agentErr  error
)

// nodeAgent builds the node agent (cmd/clusterctl-node) for the lab's
// nodes once per run, as clusterctl builds it (agentbin.Build), and
// returns it with its gzip form, as uploaded.
func nodeAgent(t *testing.T) (*agentbin.Binary, []byte) {
	t.Helper()
	agentOnce.Do(func() { agentBin, agentErr = buildAgent(filepath.Join(lab.Dir, "agent"), "") })
	if agentErr != nil {
		t.Fatal(agentErr)
	}
	return agentBin, agentBin.Gzip()
}

// buildAgent builds the node agent of this module for the lab's
// architecture into dir, stamped with version.
func buildAgent(dir, version string) (*agentbin.Binary, error) {
	module, err := filepath.Abs("../..")
	if err != nil {
		return nil, err
	}
	// The go command on the PATH, as the other tests' builds: a test
	// binary built with -trimpath (make test) knows no GOROOT.
	return agentbin.Build(context.Background(), "go", module, dir, runtime.GOARCH, version)
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
