package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
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

// agents are the node agents of this clusterctl, loaded on first use
// (only commands that render or deploy need them).
func (s *Service) agents(ctx context.Context) (agentbin.Set, error) {
	if s.Agents == nil {
		return nil, errs.Usage("this clusterctl has no node agents")
	}
	return s.Agents(ctx)
}

// uploadAgents puts set into bucket (the cluster's own) unless there
// already, saying what it uploads.
func (s *Service) uploadAgents(ctx context.Context, bucket string, set agentbin.Set) error {
	_, err := agentbin.Upload(ctx, s.S3, bucket, set, func(msg string) { s.printf("%s", msg) })
	return err
}

// uploadAll uploads what the nodes of a stack about to be created or
// updated fetch: the node agents, then its node configuration (r's
// artifacts), into the cluster's own bucket.
func (s *Service) uploadAll(ctx context.Context, bucket string, r *render.Rendered) error {
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
func (s *Service) agentsOnceBucket(ctx context.Context, stack, cluster string, set agentbin.Set) error {
	for {
		r, err := s.Stacks.Resource(ctx, stack, names.ResourceBucket)
		switch {
		case err == nil && r.Status == "CREATE_COMPLETE" && r.PhysicalID != "":
			if missing, err := s.missingCoreTag(ctx, r.PhysicalID, cluster); err != nil {
				return err
			} else if missing != "" {
				return refused("the bucket %s of core %q carries no %s tag: the node agent was not uploaded into it", r.PhysicalID, cluster, missing)
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
func (s *Service) whileCreating(ctx context.Context, cluster string, set agentbin.Set, wait func(ctx context.Context, started func(id string)) (*stacks.Stack, error)) (*stacks.Stack, error) {
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
		return st, fmt.Errorf("uploading the node agent: %w; CloudFormation carries on and the managers wait for it: upload it with `clusterctl wait %s`", uerr, cluster)
	}
	return st, err
}
