package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// sink is CloudWatch's PutMetricData: every call's figures.
type sink struct {
	calls [][]Metric
	fail  error
}

func (s *sink) Put(_ context.Context, _ time.Time, m []Metric) error {
	s.calls = append(s.calls, m)
	return s.fail
}

// key is a figure's name and dimension values: "NodesDown{core,web}".
func key(m Metric) string {
	var v []string
	for _, d := range m.Dims {
		v = append(v, d.Value)
	}
	return m.Name + "{" + strings.Join(v, ",") + "}"
}

func figures(ms []Metric) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		out[key(m)] = m.Value
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

func service(id, name string, replicas int) wire.SnapshotService {
	s := wire.SnapshotService{ID: id, Name: name}
	switch replicas {
	case -1:
		s.Mode.Global = &struct{}{}
	case -2:
		s.Mode.ReplicatedJob = &struct{ TotalCompletions *int }{ptrTo(3)}
	default:
		s.Mode.Replicated = &struct{ Replicas *int }{ptrTo(replicas)}
	}
	return s
}

func task(service, node, desired, state string) wire.SnapshotTask {
	t := wire.SnapshotTask{ServiceID: service, NodeID: node, DesiredState: desired}
	t.Status.State = state
	return t
}

func swarmNode(id, role, group, state, availability, status string) wire.SwarmNode {
	labels := map[string]string{}
	if group != "" {
		labels[names.EngineLabelGroup] = group
	}
	return wire.SwarmNode{NodeID: id, Role: role, State: state, Availability: availability, ManagerStatus: status, EngineLabels: labels}
}

func TestSwarmFigures(t *testing.T) {
	backup := start.Add(-20 * time.Minute)
	base := wire.Snapshot{Cluster: "core", Time: start,
		Nodes: []wire.SwarmNode{
			swarmNode("m1", "manager", "control", "ready", "drain", "leader"),
			swarmNode("m2", "manager", "control", "ready", "drain", "reachable"),
			swarmNode("m3", "manager", "control", "down", "drain", "unreachable"),
			swarmNode("w1", "worker", "web", "ready", "active", ""),
			swarmNode("w2", "worker", "web", "down", "active", ""),
			swarmNode("w3", "worker", "web", "ready", "drain", ""),
			swarmNode("x1", "worker", "", "ready", "active", ""),
		},
		Services: []wire.SnapshotService{service("s1", "api", 2), service("s2", "agent", -1), service("s3", "migrate", -2)},
		Tasks: []wire.SnapshotTask{
			task("s1", "w1", "running", "running"),
			task("s1", "", "running", "pending"),
			task("s1", "w2", "shutdown", "running"), // being stopped: not counted
			task("s2", "w1", "running", "running"),
			task("s2", "w3", "running", "running"),
			task("s3", "w1", "running", "running"), // a job's
		},
		Unplaceable: []wire.Unplaceable{{Service: "big", Tasks: 3}},
		Autoscale: []wire.ScalingDecision{
			{Time: start.Add(-2 * time.Minute), Group: "web"},
			{Time: start.Add(-30 * time.Second), Group: "web"},
			{Time: start.Add(-10 * time.Second), Group: "web"},
		},
	}
	withBackup := base
	withBackup.LastBackup = &backup
	for _, tc := range []struct {
		name string
		snap wire.Snapshot
		want map[string]float64
		none []string
	}{
		{"a swarm", base, map[string]float64{
			"ManagersReachable{core}": 2, "ManagersExpected{core}": 3, "NodesDown{core}": 2,
			"NodesReady{core,control}": 2, "NodesDown{core,control}": 1, "NodesDraining{core,control}": 0,
			"NodesReady{core,web}": 2, "NodesDown{core,web}": 1, "NodesDraining{core,web}": 1,
			"NodesReady{core,unlabelled}": 1,
			"TasksPending{core}":          1, "TasksUnplaceable{core}": 3,
			"RunningTasks{core}": 3, "DesiredTasks{core}": 4, "ServicesBelowDesired{core}": 1,
			"RunningTasks{core,api}": 1, "DesiredTasks{core,api}": 2,
			"RunningTasks{core,agent}": 2, "DesiredTasks{core,agent}": 2,
			"AutoscalerChanges{core}": 2,
		}, []string{"BackupAgeSeconds{core}", "RunningTasks{core,migrate}"}},
		{"a backup", withBackup, map[string]float64{"BackupAgeSeconds{core}": 1200}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := figures(SwarmFigures(tc.snap, start.Add(-time.Minute), start))
			for k, v := range tc.want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("%s = %v (published: %v), want %v", k, g, ok, v)
				}
			}
			for _, k := range tc.none {
				if _, ok := got[k]; ok {
					t.Errorf("%s published, want none", k)
				}
			}
		})
	}
}

