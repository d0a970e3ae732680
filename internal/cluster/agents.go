package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// The node agent: every stack pins the agents it runs by their SHA-256
// (its NodeAgent parameters); clusterctl uploads them into the cluster
// bucket before a stack names them, under names.AgentKey, and nodes fetch
// and check them. A group's stack and an update of the core find the
// bucket there already; a new core creates its bucket itself, so
// create-core uploads them once the bucket exists, while CloudFormation
// goes on (the managers wait for them), and `wait` or a re-run of
// create-core does the same for a creation they re-attach to.

// bucketPoll is how often create-core looks for the core's bucket.
const bucketPoll = 2 * time.Second

// Artifacts are what a group's nodes fetch from the bucket: the node
// agents this clusterctl pins and the groups' node configurations.
type Artifacts struct {
	find    *Finder
	say     *Say
	status  *Status
	Agents  func(context.Context) (agentbin.Set, error)
	CFN     query.CFNAPI
	EC2     EC2API
	S3      S3API
	Stacks  StackManager
	Version string
}

// agents are the node agents of this clusterctl, loaded on first use
// (only commands that render or deploy need them).
func (s *Artifacts) agents(ctx context.Context) (agentbin.Set, error) {
	if s.Agents == nil {
		return nil, errs.Usage("this clusterctl has no node agents")
	}
	return s.Agents(ctx)
}

// uploadAgents puts set into bucket (the cluster's own) unless there
// already, saying what it uploads.
func (s *Artifacts) uploadAgents(ctx context.Context, bucket string, set agentbin.Set) error {
	_, err := agentbin.Upload(ctx, s.S3, bucket, set, func(msg string) { s.say.printf("%s", msg) })
	return err
}

// uploadAll uploads what the nodes of a stack about to be created or
// updated fetch: the node agents, then its node configuration (r's
// artifacts), into the cluster's own bucket.
func (s *Artifacts) uploadAll(ctx context.Context, bucket string, r *render.Rendered) error {
	set, err := s.agents(ctx)
	if err != nil {
		return err
	}
	if err := s.uploadAgents(ctx, bucket, set); err != nil {
		return err
	}
	return s.uploadArtifacts(ctx, bucket, r)
}

// agentsOnceBucket waits for the bucket of the core being created (stack:
// its id), proves it the cluster's by its own tags, and uploads set into
// it. It returns when ctx is cancelled: the caller stops it once the
// stack's creation has ended without a bucket.
func (s *Artifacts) agentsOnceBucket(ctx context.Context, stack, cluster string, set agentbin.Set) error {
	if len(set) == 0 {
		return nil
	}
	for {
		r, err := s.Stacks.Resource(ctx, stack, names.ResourceBucket)
		switch {
		case err == nil && r.Status == "CREATE_COMPLETE" && r.PhysicalID != "":
			if missing, err := s.find.missingCoreTag(ctx, r.PhysicalID, cluster); err != nil {
				return err
			} else if missing != "" {
				return refused("the bucket %s of core %q carries no %s tag, which the stack gives it: the node agent was not uploaded into it, and its managers will fail to boot; check who changed the bucket's tags, then delete the core (clusterctl delete-core %s) and create it again", r.PhysicalID, cluster, missing, cluster)
			}
			return s.uploadAgents(ctx, r.PhysicalID, set)
		case err != nil && !errors.Is(err, stacks.ErrNoResource):
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(bucketPoll):
		}
	}
}

// whileCreating runs wait (create-core's creation, or a wait re-attached
// to one) and meanwhile uploads set into the core's bucket once it
// exists. An upload that fails stops the wait: CloudFormation carries on,
// and `clusterctl wait` uploads the agents again. started reports the
// stack's id to the uploader (create-core learns it only once
// CloudFormation has accepted the creation).
func (s *Artifacts) whileCreating(ctx context.Context, cluster string, set agentbin.Set, wait func(ctx context.Context, started func(id string)) (*stacks.Stack, error)) (*stacks.Stack, error) {
	wctx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	uctx, stopUpload := context.WithCancel(ctx)
	defer stopUpload()
	done := make(chan error, 1)
	begun := false
	st, err := wait(wctx, func(id string) {
		begun = true
		go func() {
			err := s.agentsOnceBucket(uctx, id, cluster, set)
			if err != nil && uctx.Err() == nil {
				stopWait()
			}
			done <- err
		}()
	})
	if !begun {
		return st, err
	}
	if err != nil && wctx.Err() == nil || ctx.Err() != nil {
		// The creation ended without the bucket (or the run was
		// interrupted): nothing to upload into.
		stopUpload()
	}
	uerr := <-done
	if uerr != nil && uctx.Err() == nil || uerr != nil && err == nil {
		// A bucket that is not the cluster's: waiting would refuse again.
		var r *refusal
		if errors.As(uerr, &r) {
			return st, uerr
		}
		return st, fmt.Errorf("uploading the node agent: %w; CloudFormation carries on and the managers wait for it: upload it with `clusterctl wait %s`", uerr, cluster)
	}
	return st, err
}

