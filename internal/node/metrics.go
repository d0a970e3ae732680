package node

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// The swarm's health as CloudWatch metrics: the leader publishes the
// figures of the status snapshot it built in the same round, in one
// PutMetricData a minute, in the cluster's swarm namespace
// (names.SwarmMetricNamespace), which only the managers' role may write;
// every node publishes its own disk and memory use in the cluster's node
// namespace (names.NodeMetricNamespace). Each Metrics sink is bound to its
// namespace.

// Metric is one figure: its name, dimensions (in order), value and
// CloudWatch unit.
type Metric struct {
	Name  string
	Dims  []Dim
	Value float64
	Unit  string
}

// Dim is one dimension of a metric.
type Dim struct{ Name, Value string }

// CloudWatch units of the figures.
const (
	UnitCount   = "Count"
	UnitPercent = "Percent"
	UnitSeconds = "Seconds"
)

// Metrics is what a publisher needs of CloudWatch: one PutMetricData call
// of the figures, timestamped at, in the sink's namespace.
type Metrics interface {
	Put(ctx context.Context, at time.Time, m []Metric) error
}

// PutMetricData's limits: 1000 metrics per call (and 1 MB, which 1000 of
// ours, a few hundred bytes each, stay well below).
const MaxMetricsPerCall = 1000

// MaxServiceMetrics is how many services have figures of their own
// (running and desired tasks): those furthest below their desired tasks
// first, then the largest. Every service counts in the cluster's
// aggregates (RunningTasks, DesiredTasks and ServicesBelowDesired with
// the Cluster dimension alone) however many there are.
const MaxServiceMetrics = 100

// SwarmMetrics publishes the leader's figures of the swarm.
type SwarmMetrics struct {
	Cluster string
	Sink    Metrics
	Clock   Clock
	Log     Logger
	Every   time.Duration

	next, last time.Time
	failing    bool
}

// Publish publishes the figures of snap when they are due: once every
// Every. A nil snap (the round built none) waits for the next round's.
func (p *SwarmMetrics) Publish(ctx context.Context, snap *wire.Snapshot) {
	if p == nil || snap == nil {
		return
	}
	now := p.Clock.Now()
	if now.Before(p.next) {
		return
	}
	// One call per Every whatever its outcome: CloudWatch is not asked
	// again at every round while it refuses.
	p.next = now.Add(p.Every)
	since := p.last
	if since.IsZero() {
		since = now.Add(-p.Every)
	}
	figs := SwarmFigures(*snap, since, now)
	if err := p.Sink.Put(ctx, snap.Time, figs); err != nil {
		p.Log("publishing %d metrics to CloudWatch failed: %v", len(figs), err)
		p.failing = true
		return
	}
	if p.failing || p.last.IsZero() {
		p.Log("published the swarm's %d metrics to CloudWatch (namespace %s)", len(figs), names.SwarmMetricNamespace(p.Cluster))
	}
	p.failing, p.last = false, now
}

// SwarmFigures are the figures of snap, at now; the autoscaler's changes
// are those made after since. Their number stays within one call.
func SwarmFigures(snap wire.Snapshot, since, now time.Time) []Metric {
	cluster := []Dim{{names.DimCluster, snap.Cluster}}
	count := func(name string, dims []Dim, v int) Metric {
		return Metric{Name: name, Dims: dims, Value: float64(v), Unit: UnitCount}
	}
	var out []Metric

	// Managers: members of the swarm's Raft, and those it reaches (the
	// leader reaches itself).
	var managers, reachable int
	type groupFigures struct{ ready, down, draining int }
	groups := map[string]*groupFigures{}
	var down int
	for _, n := range snap.Nodes {
		if n.Role == "manager" {
			managers++
			if n.ManagerStatus == "leader" || n.ManagerStatus == "reachable" {
				reachable++
			}
		}
		g := n.EngineLabels[names.EngineLabelGroup]
		if g == "" {
			g = unlabelled
		}
		f := groups[g]
		if f == nil {
			f = &groupFigures{}
			groups[g] = f
		}
		if n.State == "ready" {
			f.ready++
		} else {
			f.down++
			down++
		}
		// Managers run drained by design: only workers count.
		if n.Role != "manager" && n.Availability == wire.AvailabilityDrain {
			f.draining++
		}
	}
	out = append(out, count(names.MetricManagersReachable, cluster, reachable),
		count(names.MetricManagersExpected, cluster, managers), count(names.MetricNodesDown, cluster, down))
	for _, g := range sortedKeys(groups) {
		dims := []Dim{{names.DimCluster, snap.Cluster}, {names.DimGroup, g}}
		f := groups[g]
		out = append(out, count(names.MetricNodesReady, dims, f.ready), count(names.MetricNodesDown, dims, f.down),
			count(names.MetricNodesDraining, dims, f.draining))
	}

	// Tasks.
	pending, unplaceable := 0, 0
	for _, t := range snap.Tasks {
		if t.DesiredState == "running" && t.Status.State == "pending" {
			pending++
		}
	}
	for _, u := range snap.Unplaceable {
		unplaceable += u.Tasks
	}
	out = append(out, count(names.MetricTasksPending, cluster, pending), count(names.MetricTasksUnplaceable, cluster, unplaceable))

	// Services (jobs complete: they have no tasks to keep running).
	services := ServiceFigures(snap)
	var running, desired, below int
	for _, s := range services {
		running += s.Running
		desired += s.Desired
		if s.Running < s.Desired {
			below++
		}
	}
	out = append(out, count(names.MetricRunningTasks, cluster, running), count(names.MetricDesiredTasks, cluster, desired),
		count(names.MetricServicesBelowDesired, cluster, below))

	if snap.LastBackup != nil {
		out = append(out, Metric{Name: names.MetricBackupAge, Dims: cluster,
			Value: max(0, now.Sub(*snap.LastBackup).Seconds()), Unit: UnitSeconds})
	}
	changes := 0
	for _, d := range snap.Autoscale {
		if d.Time.After(since) && !d.Time.After(now) {
			changes++
		}
	}
	out = append(out, count(names.MetricAutoscalerChanges, cluster, changes))

	// The services with figures of their own, within the call's limit.
	n := min(len(services), MaxServiceMetrics, (MaxMetricsPerCall-len(out))/2)
	slices.SortStableFunc(services, func(a, b ServiceFigure) int {
		return cmp.Or(cmp.Compare(b.Desired-b.Running, a.Desired-a.Running), cmp.Compare(b.Desired, a.Desired), cmp.Compare(a.Name, b.Name))
	})
	for _, s := range services[:max(n, 0)] {
		dims := []Dim{{names.DimCluster, snap.Cluster}, {names.DimService, s.Name}}
		out = append(out, count(names.MetricRunningTasks, dims, s.Running), count(names.MetricDesiredTasks, dims, s.Desired))
	}
	return out
}

