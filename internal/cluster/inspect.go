package cluster

import (
	"context"
	"errors"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"

	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// stackName is the stack of a cluster's core (group "") or of one group.
func stackName(cluster, group string) string {
	if group == "" {
		return cluster
	}
	return names.GroupStack(cluster, group)
}

// CheckNames validates a cluster and a group name, each when given, before
// any AWS call. The control node's group passes: inventory lists it.
func checkAnyNames(cluster, group string) error {
	if cluster != "" {
		if err := spec.CheckClusterName(cluster); err != nil {
			return err
		}
	}
	if group != "" && group != names.GroupControl {
		if err := spec.CheckGroupName(cluster, group); err != nil {
			return err
		}
	}
	return nil
}

// checkNames validates the names of an agent group of a cluster.
func checkNames(cluster, group string) error {
	if err := spec.CheckClusterName(cluster); err != nil {
		return err
	}
	return spec.CheckGroupName(cluster, group)
}

// notFound turns a missing stack into a refusal that names what is missing.
func notFound(err error, cluster, group string) error {
	if !errors.Is(err, stacks.ErrNotFound) {
		return err
	}
	if group == "" {
		return clusterNotFound(errors.Join(err, errNoCore), cluster, "")
	}
	return groupNotFound(err, cluster, group, "(no stack "+stackName(cluster, group)+")")
}

// usable refuses to build on a stack that is failed, stuck or busy, naming
// its status and the command that recovers it. A stack whose last update
// rolled back still runs its previous configuration and is usable.
func usable(st *stacks.Stack, what string) error {
	switch stacks.Classify(st.Status) {
	case stacks.Done, stacks.FailedUsable:
		return nil
	case stacks.InProgress:
		return refused("%s %s is busy (%s)\n%s", what, st.Name, st.Status, Advice(st, RefOf(st), nil))
	}
	return refused("%s %s is %s (%s)\n%s", what, st.Name, st.Status, stacks.Classify(st.Status), Advice(st, RefOf(st), nil))
}

// Inspector describes, lists and follows clusters.
type Inspector struct {
	artifacts *Artifacts
	find      *Finder
	observer  *Observer
	status    *Status
	ASG       ASGAPI
	CFN       query.CFNAPI
	CWLogs    LogsAPI
	EC2       EC2API
	ELB       query.ELBAPI
	S3        S3API
	SSM       SSMAPI // resolves the image parameters, for what nodes fall behind on
	Stacks    StackManager
}

// Wait re-attaches to whatever operation is in progress on the core or a
// group, and returns with that operation's outcome; a deletion that has
// finished (the stack is gone) is reported as DELETE_COMPLETE. For the
// cluster (group ""), it waits for the core and for every group with an
// operation in progress, so an interrupted `delete-core --cascade` is
// followed to the end of its group deletions. The stacks come back groups
// first, the core last.
func (s *Inspector) Wait(ctx context.Context, cluster, group string) ([]*stacks.Stack, error) {
	if err := checkAnyNames(cluster, group); err != nil {
		return nil, err
	}
	if group != "" {
		st, err := s.Stacks.Wait(ctx, stackName(cluster, group))
		if err != nil {
			return []*stacks.Stack{st}, explain(notFound(err, cluster, group), cluster, group)
		}
		return []*stacks.Stack{st}, nil
	}
	groups, _, err := s.find.groupStacks(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var busy []string
	for _, g := range groups {
		if stacks.Classify(g.Status) == stacks.InProgress {
			busy = append(busy, g.Stack)
		}
	}
	waitAll := func(ctx context.Context) ([]*stacks.Stack, error) {
		return s.Stacks.WaitMany(ctx, append(busy, cluster))
	}
	var sts []*stacks.Stack
	if core, gerr := s.Stacks.Get(ctx, cluster); gerr == nil && creatingCore(core, cluster) {
		// An interrupted create-core: its node agent goes up as the
		// creation goes on.
		sts, err = s.artifacts.resumeCreate(ctx, core, waitAll)
	} else {
		sts, err = waitAll(ctx)
	}
	if err != nil {
		return sts, explain(notFound(err, cluster, ""), cluster, "")
	}
	return sts, nil
}

// Events passes the events of the core or a group to emit, oldest first;
// with follow, until the operation in progress ends.
func (s *Inspector) Events(ctx context.Context, cluster, group string, follow bool, emit func([]stacks.Event)) error {
	if err := checkAnyNames(cluster, group); err != nil {
		return err
	}
	return notFound(s.Stacks.Events(ctx, stackName(cluster, group), follow, emit), cluster, group)
}
