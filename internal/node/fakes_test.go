package node

import (
	"context"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// calls records what the fakes were asked to do, in order, across them.
type calls struct{ l []string }

func (c *calls) add(f string, a ...any) { c.l = append(c.l, fmt.Sprintf(f, a...)) }

// index is the position of the first call starting with prefix; -1 when none.
func (c *calls) index(prefix string) int {
	return slices.IndexFunc(c.l, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

func (c *calls) count(prefix string) int {
	n := 0
	for _, s := range c.l {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// clock is a fake clock: Sleep advances it, and runs tick first.
type clock struct {
	now  time.Time
	tick func()
}

func (c *clock) Now() time.Time { return c.now }
func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.now = c.now.Add(d)
	if c.tick != nil {
		c.tick()
	}
	return nil
}

// engine is a fake swarm as one manager's engine sees it.
type engine struct {
	c        *calls
	self     Self
	selves   int // answers to Self: each is an /info, which costs the engine
	nodes    map[string]*Node
	tasks    []Task
	services map[string]int // replicas; -1 global
	// listed: the services as the snapshot carries them.
	listed   []wire.SnapshotService
	ca       string
	worker   string
	manager  string
	failNext error
	// objects: the swarm's services, secrets, configs and networks.
	objects []string
}

// caPEM and a worker token that carries its digest.
func swarmCA(t testing.TB, seed string) (ca, worker, manager string) {
	ca = "-----BEGIN CERTIFICATE-----\n" + seed + "\n-----END CERTIFICATE-----\n"
	n, _ := new(big.Int).SetString(Digest([]byte(ca)), 16)
	d := n.Text(36)
	d = strings.Repeat("0", 50-len(d)) + d
	return ca, "SWMTKN-1-" + d + "-" + strings.Repeat("w", 25), "SWMTKN-1-" + d + "-" + strings.Repeat("m", 25)
}

// nodeID makes a 25-character node id.
func nodeID(s string) string { return s + strings.Repeat("0", 25-len(s)) }

func newEngine(t testing.TB, c *calls) *engine {
	ca, w, m := swarmCA(t, "one")
	return &engine{c: c, nodes: map[string]*Node{}, services: map[string]int{}, ca: ca, worker: w, manager: m}
}

func (e *engine) add(n Node) *Node {
	if n.State == "" {
		n.State = "ready"
	}
	if n.Availability == "" {
		n.Availability = "active"
	}
	if n.Role == "" {
		n.Role = "worker"
	}
	e.nodes[n.ID] = &n
	return &n
}

// manager adds a manager node of instance at ip.
func (e *engine) addManager(id, instance, ip string, leader bool) *Node {
	return e.add(Node{ID: id, Role: "manager", Addr: ip, ManagerAddr: ip + ":2377", Leader: leader, Reachability: "reachable",
		Availability: "drain", Labels: map[string]string{names.EngineLabelInstanceID: instance}})
}

func (e *engine) addWorker(id, instance string) *Node {
	return e.add(Node{ID: id, Addr: "10.0.2." + id[:1], Labels: map[string]string{names.EngineLabelInstanceID: instance, names.EngineLabelGroup: "web"}})
}

func (e *engine) err() error {
	err := e.failNext
	e.failNext = nil
	return err
}

func (e *engine) Self(context.Context) (Self, error) {
	e.selves++
	return e.self, e.err()
}
func (e *engine) Nodes(context.Context) ([]Node, error) {
	var out []Node
	for _, n := range e.nodes {
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, e.err()
}
func (e *engine) Node(_ context.Context, id string) (Node, error) {
	n, ok := e.nodes[id]
	if !ok {
		return Node{}, ErrNoNode
	}
	return *n, nil
}
func (e *engine) Tasks(_ context.Context, f TaskFilter) ([]Task, error) {
	var out []Task
	for _, t := range e.tasks {
		if f.Node != "" && t.NodeID != f.Node || f.Service != "" && t.ServiceID != f.Service || f.DesiredRunning && t.DesiredState != "running" {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}
func (e *engine) Services(context.Context) ([]wire.SnapshotService, error) {
	return e.listed, nil
}
func (e *engine) Replicas(_ context.Context, s string) (int, bool, error) {
	n, ok := e.services[s]
	if !ok {
		return 0, false, ErrNoService
	}
	return n, n >= 0, nil
}
func (e *engine) SetAvailability(_ context.Context, id, a string) error {
	e.c.add("docker node update --availability %s %s", a, id)
	if n, ok := e.nodes[id]; ok {
		n.Availability = a
		return nil
	}
	return ErrNoNode
}
func (e *engine) SetNodeLabels(_ context.Context, id string, set map[string]string, remove []string) error {
	n, ok := e.nodes[id]
	if !ok {
		return ErrNoNode
	}
	if n.NodeLabels == nil {
		n.NodeLabels = map[string]string{}
	}
	var args []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		n.NodeLabels[k] = set[k]
		args = append(args, "--label-add "+k+"="+set[k])
	}
	for _, k := range remove {
		delete(n.NodeLabels, k)
		args = append(args, "--label-rm "+k)
	}
	e.c.add("docker node update %s %s", strings.Join(args, " "), id)
	return nil
}
func (e *engine) Demote(_ context.Context, id string) error {
	e.c.add("docker node demote %s", id)
	n := e.nodes[id]
	n.Role, n.ManagerAddr, n.Reachability, n.Leader = "worker", "", "", false
	return nil
}
func (e *engine) RemoveNode(_ context.Context, id string) error {
	e.c.add("docker node rm %s", id)
	delete(e.nodes, id)
	return nil
}
func (e *engine) CA(context.Context) (string, error) { return e.ca, nil }
func (e *engine) Objects(context.Context) (string, []string, error) {
	return "swarm1", e.objects, nil
}
func (e *engine) JoinTokens(context.Context) (string, string, error) {
	return e.worker, e.manager, nil
}
func (e *engine) Init(_ context.Context, addr string) error {
	e.c.add("docker swarm init %s", addr)
	e.self = Self{NodeID: nodeID("self"), LocalState: StateActive, ControlAvailable: true}
	return nil
}
func (e *engine) Join(_ context.Context, token, addr, remote string) error {
	e.c.add("docker swarm join %s %s", addr, remote)
	e.self = Self{NodeID: nodeID("self"), LocalState: StateActive, ControlAvailable: strings.HasSuffix(token, "m")}
	return nil
}
func (e *engine) Leave(context.Context) error {
	e.c.add("docker swarm leave")
	e.self = Self{LocalState: StateInactive}
	return nil
}

// bucket is a fake cluster bucket.
type bucket struct {
	c       *calls
	objects map[string][]byte
	etags   map[string]string
	times   map[string]time.Time
	meta    map[string]map[string]string
	clock   *clock
	n       int
}

func newBucket(c *calls, clk *clock) *bucket {
	return &bucket{c: c, objects: map[string][]byte{}, etags: map[string]string{}, times: map[string]time.Time{}, meta: map[string]map[string]string{}, clock: clk}
}

func (b *bucket) set(key string, body []byte) {
	b.n++
	b.objects[key], b.etags[key], b.times[key] = body, fmt.Sprintf(`"%d"`, b.n), b.clock.now
	delete(b.meta, key)
}
func (b *bucket) Get(_ context.Context, key string) ([]byte, Object, error) {
	body, ok := b.objects[key]
	if !ok {
		return nil, Object{}, ErrMissing
	}
	return body, Object{ETag: b.etags[key], Modified: b.times[key], Metadata: b.meta[key]}, nil
}
func (b *bucket) Put(_ context.Context, key string, body []byte, _ string, meta map[string]string) error {
	b.c.add("s3 put %s", key)
	b.set(key, body)
	b.meta[key] = meta
	return nil
}
func (b *bucket) Claim(_ context.Context, key string, body []byte, ifMatch string) error {
	_, ok := b.objects[key]
	if ifMatch == "" && ok || ifMatch != "" && b.etags[key] != ifMatch {
		return ErrLost
	}
	b.c.add("s3 claim %s", key)
	b.set(key, body)
	return nil
}
func (b *bucket) Delete(_ context.Context, key string) error {
	b.c.add("s3 delete %s", key)
	delete(b.objects, key)
	delete(b.meta, key)
	return nil
}

func (b *bucket) Head(_ context.Context, key string) (Object, error) {
	if _, ok := b.objects[key]; !ok {
		return Object{}, ErrMissing
	}
	return Object{ETag: b.etags[key], Modified: b.times[key], Metadata: b.meta[key]}, nil
}
func (b *bucket) List(_ context.Context, prefix string) ([]Listed, error) {
	var out []Listed
	for k, v := range b.objects {
		if strings.HasPrefix(k, prefix) {
			out = append(out, Listed{Key: k, Size: int64(len(v)), Modified: b.times[k]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// queue is a fake core queue.
type queue struct {
	c       *calls
	msgs    []*Message
	hidden  map[string]time.Time // by id: visible again at
	clock   *clock
	receipt int
}

func (q *queue) put(id, body string, sent time.Time) {
	q.msgs = append(q.msgs, &Message{ID: id, Body: body, Sent: sent})
}
func (q *queue) Receive(_ context.Context, wait, vis time.Duration) ([]Message, error) {
	var out []Message
	for _, m := range q.msgs {
		if q.clock.now.Before(q.hidden[m.ID]) {
			continue
		}
		q.receipt++
		m.Receipt = fmt.Sprintf("%s#%d", m.ID, q.receipt)
		q.hidden[m.ID] = q.clock.now.Add(vis)
		out = append(out, *m)
	}
	if len(out) == 0 && wait > 0 {
		q.clock.now = q.clock.now.Add(wait)
	}
	return out, nil
}
func (q *queue) find(receipt string) *Message {
	for _, m := range q.msgs {
		if m.Receipt == receipt {
			return m
		}
	}
	return nil
}
func (q *queue) Hide(_ context.Context, receipt string, d time.Duration) error {
	if m := q.find(receipt); m != nil {
		q.hidden[m.ID] = q.clock.now.Add(d)
		if d == 0 {
			q.c.add("sqs hand back %s", m.ID)
		}
	}
	return nil
}
func (q *queue) Delete(_ context.Context, receipt string) error {
	m := q.find(receipt)
	if m == nil {
		return fmt.Errorf("receipt %s is not valid", receipt)
	}
	q.c.add("sqs delete %s", m.ID)
	q.msgs = slices.DeleteFunc(q.msgs, func(x *Message) bool { return x == m })
	return nil
}

// scaling is a fake Auto Scaling.
type scaling struct {
	c      *calls
	owners map[string]string
	ended  bool
	// lifecycle is what Auto Scaling says of an instance (group, state);
	// for one it does not name, the honest world: an instance a
	// termination notice on q names waits in that notice's group.
	lifecycle map[string][2]string
	q         *queue
}

func (s *scaling) LifecycleState(_ context.Context, instance string) (string, string, error) {
	s.c.add("autoscaling describe-instances %s", instance)
	if st, ok := s.lifecycle[instance]; ok {
		return st[0], st[1], nil
	}
	for _, m := range s.q.msgs {
		e, err := wire.ParseEvent(m.Body)
		if err != nil {
			continue
		}
		if d, err := e.Lifecycle(); err == nil && d.EC2InstanceID == instance {
			return d.AutoScalingGroupName, "Terminating:Wait", nil
		}
	}
	return "", "", nil
}

func (s *scaling) ClusterOf(_ context.Context, g string) (string, error) { return s.owners[g], nil }
func (s *scaling) Heartbeat(_ context.Context, a Action) error {
	s.c.add("heartbeat %s", a.Instance)
	return nil
}
func (s *scaling) Complete(_ context.Context, a Action) (bool, error) {
	s.c.add("complete %s", a.Instance)
	return s.ended, nil
}

// instances is a fake EC2. An instance's private IP is ips' entry; an
// instance ips does not name has the address of the engine's node that
// names it (the honest world), unless that node is down or states says
// it is terminated or unknown.
type instances struct {
	c      *calls
	states map[string]string
	ips    map[string]string
	e      *engine
	// facts: what EC2 says the instances are.
	facts map[string]InstanceFacts
}

func (i *instances) Describe(_ context.Context, ids []string) (map[string]InstanceFacts, error) {
	i.c.add("ec2 describe facts %s", strings.Join(ids, ","))
	out := map[string]InstanceFacts{}
	for _, id := range ids {
		if f, ok := i.facts[id]; ok {
			out[id] = f
		}
	}
	return out, nil
}

func (i *instances) PrivateIPs(_ context.Context, ids []string) (map[string]string, error) {
	i.c.add("ec2 addresses %s", strings.Join(ids, ","))
	out := map[string]string{}
	for _, id := range ids {
		if ip, ok := i.ips[id]; ok {
			out[id] = ip
			continue
		}
		if st, ok := i.states[id]; ok && st == "terminated" || i.e == nil {
			continue
		}
		for _, n := range i.e.nodes {
			if n.Labels[names.EngineLabelInstanceID] == id && n.State != "down" {
				out[id] = nodeAddr(*n)
			}
		}
	}
	return out, nil
}

func (i *instances) States(_ context.Context, ids []string) (map[string]string, error) {
	i.c.add("ec2 describe %s", strings.Join(ids, ","))
	out := map[string]string{}
	for _, id := range ids {
		if s, ok := i.states[id]; ok {
			out[id] = s
		}
	}
	return out, nil
}

type backups struct {
	c        *calls
	restored []byte
	// onRestore plays the engine's swarm as restored.
	onRestore func()
}

func (b *backups) Archive(context.Context) ([]byte, error) {
	b.c.add("archive")
	return []byte("swarm.tar.gz"), nil
}
func (b *backups) Restore(_ context.Context, a []byte, addr string) error {
	b.c.add("restore %s", addr)
	b.restored = a
	if b.onRestore != nil {
		b.onRestore()
	}
	return nil
}
func (b *backups) Resume() {}

type network struct {
	c       *calls
	answers map[string]bool
	rules   map[string]string
}

func (n *network) Answers(_ context.Context, addr string) bool { return n.answers[addr] }
func (n *network) Redirect(_ context.Context, known, real string) (bool, error) {
	if n.rules[known] == real {
		return false, nil
	}
	n.c.add("redirect %s %s", known, real)
	n.rules[known] = real
	return true, nil
}
