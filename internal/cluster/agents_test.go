package cluster

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/iostreams"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// bucketStacks answers for the Bucket resource of the core being
// created: none until ready says so, then bucket.
type bucketStacks struct {
	StackManager
	bucket string
	ready  func() bool
	asked  *atomic.Int32
}

func (b bucketStacks) Resource(_ context.Context, stack, logicalID string) (*stacks.Resource, error) {
	b.asked.Add(1)
	if logicalID != names.ResourceBucket || stack != "stack-id" {
		return nil, errors.New("asked for " + stack + " " + logicalID)
	}
	if !b.ready() {
		return nil, stacks.ErrNoResource
	}
	return &stacks.Resource{LogicalID: logicalID, PhysicalID: b.bucket, Status: "CREATE_COMPLETE"}, nil
}

func (bucketStacks) Say(string) bool { return false }

// agentsEnv is Clients whose S3 is moto, with bucket tagged as core's
// (or not), and whose core is being created.
func agentsEnv(t *testing.T, tagged bool, ready func() bool) (*Clients, *recS3, *strings.Builder) {
	t.Helper()
	rec := &recS3{Client: s3.NewFromConfig(motoConfig(t), func(o *s3.Options) { o.UsePathStyle = true })}
	ctx := t.Context()
	if _, err := rec.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("core-bucket")}); err != nil {
		t.Fatal(err)
	}
	if tagged {
		if _, err := rec.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String("core-bucket"), Tagging: &s3types.Tagging{TagSet: []s3types.Tag{
			{Key: aws.String(names.TagCluster), Value: aws.String("core")}, {Key: aws.String(names.TagRole), Value: aws.String(names.RoleCore)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	ios, _, _, _ := iostreams.Test()
	out := &strings.Builder{}
	ios.ErrOut = out
	return &Clients{Stacks: bucketStacks{bucket: "core-bucket", ready: ready, asked: new(atomic.Int32)}, S3: rec, IO: ios, Agents: testAgents}, rec, out
}

func agentKeys(t *testing.T) []string {
	set, _ := testAgents(t.Context())
	var keys []string
	for _, b := range set.Sorted() {
		keys = append(keys, b.Key())
	}
	return keys
}

// While the core is being created, the agents go into its bucket once the
// bucket exists, and the creation is waited for to its end.
func TestCreateUploadsAgentsOnceTheBucketExists(t *testing.T) {
	s, rec, out := agentsEnv(t, true, func() bool { return true })
	set, _ := newArtifacts(s).agents(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := newArtifacts(s).whileCreating(ctx, "core", set, func(ctx context.Context, started func(string)) (*stacks.Stack, error) {
		started("stack-id")
		// CloudFormation's managers wait for the agent: the stack
		// completes only once it is there.
		for !s3Has(ctx, rec, agentKeys(t)[1]) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		return &stacks.Stack{Status: "CREATE_COMPLETE"}, nil
	})
	if err != nil || st.Status != "CREATE_COMPLETE" {
		t.Fatalf("%v %v", st, err)
	}
	if got := strings.Join(rec.puts, " "); got != strings.Join(agentKeys(t), " ") {
		t.Errorf("put %s", got)
	}
	if !strings.Contains(out.String(), "Uploading the node agent (linux/amd64, linux/arm64) to s3://core-bucket/join/agent/") {
		t.Errorf("output:\n%s", out)
	}
	// A re-attached wait finds them there: nothing is put twice.
	if _, err := newArtifacts(s).whileCreating(t.Context(), "core", set, func(ctx context.Context, started func(string)) (*stacks.Stack, error) {
		started("stack-id")
		return &stacks.Stack{Status: "CREATE_COMPLETE"}, nil
	}); err != nil || len(rec.puts) != 2 {
		t.Errorf("again: %v, %d puts", err, len(rec.puts))
	}
}

func s3Has(ctx context.Context, api *recS3, key string) bool {
	_, err := api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("core-bucket"), Key: aws.String(key)})
	return err == nil
}

// A creation that fails before the bucket exists returns its own failure
// at once: the upload stops looking, nothing is uploaded.
func TestCreateFailingBeforeTheBucketUploadsNothing(t *testing.T) {
	s, rec, _ := agentsEnv(t, true, func() bool { return false })
	set, _ := newArtifacts(s).agents(t.Context())
	failed := errors.New("stack rolled back")
	start := time.Now()
	_, err := newArtifacts(s).whileCreating(t.Context(), "core", set, func(ctx context.Context, started func(string)) (*stacks.Stack, error) {
		started("stack-id")
		return &stacks.Stack{Status: "ROLLBACK_COMPLETE"}, failed
	})
	if !errors.Is(err, failed) || len(rec.puts) != 0 {
		t.Errorf("%v, %d puts", err, len(rec.puts))
	}
	if d := time.Since(start); d > bucketPoll+time.Second {
		t.Errorf("returned after %v", d)
	}
}

// A bucket that is not proven the cluster's gets nothing; the error says
// what to do, not to wait (waiting refuses again).
func TestCreateUploadsOnlyIntoTheClustersBucket(t *testing.T) {
	s, rec, _ := agentsEnv(t, false, func() bool { return true })
	set, _ := newArtifacts(s).agents(t.Context())
	_, err := newArtifacts(s).whileCreating(t.Context(), "core", set, func(ctx context.Context, started func(string)) (*stacks.Stack, error) {
		started("stack-id")
		<-ctx.Done() // the stack would go on for minutes
		return nil, ctx.Err()
	})
	if err == nil || len(rec.puts) != 0 || !strings.Contains(err.Error(), "carries no clusterctl:cluster=core tag") || !strings.Contains(err.Error(), "clusterctl delete-core core") || strings.Contains(err.Error(), "clusterctl wait") {
		t.Errorf("%v, puts %v", err, rec.puts)
	}
}

// The agents come from the Clients' source, which a clusterctl without
// any refuses as bad input.
func TestNoAgents(t *testing.T) {
	s := &Clients{}
	if _, err := newArtifacts(s).agents(t.Context()); err == nil {
		t.Error("Clients without agents")
	}
	s.Agents = func(context.Context) (agentbin.Set, error) { return nil, agentbin.ErrNoAgents }
	if _, err := newArtifacts(s).agents(t.Context()); !errors.Is(err, agentbin.ErrNoAgents) {
		t.Error(err)
	}
}

// The plan names the agent the nodes change to, by short hashes: of the
// architecture the stack's image runs when both change, of the one that
// changes otherwise; an unchanged agent adds nothing.
func TestPlanAgent(t *testing.T) {
	a1, a2 := strings.Repeat("a", 64), strings.Repeat("b", 64)
	r1, r2 := strings.Repeat("c", 64), strings.Repeat("d", 64)
	params := func(amd, arm, image string) map[string]string {
		return map[string]string{names.ParamNodeAgentAmd64: amd, names.ParamNodeAgentArm64: arm, names.ParamImageParameter: image}
	}
	x86, graviton := "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64"
	for _, tt := range []struct {
		name     string
		old, new map[string]string
		want     string
		settings int
	}{
		{"unchanged", params(a1, r1, x86), params(a1, r1, x86), "", 0},
		{"both, x86 nodes", params(a1, r1, x86), params(a2, r2, x86), "node agent aaaaaaaaaaaa → bbbbbbbbbbbb", 2},
		{"both, arm nodes", params(a1, r1, graviton), params(a2, r2, graviton), "node agent cccccccccccc → dddddddddddd", 2},
		{"both, an AMI id", params(a1, r1, ""), params(a2, r2, ""), "node agent aaaaaaaaaaaa → bbbbbbbbbbbb (linux/amd64), node agent cccccccccccc → dddddddddddd (linux/arm64)", 2},
		{"arm only", params(a1, r1, x86), params(a1, r2, x86), "node agent cccccccccccc → dddddddddddd", 1},
		{"an older stack pinned none", map[string]string{}, params(a2, r2, x86), "node agent (none) → bbbbbbbbbbbb", 2},
	} {
		p := newPlan("core-g", nil, 1)
		p.NodesReplaced = 3
		planAgent(p, tt.old, tt.new)
		if p.NodeAgent != tt.want || len(p.Settings) != tt.settings {
			t.Errorf("%s: %q, %d settings", tt.name, p.NodeAgent, len(p.Settings))
		}
		if tt.want != "" && p.NodesLine() != "3 nodes will be replaced, 1 at a time: "+tt.want {
			t.Errorf("%s: %s", tt.name, p.NodesLine())
		}
	}
	p := &Plan{NodesReplaced: 3, managers: true, NodeAgent: "node agent aaaaaaaaaaaa → bbbbbbbbbbbb"}
	if p.NodesLine() != "3 managers will be replaced one at a time: node agent aaaaaaaaaaaa → bbbbbbbbbbbb" {
		t.Errorf("%s", p.NodesLine())
	}
}
