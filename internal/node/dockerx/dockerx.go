// Package dockerx connects the node agent's logic (internal/node) to the
// local Docker Engine through Docker's Go API client.
package dockerx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/client"

	"github.com/clusterctl/clusterctl/internal/node"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// Engine is the local engine; it satisfies node.Engine and node.AgentEngine.
type Engine struct{ c *client.Client }

// New connects to the engine DOCKER_HOST names (the local socket by
// default), negotiating the API version.
func New() (*Engine, error) {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("the Docker client: %w", err)
	}
	return &Engine{c: c}, nil
}

// Close releases the client.
func (e *Engine) Close() error { return e.c.Close() }

// Self is what the engine says of itself.
func (e *Engine) Self(ctx context.Context) (node.Self, error) {
	info, err := e.c.Info(ctx)
	if err != nil {
		return node.Self{}, err
	}
	return node.Self{NodeID: info.Swarm.NodeID, LocalState: string(info.Swarm.LocalNodeState),
		ControlAvailable: info.Swarm.ControlAvailable, RootDir: info.DockerRootDir}, nil
}

func convert(n swarm.Node) node.Node {
	out := node.Node{
		ID: n.ID, Hostname: n.Description.Hostname, Addr: n.Status.Addr, Role: string(n.Spec.Role),
		State: string(n.Status.State), Availability: string(n.Spec.Availability),
		Labels: n.Description.Engine.Labels, EngineVersion: n.Description.Engine.EngineVersion,
		NanoCPUs: n.Description.Resources.NanoCPUs, MemoryBytes: n.Description.Resources.MemoryBytes,
		Arch: n.Description.Platform.Architecture, NodeLabels: n.Spec.Annotations.Labels,
	}
	if m := n.ManagerStatus; m != nil {
		out.ManagerAddr, out.Leader, out.Reachability = m.Addr, m.Leader, string(m.Reachability)
	}
	return out
}

// Nodes lists the swarm's nodes.
func (e *Engine) Nodes(ctx context.Context) ([]node.Node, error) {
	l, err := e.c.NodeList(ctx, swarm.NodeListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]node.Node, 0, len(l))
	for _, n := range l {
		out = append(out, convert(n))
	}
	return out, nil
}

// Node inspects one node.
func (e *Engine) Node(ctx context.Context, id string) (node.Node, error) {
	n, _, err := e.c.NodeInspectWithRaw(ctx, id)
	if client.IsErrNotFound(err) {
		return node.Node{}, fmt.Errorf("node %s: %w", id, node.ErrNoNode)
	}
	if err != nil {
		return node.Node{}, err
	}
	return convert(n), nil
}

// Tasks lists tasks.
func (e *Engine) Tasks(ctx context.Context, f node.TaskFilter) ([]node.Task, error) {
	args := filters.NewArgs()
	if f.Node != "" {
		args.Add("node", f.Node)
	}
	if f.Service != "" {
		args.Add("service", f.Service)
	}
	if f.DesiredRunning {
		args.Add("desired-state", "running")
	}
	l, err := e.c.TaskList(ctx, swarm.TaskListOptions{Filters: args})
	if err != nil {
		return nil, err
	}
	out := make([]node.Task, 0, len(l))
	for _, t := range l {
		nt := node.Task{ID: t.ID, NodeID: t.NodeID, ServiceID: t.ServiceID, State: string(t.Status.State),
			DesiredState: string(t.DesiredState), Message: t.Status.Message, Err: t.Status.Err}
		if p := t.Spec.Placement; p != nil {
			nt.Constraints = p.Constraints
			for _, pl := range p.Platforms {
				nt.Platforms = append(nt.Platforms, node.Platform{Architecture: pl.Architecture, OS: pl.OS})
			}
		}
		if r := t.Spec.Resources; r != nil && r.Reservations != nil {
			nt.NanoCPUs, nt.MemoryBytes = r.Reservations.NanoCPUs, r.Reservations.MemoryBytes
		}
		out = append(out, nt)
	}
	return out, nil
}

// Services are the swarm's services, kept to what the snapshot carries
// (wire.SnapshotService): never the whole spec, whose environment may hold
// secrets.
func (e *Engine) Services(ctx context.Context) ([]wire.SnapshotService, error) {
	l, err := e.c.ServiceList(ctx, swarm.ServiceListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]wire.SnapshotService, 0, len(l))
	for _, s := range l {
		var sv wire.SnapshotService
		sv.ID, sv.Name = s.ID, s.Spec.Name
		if c := s.Spec.TaskTemplate.ContainerSpec; c != nil {
			sv.Image = c.Image
		}
		if p := s.Spec.TaskTemplate.Placement; p != nil {
			sv.Placement.Constraints = p.Constraints
		}
		for _, p := range s.Endpoint.Ports {
			sv.Endpoint.Ports = append(sv.Endpoint.Ports, wire.DockerPort{Protocol: string(p.Protocol),
				TargetPort: int(p.TargetPort), PublishedPort: int(p.PublishedPort), PublishMode: string(p.PublishMode)})
		}
		m := s.Spec.Mode
		switch {
		case m.Replicated != nil:
			sv.Mode.Replicated = &struct{ Replicas *int }{intp(m.Replicated.Replicas)}
		case m.Global != nil:
			sv.Mode.Global = &struct{}{}
		case m.ReplicatedJob != nil:
			sv.Mode.ReplicatedJob = &struct{ TotalCompletions *int }{intp(m.ReplicatedJob.TotalCompletions)}
		case m.GlobalJob != nil:
			sv.Mode.GlobalJob = &struct{}{}
		}
		out = append(out, sv)
	}
	return out, nil
}

