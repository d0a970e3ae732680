package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"

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
		return refused("cluster %q not found: no core stack of that name", cluster)
	}
	return refused("group %q not found in cluster %q (no stack %s)", group, cluster, stackName(cluster, group))
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

// Wait re-attaches to whatever operation is in progress on the core or a
// group, and returns with that operation's outcome; a deletion that has
// finished (the stack is gone) is reported as DELETE_COMPLETE. For the
// cluster (group ""), it waits for the core and for every group with an
// operation in progress, so an interrupted `delete-core --cascade` is
// followed to the end of its group deletions. The stacks come back groups
// first, the core last.
func (s *Service) Wait(ctx context.Context, cluster, group string) ([]*stacks.Stack, error) {
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
	groups, err := s.groupStacks(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var busy []string
	for _, g := range groups {
		if stacks.Classify(g.Status) == stacks.InProgress {
			busy = append(busy, g.Stack)
		}
	}
	sts, err := s.Stacks.WaitMany(ctx, append(busy, cluster))
	if err != nil {
		return sts, explain(notFound(err, cluster, ""), cluster, "")
	}
	return sts, nil
}

// Events passes the events of the core or a group to emit, oldest first;
// with follow, until the operation in progress ends.
func (s *Service) Events(ctx context.Context, cluster, group string, follow bool, emit func([]stacks.Event)) error {
	if err := checkAnyNames(cluster, group); err != nil {
		return err
	}
	return notFound(s.Stacks.Events(ctx, stackName(cluster, group), follow, emit), cluster, group)
}

// ContinueRollback continues a group's failed update rollback
// (UPDATE_ROLLBACK_FAILED) and waits for it.
func (s *Service) ContinueRollback(ctx context.Context, cluster, group string) (*stacks.Stack, error) {
	if err := checkAnyNames(cluster, group); err != nil {
		return nil, err
	}
	name := stackName(cluster, group)
	st, err := s.Stacks.Get(ctx, name)
	if err != nil {
		return nil, notFound(err, cluster, group)
	}
	if st.Status != "UPDATE_ROLLBACK_FAILED" {
		return nil, refused("stack %s is %s, not UPDATE_ROLLBACK_FAILED: there is no rollback to continue", name, st.Status)
	}
	s.printf("Continuing the update rollback of %s\n", name)
	st, err = s.Stacks.ContinueUpdateRollback(ctx, name)
	return st, explain(err, cluster, group)
}

// ListNodes lists the nodes of a cluster (every cluster when cluster is
// ""), optionally of one group. A named cluster or group that has no nodes
// is checked to exist, so a wrong name is "not found", not an empty
// cluster; when nodes are found that costs nothing.
func (s *Service) ListNodes(ctx context.Context, cluster, group string) ([]query.Node, error) {
	nodes, err := query.ListNodes(ctx, s.EC2, cluster, group)
	if err != nil || len(nodes) > 0 || cluster == "" {
		return nodes, err
	}
	return nodes, s.checkExists(ctx, cluster, group)
}

// ListGroups lists the agent groups of a cluster (every cluster when
// cluster is ""); none for a named cluster is checked as ListNodes does.
func (s *Service) ListGroups(ctx context.Context, cluster string) ([]query.Group, error) {
	groups, err := query.ListGroups(ctx, s.CFN, s.ASG, cluster)
	if err != nil || len(groups) > 0 || cluster == "" {
		return groups, err
	}
	return groups, s.checkExists(ctx, cluster, "")
}

// checkExists refuses a cluster without its core stack, and a group (other
// than the control node's) without its stack in that cluster.
func (s *Service) checkExists(ctx context.Context, cluster, group string) error {
	if _, err := s.getCore(ctx, cluster); err != nil {
		return err
	}
	if group == "" || group == names.GroupControl {
		return nil
	}
	st, err := s.Stacks.Get(ctx, stackName(cluster, group))
	if err != nil {
		return notFound(err, cluster, group)
	}
	if st.Tags[names.TagCluster] != cluster || st.Tags[names.TagRole] != names.RoleAgents {
		return refused("group %q not found in cluster %q (stack %s is not one of its groups)", group, cluster, st.Name)
	}
	return nil
}

// Description is what `describe` shows of a cluster.
type Description struct {
	Cluster    string            `json:"cluster"`
	Stack      string            `json:"stack"`
	Status     string            `json:"status"`
	Health     string            `json:"health"`
	Advice     string            `json:"advice,omitempty"`
	Outputs    map[string]string `json:"outputs"`
	Parameters map[string]string `json:"parameters"`
	Groups     []GroupHealth     `json:"groups"`
}

// GroupHealth is a group as `describe` shows it.
type GroupHealth struct {
	query.Group
	Health string `json:"health"`
	Advice string `json:"advice,omitempty"`
}

// Describe reads a cluster's core (outputs, parameters, status) and its
// groups with their status and health.
func (s *Service) Describe(ctx context.Context, cluster string) (*Description, error) {
	if err := checkAnyNames(cluster, ""); err != nil {
		return nil, err
	}
	core, err := s.getCore(ctx, cluster)
	if err != nil {
		return nil, err
	}
	groups, err := s.groupStacks(ctx, cluster)
	if err != nil {
		return nil, err
	}
	d := &Description{
		Cluster: cluster, Stack: core.Name, Status: core.Status, Health: Health(core.Status, true),
		Outputs: core.Outputs, Parameters: core.Parameters, Groups: []GroupHealth{},
	}
	if !stacks.Classify(core.Status).OK() {
		d.Advice = Advice(core, Ref{Cluster: cluster}, nil)
	}
	for _, g := range groups {
		h := GroupHealth{Group: g, Health: Health(g.Status, g.Joined)}
		if !stacks.Classify(g.Status).OK() {
			st := &stacks.Stack{Name: g.Stack, Status: g.Status}
			h.Advice = Advice(st, Ref{Cluster: cluster, Group: g.Group}, nil)
		}
		d.Groups = append(d.Groups, h)
	}
	return d, nil
}

// Health is a one-word verdict on a stack status; a group that is not
// joined to the core's current outputs is "stale" even when its stack is
// fine.
func Health(status string, joined bool) string {
	switch c := stacks.Classify(status); c {
	case stacks.Done:
		if !joined {
			return "stale"
		}
		return "healthy"
	case stacks.InProgress:
		return "busy"
	case stacks.FailedUsable:
		return "degraded"
	case stacks.FailedDead:
		return "dead"
	case stacks.Stuck:
		return "stuck"
	}
	return "unknown"
}

// WriteDescription prints a description for a terminal.
func WriteDescription(w io.Writer, d *Description) error {
	fmt.Fprintf(w, "Cluster:  %s\nStack:    %s\nStatus:   %s (%s)\n", d.Cluster, d.Stack, d.Status, d.Health)
	if d.Advice != "" {
		fmt.Fprintf(w, "Advice:   %s\n", d.Advice)
	}
	fmt.Fprintln(w, "\nOutputs:")
	if err := query.WriteTable(w, query.KVTable(d.Outputs, "OUTPUT", "VALUE")); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nParameters:")
	if err := query.WriteTable(w, query.KVTable(d.Parameters, "PARAMETER", "VALUE")); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nGroups:")
	if len(d.Groups) == 0 {
		_, err := fmt.Fprintln(w, "(none)")
		return err
	}
	t := query.Table{Header: []string{"GROUP", "STATUS", "HEALTH", "TYPE", "DESIRED", "RUNNING", "JOINED"}}
	for _, g := range d.Groups {
		joined := "yes"
		if !g.Joined {
			joined = "no"
		}
		t.Rows = append(t.Rows, []string{g.Group.Group, g.Status, g.Health, g.InstanceType, fmt.Sprint(g.Desired), fmt.Sprint(g.Running), joined})
	}
	if err := query.WriteTable(w, t); err != nil {
		return err
	}
	for _, g := range d.Groups {
		if g.Advice != "" {
			fmt.Fprintf(w, "%s: %s\n", g.Group.Group, g.Advice)
		}
	}
	return nil
}
