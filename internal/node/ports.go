package node

import (
	"context"
	"errors"
	"time"

	"github.com/clusterctl/clusterctl/internal/wire"
)

// SwarmPort is the port the managers listen on for the swarm.
const SwarmPort = 2377

// Local states of an engine in its swarm, in Docker's words.
const (
	StateInactive = "inactive"
	StatePending  = "pending"
	StateActive   = "active"
)

// Self is what the local engine says of itself.
type Self struct {
	NodeID           string // "" outside a swarm
	LocalState       string // inactive, pending, active, error, locked
	ControlAvailable bool   // a manager
	RootDir          string
}

// Node is a node of the swarm, as a manager's engine lists it.
type Node struct {
	ID, Hostname  string
	Addr          string // Status.Addr; 0.0.0.0 or "" when unknown
	Role          string // manager or worker
	State         string // ready, down, unknown, disconnected
	Availability  string // active, pause, drain
	ManagerAddr   string // ManagerStatus.Addr (ip:port); "" for a worker
	Leader        bool
	Reachability  string // reachable, unreachable; "" for a worker
	Labels        map[string]string
	EngineVersion string
	// NanoCPUs and MemoryBytes are what the node offers the scheduler;
	// Arch is its architecture as the engine reports it (x86_64, aarch64).
	NanoCPUs, MemoryBytes int64
	Arch                  string
	// NodeLabels are the swarm's labels of the node (node.labels), which
	// only managers write; Labels are its engine labels, its own word.
	NodeLabels map[string]string
}

// Manager tells whether the node has a manager status.
func (n Node) Manager() bool { return n.ManagerAddr != "" || n.Reachability != "" }

// Task is a task of the swarm.
type Task struct {
	ID, NodeID, ServiceID string
	State                 string // actual state
	DesiredState          string
	// Message and Err are the swarm's words on the task.
	Message, Err string
	// The placement and reservations of the task's spec: what the
	// autoscaler weighs a pending task by.
	Constraints           []string
	Platforms             []Platform
	NanoCPUs, MemoryBytes int64
}

// Platform is a platform a task's image runs on.
type Platform struct{ Architecture, OS string }

// TaskFilter selects tasks: of a node, of a service, desired running.
type TaskFilter struct {
	Node, Service  string
	DesiredRunning bool
}

// Engine is what the agent needs of the local Docker Engine.
type Engine interface {
	Self(ctx context.Context) (Self, error)
	Nodes(ctx context.Context) ([]Node, error)
	// Node is one node; ErrNoNode when the swarm has none of that id.
	Node(ctx context.Context, id string) (Node, error)
	Tasks(ctx context.Context, f TaskFilter) ([]Task, error)
	// Services are the swarm's services as the snapshot carries them.
	Services(ctx context.Context) ([]wire.SnapshotService, error)
	// Replicas is a replicated service's number of replicas; ok false for
	// a global service, ErrNoService when it is gone.
	Replicas(ctx context.Context, service string) (n int, ok bool, err error)
	SetAvailability(ctx context.Context, node, availability string) error
	// SetNodeLabels sets the node labels set and removes those named in
	// remove, in one update of the node's spec.
	SetNodeLabels(ctx context.Context, node string, set map[string]string, remove []string) error
	Demote(ctx context.Context, node string) error
	RemoveNode(ctx context.Context, node string) error
	// CA is the swarm's root CA certificate (PEM).
	CA(ctx context.Context) (string, error)
	JoinTokens(ctx context.Context) (worker, manager string, err error)
	Init(ctx context.Context, advertise string) error
	Join(ctx context.Context, token, advertise, remote string) error
	Leave(ctx context.Context) error
}

// ErrNoNode and ErrNoService: the swarm has no such node or service.
var (
	ErrNoNode    = errors.New("no such node")
	ErrNoService = errors.New("no such service")
)

// Object is what the bucket says of an object read.
type Object struct {
	ETag     string
	Modified time.Time
	Metadata map[string]string // the object's user metadata
}

// Bucket is the cluster bucket.
type Bucket interface {
	// Get reads an object; ErrMissing when there is none.
	Get(ctx context.Context, key string) ([]byte, Object, error)
	// Put writes an object with user metadata meta (nil: none).
	Put(ctx context.Context, key string, body []byte, contentType string, meta map[string]string) error
	// Claim writes body only if there is no object (ifMatch "") or only if
	// it is still the one of ETag ifMatch; ErrLost when another writer won.
	Claim(ctx context.Context, key string, body []byte, ifMatch string) error
	Delete(ctx context.Context, key string) error
	// Head is what the bucket says of an object, without its body;
	// ErrMissing when there is none.
	Head(ctx context.Context, key string) (Object, error)
	// List lists the objects whose keys start with prefix.
	List(ctx context.Context, prefix string) ([]Listed, error)
}

// Listed is an object as a listing gives it.
type Listed struct {
	Key      string
	Size     int64
	Modified time.Time
}

// SwarmObjects is what a backup is judged by.
type SwarmObjects interface {
	// Objects are the swarm's id and its services, secrets, configs and
	// swarm-scoped networks, "KIND ID VERSION" each.
	Objects(ctx context.Context) (swarmID string, objects []string, err error)
}