// unlabelled is the Group of a node without clusterctl's group label (one
// that joined by hand).
const unlabelled = "unlabelled"

// ServiceFigure is a service's running and desired tasks.
type ServiceFigure struct {
	Name             string
	Running, Desired int
}

// ServiceFigures are the services' tasks, by name: desired as the service
// asks (a global service: the tasks the swarm means to run, one a node it
// may run on), running as they are. Jobs are left out.
func ServiceFigures(snap wire.Snapshot) []ServiceFigure {
	var out []ServiceFigure
	for _, s := range snap.Services {
		mode := s.Mode.Name()
		if mode != "replicated" && mode != "global" {
			continue
		}
		f := ServiceFigure{Name: s.Name}
		for _, t := range snap.Tasks {
			if t.ServiceID != s.ID || t.DesiredState != "running" {
				continue
			}
			if t.Status.State == "running" {
				f.Running++
			}
			if mode == "global" {
				f.Desired++
			}
		}
		if r := s.Mode.Replicas(); mode == "replicated" && r != nil {
			f.Desired = *r
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b ServiceFigure) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// HostStats are a node's own figures.
type HostStats interface {
	// DiskUsedPercent is the use of the filesystem holding path, as df
	// gives it: used / (used + available to users).
	DiskUsedPercent(path string) (float64, error)
	// MemoryUsedPercent is the memory in use: total less available.
	MemoryUsedPercent() (float64, error)
}

// NodeMetrics publishes a node's own figures, every node (managers and
// agents alike): the use of / and of the engine's data root, with the
// dimensions Cluster, Group, InstanceId, Filesystem; the larger of the two
// with Cluster alone too, which the disk alarm watches (its Maximum over
// every node: one alarm for any number of nodes, without metric math);
// and memory with Cluster, Group, InstanceId.
type NodeMetrics struct {
	Cluster, Group, InstanceID string
	// DataRoot gives the engine's data root (docker info's
	// DockerRootDir).
	DataRoot func(ctx context.Context) (string, error)
	Host     HostStats
	Sink     Metrics
	Clock    Clock
	Log      Logger
	Every    time.Duration

	failing bool
}

// Run publishes every Every until ctx ends.
func (n *NodeMetrics) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		n.Publish(ctx)
		_ = n.Clock.Sleep(ctx, n.Every)
	}
	return ctx.Err()
}

// Publish publishes the node's figures once.
func (n *NodeMetrics) Publish(ctx context.Context) {
	figs, err := n.Figures(ctx)
	if err == nil {
		err = n.Sink.Put(ctx, n.Clock.Now(), figs)
	}
	if err != nil {
		if !n.failing {
			n.Log("publishing this node's metrics to CloudWatch failed: %v", err)
		}
		n.failing = true
		return
	}
	if n.failing {
		n.Log("publishing this node's metrics to CloudWatch again")
	}
	n.failing = false
}

// Figures are the node's figures now; what cannot be read is left out
// (and said), the rest published.
func (n *NodeMetrics) Figures(ctx context.Context) ([]Metric, error) {
	node := []Dim{{names.DimCluster, n.Cluster}, {names.DimGroup, n.Group}, {names.DimInstanceID, n.InstanceID}}
	var out []Metric
	var firstErr error
	worst := -1.0
	paths := []Dim{{names.FilesystemRoot, "/"}}
	if root, err := n.DataRoot(ctx); err == nil && root != "" {
		paths = append(paths, Dim{names.FilesystemData, root})
	} else if err != nil {
		firstErr = err
	}
	for _, p := range paths {
		v, err := n.Host.DiskUsedPercent(p.Value)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		worst = max(worst, v)
		out = append(out, Metric{Name: names.MetricDiskUsed, Dims: append(slices.Clip(node), Dim{names.DimFilesystem, p.Name}), Value: v, Unit: UnitPercent})
	}
	if worst >= 0 {
		out = append(out, Metric{Name: names.MetricDiskUsed, Dims: []Dim{{names.DimCluster, n.Cluster}}, Value: worst, Unit: UnitPercent})
	}
	if v, err := n.Host.MemoryUsedPercent(); err == nil {
		out = append(out, Metric{Name: names.MetricMemoryUsed, Dims: node, Value: v, Unit: UnitPercent})
	} else {
		firstErr = cmp.Or(firstErr, err)
	}
	if len(out) == 0 {
		return nil, firstErr
	}
	if firstErr != nil && !n.failing {
		n.Log("reading this node's figures: %v", firstErr)
	}
	return out, nil
}