// Any number of services and groups fits in one call: the services
// furthest below their desired tasks have figures of their own, every
// service counts in the aggregates.
func TestSwarmFiguresWithinOneCall(t *testing.T) {
	s := wire.Snapshot{Cluster: "core"}
	for i := range 300 {
		s.Nodes = append(s.Nodes, swarmNode(fmt.Sprint("n", i), "worker", fmt.Sprint("g", i), "ready", "active", ""))
	}
	for i := range 2000 {
		id := fmt.Sprint("s", i)
		s.Services = append(s.Services, service(id, fmt.Sprintf("svc%04d", i), 1))
		if i != 1500 && i != 7 {
			s.Tasks = append(s.Tasks, task(id, "n1", "running", "running"))
		}
	}
	ms := SwarmFigures(s, start.Add(-time.Minute), start)
	if len(ms) > MaxMetricsPerCall {
		t.Fatalf("%d figures, over the %d of one call", len(ms), MaxMetricsPerCall)
	}
	got := figures(ms)
	perService := 0
	for _, m := range ms {
		if len(m.Dims) == 2 && m.Dims[1].Name == names.DimService {
			perService++
		}
	}
	if perService == 0 || perService > 2*MaxServiceMetrics {
		t.Errorf("%d figures of services, want 1..%d", perService, 2*MaxServiceMetrics)
	}
	for _, k := range []string{"RunningTasks{core,svc1500}", "RunningTasks{core,svc0007}"} {
		if v, ok := got[k]; !ok || v != 0 {
			t.Errorf("%s = %v (%v): a service below its desired tasks comes first", k, v, ok)
		}
	}
	if got["ServicesBelowDesired{core}"] != 2 || got["DesiredTasks{core}"] != 2000 || got["RunningTasks{core}"] != 1998 {
		t.Errorf("aggregates %v %v %v, want 2 2000 1998", got["ServicesBelowDesired{core}"], got["DesiredTasks{core}"], got["RunningTasks{core}"])
	}
}

// The leader publishes the snapshot of its round once a minute, in one
// call, and not at every round while CloudWatch refuses.
func TestSwarmMetricsOnceAMinute(t *testing.T) {
	l := newLab(t)
	w := l.e.addWorker(nodeID("w1"), iW1)
	w.Labels[names.EngineLabelGroup] = "web"
	cw := &sink{}
	l.m.Metrics = &SwarmMetrics{Cluster: "core", Sink: cw, Clock: l.clock, Log: l.m.Log, Every: time.Minute}
	for range 12 { // 3 minutes of rounds, a snapshot every 15 s
		l.round()
		l.clock.now = l.clock.now.Add(15 * time.Second)
	}
	if len(cw.calls) < 3 || len(cw.calls) > 4 {
		t.Fatalf("%d calls in 3 minutes, want one a minute", len(cw.calls))
	}
	got := figures(cw.calls[0])
	if got["NodesReady{core,web}"] != 1 || got["ManagersReachable{core}"] != 1 || got["ManagersExpected{core}"] != 1 {
		t.Errorf("figures %v: want the swarm's", got)
	}
	cw.calls, cw.fail = nil, errors.New("throttled")
	for range 8 {
		l.round()
		l.clock.now = l.clock.now.Add(15 * time.Second)
	}
	if len(cw.calls) < 2 || len(cw.calls) > 3 || !l.logged("publishing") {
		t.Errorf("%d calls in 2 minutes of refusals (logged: %v), want one a minute", len(cw.calls), l.logs)
	}
}

type hostStats struct {
	disk map[string]float64
	mem  float64
	err  error
}

func (h hostStats) DiskUsedPercent(p string) (float64, error) {
	v, ok := h.disk[p]
	if !ok {
		return 0, fmt.Errorf("no filesystem %s", p)
	}
	return v, nil
}
func (h hostStats) MemoryUsedPercent() (float64, error) { return h.mem, h.err }

func TestNodeFigures(t *testing.T) {
	root := func(context.Context) (string, error) { return "/var/lib/docker", nil }
	for _, tc := range []struct {
		name string
		host hostStats
		want map[string]float64
		none []string
	}{
		{"both", hostStats{disk: map[string]float64{"/": 40, "/var/lib/docker": 91.5}, mem: 63}, map[string]float64{
			"DiskUsedPercent{core,web,i-1,root}": 40, "DiskUsedPercent{core,web,i-1,data-root}": 91.5,
			"DiskUsedPercent{core}": 91.5, "MemoryUsedPercent{core,web,i-1}": 63}, nil},
		{"no memory", hostStats{disk: map[string]float64{"/": 70, "/var/lib/docker": 10}, err: errors.New("no meminfo")}, map[string]float64{
			"DiskUsedPercent{core}": 70}, []string{"MemoryUsedPercent{core,web,i-1}"}},
		{"no data root", hostStats{disk: map[string]float64{"/": 70}, mem: 1}, map[string]float64{
			"DiskUsedPercent{core}": 70, "DiskUsedPercent{core,web,i-1,root}": 70}, []string{"DiskUsedPercent{core,web,i-1,data-root}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cw := &sink{}
			var logs []string
			n := &NodeMetrics{Cluster: "core", Group: "web", InstanceID: "i-1", DataRoot: root, Host: tc.host, Sink: cw,
				Clock: &clock{now: start}, Log: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }, Every: time.Minute}
			n.Publish(context.Background())
			if len(cw.calls) != 1 {
				t.Fatalf("%d calls, want 1 (logs %v)", len(cw.calls), logs)
			}
			got := figures(cw.calls[0])
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
				}
			}
			for _, k := range tc.none {
				if _, ok := got[k]; ok {
					t.Errorf("%s published, want none", k)
				}
			}
		})
	}
}