// ErrMissing: no object at the key. ErrLost: a conditional write lost.
var (
	ErrMissing = errors.New("no such object")
	ErrLost    = errors.New("lost to another writer")
)

// Message is a message of the core's queue.
type Message struct {
	ID, Receipt, Body string
	Sent              time.Time // by the queue's clock
	// Sender is who sent it, as the queue recorded it (SQS's SenderId:
	// an IAM user's or role's unique id, a role's with its session).
	Sender string
}

// Queue is the core's queue.
type Queue interface {
	Receive(ctx context.Context, wait, visibility time.Duration) ([]Message, error)
	Hide(ctx context.Context, receipt string, d time.Duration) error
	Delete(ctx context.Context, receipt string) error
}

// Action is a lifecycle action of an Auto Scaling group.
type Action struct {
	Group, Hook, Token, Instance string
}

// Scaling is what housekeeping needs of Auto Scaling.
type Scaling interface {
	// ClusterOf is the value of the group's clusterctl:cluster tag ("" when
	// it has none).
	ClusterOf(ctx context.Context, group string) (string, error)
	Heartbeat(ctx context.Context, a Action) error
	// Complete lets the termination go on; ended true when the action had
	// already ended.
	Complete(ctx context.Context, a Action) (ended bool, err error)
	// LifecycleState is what Auto Scaling says of instance: its group and
	// lifecycle state (Terminating:Wait while it waits in a hook); both
	// "" when no group has it.
	LifecycleState(ctx context.Context, instance string) (group, state string, err error)
}

// ScalingGroup is an Auto Scaling group of the cluster's agents, as Auto
// Scaling and CloudFormation say now.
type ScalingGroup struct {
	Name  string // the Auto Scaling group's
	Group string // its clusterctl:group tag
	// Min, Max and Desired are the group's sizes.
	Min, Max, Desired int
	// Autoscale: the group's tags opt it in, with ScaleDownAfter.
	Autoscale      bool
	ScaleDownAfter time.Duration
	// InstanceTypes, Lifecycles (spot, on-demand) and Zones are what a new
	// node of the group may be; Labels the group's labels.
	InstanceTypes, Lifecycles, Zones []string
	Labels                           map[string]string
	// Instances are the group's instances.
	Instances []string
	// Busy says why the group must not be changed now ("" when it may):
	// its stack being updated (a rolling update) is one.
	Busy string
}

// InstanceType is what EC2 says of an instance type.
type InstanceType struct {
	VCPUs     int
	MemoryMiB int64
	// Archs are EC2's words: x86_64, arm64.
	Archs []string
}

// GroupScaling is what the autoscaler needs of Auto Scaling, EC2 and
// CloudFormation.
type GroupScaling interface {
	// Groups are the Auto Scaling groups tagged as agents of cluster.
	Groups(ctx context.Context, cluster string) ([]ScalingGroup, error)
	InstanceTypes(ctx context.Context, types []string) (map[string]InstanceType, error)
	// SetDesired sets a group's desired capacity.
	SetDesired(ctx context.Context, group string, n int) error
	// Terminate terminates an instance through its group, decrementing
	// the desired capacity.
	Terminate(ctx context.Context, instance string) error
}

// Instances is what the agent needs of EC2.
type Instances interface {
	// States are the state names of the instances EC2 knows of ids; an
	// instance it does not know is absent.
	States(ctx context.Context, ids []string) (map[string]string, error)
	// PrivateIPs are the private IPv4 addresses of the instances EC2
	// knows of ids and gives one: what proves a swarm node's instance.
	PrivateIPs(ctx context.Context, ids []string) (map[string]string, error)
}

// Instance facts: what EC2 says an instance is.
type InstanceFacts struct {
	Type, Lifecycle, Zone string // lifecycle: spot or on-demand
}

// Describer is what the leader needs of EC2 to label the nodes it proved.
type Describer interface {
	// Describe are the facts of the instances EC2 knows of ids.
	Describe(ctx context.Context, ids []string) (map[string]InstanceFacts, error)
}

// Backups copies the swarm state of this manager's engine, and puts one
// back.
type Backups interface {
	// Archive is a gzipped tar of the engine's swarm directory, taken with
	// the engine paused for the moment of the copy.
	Archive(ctx context.Context) ([]byte, error)
	// Restore makes this engine the single manager of the swarm in
	// archive, reached at advertise.
	Restore(ctx context.Context, archive []byte, advertise string) error
	// Resume lets the engine run, should a pause have outlived the process
	// that made it.
	Resume()
}

// Network is what a manager needs of the host's network.
type Network interface {
	// Answers tells whether something listens at addr (ip:port).
	Answers(ctx context.Context, addr string) bool
	// Redirect makes connections to the swarm port of known go to real,
	// and no longer elsewhere; added false when they already did.
	Redirect(ctx context.Context, known, real string) (added bool, err error)
}

// Clock is the time, and waiting.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends (its error).
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is the machine's clock.
type RealClock struct{}

func (RealClock) Now() time.Time { return time.Now() }

func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Logger logs one line per decision.
type Logger func(format string, args ...any)

// failed logs what failed, if it did.
func (l Logger) failed(what string, err error) {
	if err != nil {
		l("%s failed: %v", what, err)
	}
}
