package query

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
)

// SnapshotService is one service of the swarm as the status snapshot gives
// it (services in publish_status, templates/core/control.sh.tmpl).
type SnapshotService struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Mode is replicated, global, replicated-job or global-job.
	Mode string `json:"mode"`
	// Replicas is what a replicated service (or job) asks for; nil for a
	// global one.
	Replicas    *int           `json:"replicas"`
	Image       string         `json:"image"`
	Ports       []ServicePort  `json:"ports"`
	Constraints []string       `json:"constraints"`
	Tasks       []SnapshotTask `json:"tasks"`
}

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

// SnapshotTask is one task of a service meant to run.
type SnapshotTask struct {
	ID           string `json:"id"`
	Slot         int    `json:"slot"`
	NodeID       string `json:"nodeId"` // "" while no node is assigned
	State        string `json:"state"`
	DesiredState string `json:"desiredState"`
	// Message and Error are the swarm's words on the task: "pending task
	// scheduling", "no suitable node (insufficient resources on 3 nodes)".
	Message string `json:"message"`
	Error   string `json:"error"`
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
}

// Task is one task of a service with the node it runs on.
type Task struct {
	ID           string `json:"id"`
	Slot         int    `json:"slot"`
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

// ServicesOf builds the services view of a snapshot: each task's node
// named by its instance and group; the replicas running (tasks running
// and meant to) against those desired (a global service's: its tasks
// meant to run).
func ServicesOf(snap *Snapshot) []Service {
	nodes := map[string]SwarmNode{}
	for _, n := range snap.Nodes {
		nodes[n.NodeID] = n
	}
	out := []Service{}
	for _, s := range snap.Services {
		v := Service{Name: s.Name, ID: s.ID, Mode: s.Mode, Image: s.Image, Ports: s.Ports, Constraints: s.Constraints, Tasks: []Task{}}
		if v.Ports == nil {
			v.Ports = []ServicePort{}
		}
		if v.Constraints == nil {
			v.Constraints = []string{}
		}
		for _, t := range s.Tasks {
			n := nodes[t.NodeID]
			v.Tasks = append(v.Tasks, Task{ID: t.ID, Slot: t.Slot, NodeID: t.NodeID, InstanceID: n.InstanceID, Group: n.EngineLabels[names.EngineLabelGroup],
				State: t.State, DesiredState: t.DesiredState, Message: t.Message, Error: t.Error})
			if t.State == "running" && t.DesiredState == "running" {
				v.Running++
			}
			if t.DesiredState == "running" {
				v.Desired++
			}
			if t.State == "pending" && v.Pending == "" {
				v.Pending = t.Error
				if v.Pending == "" {
					v.Pending = t.Message
				}
			}
		}
		if s.Replicas != nil {
			v.Desired = *s.Replicas
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Service) int { return strings.Compare(a.Name, b.Name) })
	return out
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
		row := []string{s.Name, s.Mode, fmt.Sprintf("%d/%d", s.Running, s.Desired), dash(s.Image),
			dash(strings.Join(ports, ",")), dash(tasksLine(s.Tasks)), dash(s.Pending)}
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