func intp(u *uint64) *int {
	if u == nil {
		return nil
	}
	i := int(*u)
	return &i
}

// Replicas is a replicated service's replica count.
func (e *Engine) Replicas(ctx context.Context, id string) (int, bool, error) {
	s, _, err := e.c.ServiceInspectWithRaw(ctx, id, swarm.ServiceInspectOptions{})
	if client.IsErrNotFound(err) {
		return 0, false, fmt.Errorf("service %s: %w", id, node.ErrNoService)
	}
	if err != nil {
		return 0, false, err
	}
	if r := s.Spec.Mode.Replicated; r != nil && r.Replicas != nil {
		return int(*r.Replicas), true, nil
	}
	return 0, false, nil
}

// update changes a node's spec at the version read; one retry when the
// swarm changed it in between.
func (e *Engine) update(ctx context.Context, id string, change func(*swarm.NodeSpec)) error {
	var err error
	for range 2 {
		var n swarm.Node
		if n, _, err = e.c.NodeInspectWithRaw(ctx, id); err != nil {
			if client.IsErrNotFound(err) {
				return fmt.Errorf("node %s: %w", id, node.ErrNoNode)
			}
			return err
		}
		spec := n.Spec
		change(&spec)
		if err = e.c.NodeUpdate(ctx, id, n.Version, spec); err == nil {
			return nil
		}
	}
	return err
}

// SetAvailability sets a node's availability.
func (e *Engine) SetAvailability(ctx context.Context, id, availability string) error {
	return e.update(ctx, id, func(s *swarm.NodeSpec) { s.Availability = swarm.NodeAvailability(availability) })
}

// SetNodeLabels sets and removes node labels (the swarm's, which only
// managers write).
func (e *Engine) SetNodeLabels(ctx context.Context, id string, set map[string]string, remove []string) error {
	return e.update(ctx, id, func(s *swarm.NodeSpec) {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		for k, v := range set {
			s.Labels[k] = v
		}
		for _, k := range remove {
			delete(s.Labels, k)
		}
	})
}

// Demote makes a manager a worker.
func (e *Engine) Demote(ctx context.Context, id string) error {
	return e.update(ctx, id, func(s *swarm.NodeSpec) { s.Role = swarm.NodeRoleWorker })
}

// RemoveNode removes a node from the swarm.
func (e *Engine) RemoveNode(ctx context.Context, id string) error {
	return e.c.NodeRemove(ctx, id, swarm.NodeRemoveOptions{Force: true})
}

// Objects are the swarm's id and its services, secrets, configs and
// swarm-scoped networks, "KIND ID VERSION" each (a network has no
// version: its id, which an update does not change).
func (e *Engine) Objects(ctx context.Context) (string, []string, error) {
	s, err := e.c.SwarmInspect(ctx)
	if err != nil {
		return "", nil, err
	}
	var out []string
	add := func(kind, id string, v uint64) { out = append(out, fmt.Sprintf("%s %s %d", kind, id, v)) }
	services, err := e.c.ServiceList(ctx, swarm.ServiceListOptions{})
	if err != nil {
		return "", nil, err
	}
	for _, o := range services {
		add("service", o.ID, o.Version.Index)
	}
	secrets, err := e.c.SecretList(ctx, swarm.SecretListOptions{})
	if err != nil {
		return "", nil, err
	}
	for _, o := range secrets {
		add("secret", o.ID, o.Version.Index)
	}
	configs, err := e.c.ConfigList(ctx, swarm.ConfigListOptions{})
	if err != nil {
		return "", nil, err
	}
	for _, o := range configs {
		add("config", o.ID, o.Version.Index)
	}
	networks, err := e.c.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("scope", "swarm"))})
	if err != nil {
		return "", nil, err
	}
	for _, o := range networks {
		add("network", o.ID, 0)
	}
	return s.ID, out, nil
}

