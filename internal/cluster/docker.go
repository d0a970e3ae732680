package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/remote"
)

// DockerOptions is one `clusterctl docker` run.
type DockerOptions struct {
	Cluster string
	Args    []string
	Stdin   []byte // nil: none
	// Timeout bounds the command on the node (0: an hour).
	Timeout time.Duration
	// Poll is how often the command is asked about; 0: a second.
	Poll time.Duration
}

// Manager is the manager a command runs on, and why that one.
type Manager struct {
	Cluster    string
	Bucket     string
	InstanceID string
	// Leader: the swarm's leader by a fresh status snapshot; otherwise a
	// manager in service, chosen without knowing who leads.
	Leader bool
	// Why says why it is not the leader ("" for the leader).
	Why string
}

// Docker runs docker with the arguments on the swarm's leader through Run
// Command and returns how it ended: the command's output and exit code.
func (s *Nodes) Docker(ctx context.Context, o DockerOptions) (*remote.Result, *Manager, error) {
	m, err := s.Manager(ctx, o.Cluster)
	if err != nil {
		return nil, nil, err
	}
	if s.RunCommand == nil {
		return nil, nil, fmt.Errorf("no Systems Manager client")
	}
	r := &remote.Runner{SSM: s.RunCommand, S3: s.S3, Poll: o.Poll}
	res, err := r.Run(ctx, remote.Docker{
		Instance: m.InstanceID, Args: o.Args, Stdin: o.Stdin,
		Bucket: m.Bucket, Run: s.Run.ID, Region: s.Region, Timeout: o.Timeout,
	})
	return res, m, err
}

// Manager finds the manager to run a command on: the leader the status
// snapshot names when it is fresh; otherwise (or when the leader is not
// among them) a manager that EC2 shows running with the cluster's tags
// and that the core's own managers' group (its ManagerGroup resource) has
// in service. Only an instance whose own tags make it a manager of the
// cluster, in the core's group, is ever chosen: the snapshot names it, AWS
// says what it is (a group of someone else's with copied tags is not the
// core's).
func (s *Nodes) Manager(ctx context.Context, cluster string) (*Manager, error) {
	core, err := s.find.getCore(ctx, cluster)
	if err != nil {
		return nil, err
	}
	// docker and shell act on the swarm as root on a manager.
	if err := s.leases.checkOperator(ctx, core); err != nil {
		return nil, err
	}
	bucket, err := s.find.bucketOf(ctx, core)
	if err != nil {
		return nil, err
	}
	nodes, err := query.ListNodes(ctx, s.EC2, cluster, names.GroupControl)
	if err != nil {
		return nil, err
	}
	var running []string
	for _, n := range nodes {
		if n.State == "running" {
			running = append(running, n.InstanceID)
		}
	}
	if len(running) == 0 {
		return nil, refused("cluster %q has no running manager to run the command on (clusterctl list-nodes -j %s -n %s)", cluster, cluster, names.GroupControl)
	}
	m := &Manager{Cluster: cluster, Bucket: bucket}
	w, err := s.status.swarmIn(ctx, cluster, bucket)
	if err != nil {
		return nil, err
	}
	leader := ""
	if w.Fresh() {
		leader = w.Status().Leader
	}
	inService, err := s.inService(ctx, core.Name, running)
	if err != nil {
		return nil, err
	}
	switch {
	case leader != "" && slices.Contains(inService, leader):
		m.InstanceID, m.Leader = leader, true
		return m, nil
	case leader != "":
		m.Why = fmt.Sprintf("the leader the status snapshot names, %s, is no manager in service", leader)
	case w.Fresh():
		m.Why = "the status snapshot names no leader"
	default:
		m.Why = w.Problem()
	}
	if len(inService) == 0 {
		return nil, refused("cluster %q has no manager in service to run the command on (%s)", cluster, m.Why)
	}
	m.InstanceID = inService[0]
	return m, nil
}

// inService keeps, of the instances, those the core's managers' group
// has in service, in their order.
func (s *Nodes) inService(ctx context.Context, core string, instances []string) ([]string, error) {
	r, err := s.Stacks.Resource(ctx, core, names.ResourceManagerGroup)
	if err != nil {
		return nil, fmt.Errorf("finding the managers' group of cluster %q: %w", core, err)
	}
	members, err := s.groupInstances(ctx, r.PhysicalID)
	if err != nil {
		return nil, err
	}
	var keep []string
	for _, i := range instances {
		if members[i] == "InService" {
			keep = append(keep, i)
		}
	}
	return keep, nil
}

// ShellTarget is the instance a shell opens on: the one named, once it is
// proved a node of a cluster (of cluster, when given), or the cluster's
// manager (the leader when known).
func (s *Nodes) ShellTarget(ctx context.Context, instance, cluster string) (string, error) {
	if instance != "" {
		n, err := s.findNode(ctx, instance, cluster)
		if err != nil {
			return "", err
		}
		if err := s.leases.checkOperator(ctx, n.core); err != nil {
			return "", err
		}
		return n.InstanceID, nil
	}
	if cluster == "" {
		return "", errs.Usage("name the node: clusterctl shell INSTANCE_ID, or clusterctl shell -j CLUSTER for a manager")
	}
	m, err := s.Manager(ctx, cluster)
	if err != nil {
		return "", err
	}
	return m.InstanceID, nil
}
