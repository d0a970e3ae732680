package query

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
)

// ServicePort is a port a service publishes.
type ServicePort struct {
	Published int    `json:"published"`
	Target    int    `json:"target"`
	Protocol  string `json:"protocol"` // tcp, udp, sctp
	Mode      string `json:"mode"`     // ingress or host
}

func (p ServicePort) String() string {
	s := fmt.Sprintf("%d->%d/%s", p.Published, p.Target, p.Protocol)
	if p.Mode == "host" {
		s += " (host)"
	}
	return s
}

// Service is a swarm service as `clusterctl services` shows it. The JSON
// keys are a public interface.
type Service struct {
	Name        string        `json:"name"`
	ID          string        `json:"id"`
	Mode        string        `json:"mode"`
	Running     int           `json:"running"`
	Desired     int           `json:"desired"`
	Image       string        `json:"image"`
	Ports       []ServicePort `json:"ports"`
	Constraints []string      `json:"constraints"`
	Tasks       []Task        `json:"tasks"`
	// Pending says why tasks wait, in the swarm's words; "" when none do.
	Pending string `json:"pending"`
	// Unplaceable says why no group of the cluster can ever hold the
	// service's pending tasks, as the autoscaler found; "" when one can
	// (or no group is autoscaled).
	Unplaceable string `json:"unplaceable"`
}

// Task is one task of a service meant to run (or complete), with the
// node it runs on.
type Task struct {
	NodeID       string `json:"nodeId"`
	InstanceID   string `json:"instanceId"`
	Group        string `json:"group"`
	State        string `json:"state"`
	DesiredState string `json:"desiredState"`
	Message      string `json:"message"`
	Error        string `json:"error"`
}

// Services is what the swarm's status snapshot says of its services: the
// services (one when name is given) and how old that is.
type Services struct {
	Services     []Service `json:"services"`
	SnapshotTime time.Time `json:"snapshotTime"`
	Stale        bool      `json:"stale"`
}

// ServicesOf builds the services view of a snapshot: each task meant to
// run (not being shut down) with its node named by instance and group;
// the replicas running (tasks running and meant to) against those asked
// (a global service's: its tasks meant to run).
func ServicesOf(snap *Snapshot) []Service {
	nodes := map[string]SwarmNode{}
	for _, n := range snap.Nodes {
		nodes[n.NodeID] = n
	}
	tasks := map[string][]SnapshotTask{}
	for _, t := range snap.Tasks {
		if t.DesiredState != "shutdown" && t.DesiredState != "remove" {
			tasks[t.ServiceID] = append(tasks[t.ServiceID], t)
		}
	}
	unplaceable := map[string]string{}
	for _, u := range snap.Unplaceable {
		unplaceable[u.Service] = u.Reason
	}
	out := []Service{}
	for _, s := range snap.Services {
		v := Service{Name: s.Name, ID: s.ID, Mode: s.Mode.Name(), Image: imageName(s.Image), Ports: []ServicePort{}, Constraints: s.Placement.Constraints, Tasks: []Task{}}
		if v.Constraints == nil {
			v.Constraints = []string{}
		}
		for _, p := range s.Endpoint.Ports {
			v.Ports = append(v.Ports, ServicePort{Published: p.PublishedPort, Target: p.TargetPort, Protocol: p.Protocol, Mode: p.PublishMode})
		}
		for _, t := range tasks[s.ID] {
			n := nodes[t.NodeID]
			v.Tasks = append(v.Tasks, Task{NodeID: t.NodeID, InstanceID: n.InstanceID, Group: n.EngineLabels[names.EngineLabelGroup],
				State: t.Status.State, DesiredState: t.DesiredState, Message: t.Status.Message, Error: t.Status.Err})
			if t.Status.State == "running" && t.DesiredState == "running" {
				v.Running++
			}
			if t.DesiredState == "running" {
				v.Desired++
			}
			if t.Status.State == "pending" && v.Pending == "" {
				v.Pending = t.Status.Err
				if v.Pending == "" {
					v.Pending = t.Status.Message
				}
			}
		}
		slices.SortFunc(v.Tasks, func(a, b Task) int {
			return strings.Compare(a.InstanceID+"\x00"+a.NodeID+"\x00"+a.State, b.InstanceID+"\x00"+b.NodeID+"\x00"+b.State)
		})
		if r := s.Mode.Replicas(); r != nil {
			v.Desired = *r
		}
		v.Unplaceable = unplaceable[s.Name]
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Service) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// imageName is an image as the operator named it, without the digest the
// swarm pins it to.
func imageName(image string) string {
	if i := strings.Index(image, "@sha256:"); i > 0 {
		return image[:i]
	}
	return image
}

// ServicesTable is the table of services: where their tasks run, and why
// those that wait do; wide adds the constraints and the ids.
func ServicesTable(services []Service, wide bool) Table {
	t := Table{Header: []string{"NAME", "MODE", "REPLICAS", "IMAGE", "PORTS", "TASKS", "PENDING"}}
	if wide {
		t.Header = append(t.Header, "CONSTRAINTS", "ID")
	}
	for _, s := range services {
		ports := make([]string, len(s.Ports))
		for i, p := range s.Ports {
			ports[i] = p.String()
		}
		pending := s.Pending
		if s.Unplaceable != "" {
			pending = "no group can hold them: " + s.Unplaceable
		}
		row := []string{s.Name, s.Mode, fmt.Sprintf("%d/%d", s.Running, s.Desired), dash(s.Image),
			dash(strings.Join(ports, ",")), dash(tasksLine(s.Tasks)), dash(pending)}
		if wide {
			row = append(row, dash(strings.Join(s.Constraints, ",")), s.ID)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// tasksLine says where a service's tasks are, grouped by node and state:
// "i-0abc (r3) running ×2, - pending".
func tasksLine(tasks []Task) string {
	type key struct{ where, state string }
	var order []key
	count := map[key]int{}
	for _, t := range tasks {
		where := t.InstanceID
		if where == "" {
			where = t.NodeID
			if len(where) > 12 {
				where = where[:12]
			}
		}
		if where == "" {
			where = "-"
		}
		if t.Group != "" {
			where += " (" + t.Group + ")"
		}
		k := key{where, t.State}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = k.where + " " + k.state
		if n := count[k]; n > 1 {
			parts[i] += " ×" + strconv.Itoa(n)
		}
	}
	return strings.Join(parts, ", ")
}