// Quorum is what the engine knows of its swarm: whether it is a manager,
// the managers it knows (docker info's, which need no leader), and whether
// the swarm has a leader (listing the nodes needs one).
func (e *Engine) Quorum(ctx context.Context) (node.QuorumView, error) {
	info, err := e.c.Info(ctx)
	if err != nil {
		return node.QuorumView{}, err
	}
	v := node.QuorumView{NodeID: info.Swarm.NodeID, Manager: info.Swarm.ControlAvailable && info.Swarm.LocalNodeState == swarm.LocalNodeStateActive}
	for _, p := range info.Swarm.RemoteManagers {
		v.Managers = append(v.Managers, node.RemoteManager{NodeID: p.NodeID, Addr: p.Addr})
	}
	if !v.Manager {
		return v, nil
	}
	if _, err := e.c.NodeList(ctx, swarm.NodeListOptions{}); err != nil {
		if !strings.Contains(err.Error(), "does not have a leader") && !strings.Contains(err.Error(), "no elected cluster leader") {
			return v, err
		}
		v.Leaderless = true
	}
	return v, nil
}

// CA is the swarm's root CA certificate, as `docker swarm ca` prints it.
func (e *Engine) CA(ctx context.Context) (string, error) {
	s, err := e.c.SwarmInspect(ctx)
	if err != nil {
		return "", err
	}
	return s.TLSInfo.TrustRoot, nil
}

// JoinTokens are the swarm's join tokens.
func (e *Engine) JoinTokens(ctx context.Context) (string, string, error) {
	s, err := e.c.SwarmInspect(ctx)
	if err != nil {
		return "", "", err
	}
	return s.JoinTokens.Worker, s.JoinTokens.Manager, nil
}

const listen = "0.0.0.0:2377"

// Init initialises a swarm on this engine.
func (e *Engine) Init(ctx context.Context, advertise string) error {
	_, err := e.c.SwarmInit(ctx, swarm.InitRequest{ListenAddr: listen, AdvertiseAddr: advertise})
	return err
}

// ForceNewCluster makes this engine the single manager of the swarm whose
// state it has (a restored backup).
func (e *Engine) ForceNewCluster(ctx context.Context, advertise string) error {
	_, err := e.c.SwarmInit(ctx, swarm.InitRequest{ListenAddr: listen, AdvertiseAddr: advertise, ForceNewCluster: true})
	return err
}

// Join joins a swarm through remote, bounded.
func (e *Engine) Join(ctx context.Context, token, advertise, remote string) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	return e.c.SwarmJoin(ctx, swarm.JoinRequest{ListenAddr: listen, AdvertiseAddr: advertise, RemoteAddrs: []string{remote}, JoinToken: token})
}

// Leave leaves the swarm, forced, bounded.
func (e *Engine) Leave(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return e.c.SwarmLeave(ctx, true)
}

// TrustedCA is the swarm root CA certificate this engine, as self
// describes it, trusts: the file below its data directory.
func (e *Engine) TrustedCA(_ context.Context, self node.Self) (string, error) {
	root, err := rootDir(self)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, "swarm", "certificates", "swarm-root-ca.crt"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

// Wait waits up to a minute for the engine to answer.
func (e *Engine) Wait(ctx context.Context) error {
	var err error
	for range 60 {
		if _, err = e.c.Ping(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("the Docker engine did not start: %w", err)
}

// RootDir is the engine's data directory.
func (e *Engine) RootDir(ctx context.Context) (string, error) {
	self, err := e.Self(ctx)
	if err != nil {
		return "", err
	}
	return rootDir(self)
}

// rootDir is the data directory self names.
func rootDir(self node.Self) (string, error) {
	if self.RootDir == "" {
		return "", fmt.Errorf("the engine names no data directory")
	}
	return self.RootDir, nil
}

// RotateJoinTokens gives the swarm new worker and manager join tokens: the
// old ones let nobody in any more. (The CA is rotated apart: RotateCA.)
func (e *Engine) RotateJoinTokens(ctx context.Context) error {
	s, err := e.c.SwarmInspect(ctx)
	if err != nil {
		return err
	}
	return e.c.SwarmUpdate(ctx, s.Version, s.Spec, swarm.UpdateFlags{RotateWorkerToken: true, RotateManagerToken: true})
}

// RotateCA gives the swarm a new root CA, as docker swarm ca --rotate
// does, and waits (bounded) until every node that is not down has a
// certificate of it and the swarm trusts the new root alone: the old
// root's certificates are then refused.
func (e *Engine) RotateCA(ctx context.Context) error {
	s, err := e.c.SwarmInspect(ctx)
	if err != nil {
		return err
	}
	old := s.TLSInfo.TrustRoot
	spec := s.Spec
	spec.CAConfig.ForceRotate++
	if err := e.c.SwarmUpdate(ctx, s.Version, spec, swarm.UpdateFlags{}); err != nil {
		return fmt.Errorf("rotating the swarm's CA: %w", err)
	}
	for range 120 {
		if s, err = e.c.SwarmInspect(ctx); err == nil && !s.RootRotationInProgress && s.TLSInfo.TrustRoot != old {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if err != nil {
		return fmt.Errorf("waiting for the swarm's CA rotation: %w", err)
	}
	return fmt.Errorf("the swarm's CA rotation did not finish within 2 minutes")
}