// agentParams are the stack parameters that pin the node agent, by arch.
var agentParams = map[string]string{"amd64": names.ParamNodeAgentAmd64, "arm64": names.ParamNodeAgentArm64}

// pinnedAgents are the agents a stack's parameters pin, by arch (those
// it pins: a stack of an older clusterctl pins none).
func pinnedAgents(params map[string]string) map[string]string {
	out := map[string]string{}
	for arch, p := range agentParams {
		if v := params[p]; v != "" {
			out[arch] = v
		}
	}
	return out
}

// planAgent adds to a plan the node agent the update changes: a setting
// per architecture, and what the nodes line says of the nodes replaced
// ("node agent 0d623d0e4d16 → cd0d6cfbafc2"), for the architecture of the
// stack's image when both change.
func planAgent(p *Plan, oldParams, newParams map[string]string) {
	old, new := pinnedAgents(oldParams), pinnedAgents(newParams)
	var changed []string
	for _, arch := range agentbin.Archs {
		if old[arch] != new[arch] {
			changed = append(changed, arch)
			p.Settings = append(p.Settings, spec.Change{Path: "nodeAgent." + arch, Old: old[arch], New: new[arch],
				OldText: orNone(agentbin.Short(old[arch])), NewText: orNone(agentbin.Short(new[arch]))})
		}
	}
	if len(changed) > 1 {
		if arch := imageArch(newParams[names.ParamImageParameter]); arch != "" {
			changed = []string{arch}
		}
	}
	var parts []string
	for _, arch := range changed {
		part := "node agent " + orNone(agentbin.Short(old[arch])) + " → " + orNone(agentbin.Short(new[arch]))
		if len(changed) > 1 {
			part += " (linux/" + arch + ")"
		}
		parts = append(parts, part)
	}
	p.NodeAgent = strings.Join(parts, ", ")
}

// imageArch is the architecture of an image path of Amazon Linux's public
// parameters (…-x86_64, …-arm64), "" for another.
func imageArch(path string) string {
	switch {
	case strings.HasSuffix(path, "-x86_64"):
		return "amd64"
	case strings.HasSuffix(path, "-arm64"):
		return "arm64"
	}
	return ""
}

// creatingCore tells whether st is a core of cluster that CloudFormation
// is creating: its stack carries the cluster's core tags.
func creatingCore(st *stacks.Stack, cluster string) bool {
	return st != nil && st.Status == "CREATE_IN_PROGRESS" && st.Tags[names.TagRole] == names.RoleCore && st.Tags[names.TagCluster] == cluster
}

// pinnedSet is, of this clusterctl's agents, those the core being created
// pins: what a wait re-attached to its creation uploads. An agent pinned
// that this clusterctl does not carry (another version created the core)
// is noted, not uploaded: the clusterctl that created the core can.
func (s *Artifacts) pinnedSet(ctx context.Context, core *stacks.Stack) agentbin.Set {
	pinned := pinnedAgents(core.Parameters)
	if len(pinned) == 0 {
		return nil
	}
	set, err := s.agents(ctx)
	if err != nil {
		s.say.printf("Note: the node agent was not uploaded (%s): if the managers of %s wait for it, run `clusterctl wait %s` again where clusterctl has its agents\n", errs.Message(err), core.Name, core.Name)
		return nil
	}
	out := agentbin.Set{}
	for _, arch := range agentbin.Archs {
		sha, ok := pinned[arch]
		switch b := set[arch]; {
		case !ok:
		case b != nil && b.SHA256 == sha:
			out[arch] = b
		default:
			s.say.printf("Note: core %s pins the node agent linux/%s %s, which this clusterctl does not carry: if its managers wait for it, run `clusterctl wait %s` with the clusterctl that created it\n", core.Name, arch, agentbin.Short(sha), core.Name)
		}
	}
	return out
}

// resumeCreate waits for the creation of core, in progress (an earlier
// create-core interrupted), uploading the node agent it pins once its
// bucket exists, as create-core would have.
func (s *Artifacts) resumeCreate(ctx context.Context, core *stacks.Stack, wait func(ctx context.Context) ([]*stacks.Stack, error)) ([]*stacks.Stack, error) {
	var sts []*stacks.Stack
	_, err := s.whileCreating(ctx, core.Name, s.pinnedSet(ctx, core), func(ctx context.Context, started func(string)) (*stacks.Stack, error) {
		started(core.ID)
		var err error
		sts, err = wait(ctx)
		return nil, err
	})
	return sts, err
}

// build is what a render takes of this clusterctl: its version and the
// hashes of the node agents it pins.
func (s *Artifacts) build(ctx context.Context) (render.Build, error) {
	set, err := s.agents(ctx)
	if err != nil {
		return render.Build{}, err
	}
	return BuildOf(s.Version, set), nil
}
