package node

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// An agent keeps its node in the cluster's swarm: it joins through a
// published manager with the published worker token, checks that the
// CA certificate it trusts is the swarm's (the status snapshot's digest,
// or the token's), joins again a swarm that was initialised anew or that
// has not shown it Ready for a while, and signals CloudFormation once
// Ready (or, not Ready within JoinTimeout, its failure).

// AgentEngine is what an agent needs of its engine.
type AgentEngine interface {
	Self(ctx context.Context) (Self, error)
	Join(ctx context.Context, token, advertise, remote string) error
	Leave(ctx context.Context) error
	// TrustedCA is the swarm root CA certificate the engine self describes
	// trusts (PEM); "" outside a swarm. It takes the caller's Self, so
	// that one answer of the engine (an /info, which costs the engine
	// two program runs) serves a whole check.
	TrustedCA(ctx context.Context, self Self) (string, error)
}

// Reader reads the cluster bucket.
type Reader interface {
	Get(ctx context.Context, key string) ([]byte, Object, error)
}

// Lifecycle is what an agent needs of its instance's metadata and of
// CloudFormation.
type Lifecycle interface {
	// Terminating tells whether Auto Scaling is terminating the instance.
	Terminating(ctx context.Context) bool
	// Signal signals the group's resource, success or failure with reason.
	Signal(ctx context.Context, success bool, reason string) error
}

// AgentTimings are an agent's; AgentDefaults a node's.
type AgentTimings struct {
	JoinTimeout, RetryMin, RetryMax, CheckEvery, RejoinAfter, StaleAfter time.Duration
	// InterruptionEvery: the instance metadata's interruption notices are
	// read this often (a spot warning leaves two minutes).
	InterruptionEvery time.Duration
}

// AgentDefaults are the timings of a node.
func AgentDefaults() AgentTimings {
	return AgentTimings{JoinTimeout: 8 * time.Minute, RetryMin: 2 * time.Second, RetryMax: 30 * time.Second,
		CheckEvery: 30 * time.Second, RejoinAfter: 2 * time.Minute, StaleAfter: wire.StaleAfter, InterruptionEvery: 5 * time.Second}
}

// Agent is an agent node.
type Agent struct {
	Cluster, Group, InstanceType, Address string
	ManagersKey                           string // from the core's join contract
	Engine                                AgentEngine
	Bucket                                Reader
	Node                                  Lifecycle
	Clock                                 Clock
	Log                                   Logger
	State                                 State
	T                                     AgentTimings

	lastReady time.Time
	pause     time.Duration
	snap      *wire.Snapshot
}

type agentTimes struct {
	Started time.Time `json:"started"`
	Joined  time.Time `json:"joined"`
	Signal  bool      `json:"signalled"`
}

// Run keeps the node in the swarm until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	var st agentTimes
	if _, err := a.State.Load("agent", &st); err != nil {
		return err
	}
	if st.Started.IsZero() {
		st.Started = a.Clock.Now()
	}
	if self, err := a.Engine.Self(ctx); err == nil && self.LocalState == StateActive && st.Joined.IsZero() {
		st.Joined = a.Clock.Now()
	}
	if err := a.State.Save("agent", st); err != nil {
		return err
	}
	a.pause = a.T.RetryMin
	quiet := false
	for ctx.Err() == nil {
		if a.Node.Terminating(ctx) {
			if !quiet {
				a.Log("the instance is being terminated: no longer joining the swarm")
				quiet = true
			}
			_ = a.Clock.Sleep(ctx, a.T.CheckEvery)
			continue
		}
		if a.converge(ctx) {
			a.signal(ctx, true, "agent ready")
			a.pause = a.T.RetryMin
			_ = a.Clock.Sleep(ctx, a.T.CheckEvery)
			continue
		}
		a.State.Load("agent", &st)
		if a.Clock.Now().Sub(st.Started) >= a.T.JoinTimeout {
			a.signal(ctx, false, fmt.Sprintf("clusterctl: agent not Ready in the swarm within %d s", int(a.T.JoinTimeout.Seconds())))
		}
		_ = a.Clock.Sleep(ctx, a.pause)
		a.pause = min(a.pause*2, a.T.RetryMax)
	}
	return ctx.Err()
}

// signal signals CloudFormation once.
func (a *Agent) signal(ctx context.Context, success bool, reason string) {
	var st agentTimes
	a.State.Load("agent", &st)
	if st.Signal {
		return
	}
	if err := a.Node.Signal(ctx, success, reason); err != nil {
		a.Log("signalling the stack failed: %v", err)
		return
	}
	st.Signal = true
	_ = a.State.Save("agent", st)
}

// freshStatus reads the status snapshot; nil when there is none this
// agent can trust now.
func (a *Agent) freshStatus(ctx context.Context) *wire.Snapshot {
	b, _, err := a.Bucket.Get(ctx, names.StatusKey)
	if err != nil {
		return nil
	}
	s, err := wire.ParseSnapshot(names.StatusKey, b, a.Cluster)
	if err != nil {
		return nil
	}
	if age := a.Clock.Now().Sub(s.Time); age > a.T.StaleAfter || age < -a.T.StaleAfter {
		return nil
	}
	return s
}

// inSwarm tells whether the engine, as self says, is in the swarm whose
// CA digest is want (the snapshot's) or, want "", whose token is token.
func (a *Agent) inSwarm(ctx context.Context, self Self, want, token string) bool {
	if self.LocalState != StateActive {
		return false
	}
	ca, err := a.Engine.TrustedCA(ctx, self)
	if err != nil || ca == "" {
		return false
	}
	if want != "" {
		return Digest([]byte(ca)) == want
	}
	return CAMatchesToken(token, ca)
}

// converge makes one step towards Ready; true when the node is (as the
// swarm shows it in a fresh snapshot, or as its engine says when there is
// none). The engine is asked what it is once per step: its state, its
// CA and its node id are one answer's, never two moments'.
func (a *Agent) converge(ctx context.Context) bool {
	self, err := a.Engine.Self(ctx)
	if err != nil {
		a.Log("asking the engine what it is: %v", err)
		return false
	}
	snap := a.freshStatus(ctx)
	if snap == nil || !a.inSwarm(ctx, self, snap.CADigest, "") {
		token, err := a.workerToken(ctx)
		if err != nil {
			a.Log("waiting for the join material in %s/: %v", names.SwarmPrefix, err)
			return false
		}
		if !a.inSwarm(ctx, self, "", token) {
			if self.LocalState == StatePending {
				a.Log("the last join did not complete: trying again")
				_ = a.Engine.Leave(ctx)
				return false
			}
			a.join(ctx, token)
			return false
		}
	}
	if !ValidNodeID(self.NodeID) {
		return false
	}
	if snap == nil {
		return true
	}
	var st agentTimes
	a.State.Load("agent", &st)
	state := "absent"
	for _, n := range snap.Nodes {
		if n.NodeID == self.NodeID {
			state = n.State
			break
		}
	}
	switch {
	case state == "ready":
		a.lastReady = a.Clock.Now()
		return true
	case snap.Time.Before(st.Joined):
		return false // published before this node joined
	}
	if a.lastReady.Before(st.Joined) {
		a.lastReady = st.Joined
	}
	if a.Clock.Now().Sub(a.lastReady) >= a.T.RejoinAfter {
		a.Log("the swarm has not shown this node Ready for %s (%s): joining again", a.T.RejoinAfter, state)
		if token, err := a.workerToken(ctx); err == nil {
			a.join(ctx, token)
		}
	}
	return false
}

func (a *Agent) workerToken(ctx context.Context) (string, error) {
	b, _, err := a.Bucket.Get(ctx, names.SwarmPrefix+"/"+names.SwarmToken)
	if err != nil {
		return "", err
	}
	t := strings.TrimSpace(string(b))
	if !ValidToken(t) {
		return "", fmt.Errorf("the published worker token is not of the shape of one")
	}
	return t, nil
}

// join joins the swarm through the first published manager that takes
// this node, with the published CA certificate only if it is the one the
// token names.
func (a *Agent) join(ctx context.Context, token string) {
	ca, _, err := a.Bucket.Get(ctx, names.SwarmPrefix+"/"+names.SwarmCA)
	if err != nil {
		return
	}
	if !CAMatchesToken(token, string(ca)) {
		a.Log("the published CA certificate does not match the join token (published by another swarm, or being replaced)")
		return
	}
	var managers []string
	if b, _, err := a.Bucket.Get(ctx, a.ManagersKey); err == nil {
		for _, m := range strings.Fields(string(b)) {
			if ValidManager(m) {
				managers = append(managers, m)
			}
		}
	}
	if len(managers) == 0 {
		a.Log("no manager published in %s yet", a.ManagersKey)
		return
	}
	if self, err := a.Engine.Self(ctx); err == nil && self.LocalState != StateInactive {
		a.Log("leaving the swarm this node was in")
		_ = a.Engine.Leave(ctx)
	}
	for _, m := range managers {
		err := a.Engine.Join(ctx, token, a.Address, m)
		if err == nil {
			a.Log("joined the swarm at %s as a worker of group %s (%s)", m, a.Group, a.InstanceType)
			var st agentTimes
			a.State.Load("agent", &st)
			st.Joined = a.Clock.Now()
			_ = a.State.Save("agent", st)
			a.pause = a.T.RetryMin
			return
		}
		a.Log("joining the swarm at %s: %v", m, err)
		if self, err := a.Engine.Self(ctx); err == nil && self.LocalState == StatePending {
			return
		}
	}
}

// Instance is what an agent's instance metadata says of it.
type Instance struct {
	ID, Type, Lifecycle, Zone, Address string
}

var instanceShapes = []struct {
	what string
	re   *regexp.Regexp
	of   func(Instance) string
}{
	{"instance-id", regexp.MustCompile(`^i-[0-9a-f]{8,17}$`), func(i Instance) string { return i.ID }},
	{"instance-type", regexp.MustCompile(`^[a-z][a-z0-9-]*\.[a-z0-9]+$`), func(i Instance) string { return i.Type }},
	{"lifecycle", regexp.MustCompile(`^[a-z][a-z-]{0,31}$`), func(i Instance) string { return i.Lifecycle }},
	{"zone", regexp.MustCompile(`^[a-z]{2}-[a-z0-9-]+[a-z]$`), func(i Instance) string { return i.Zone }},
}

// Check refuses metadata of another shape than EC2's before any of it
// reaches daemon.json, a tag or a swarm command.
func (i Instance) Check() error {
	for _, s := range instanceShapes {
		if v := s.of(i); !s.re.MatchString(v) {
			return fmt.Errorf("refusing %s %.60q from the instance metadata: not the shape of one", s.what, v)
		}
	}
	if !ValidIPv4(i.Address) {
		return fmt.Errorf("refusing local-ipv4 %.60q from the instance metadata: not the shape of one", i.Address)
	}
	return nil
}

// EngineLabels are the engine labels of an agent of group with the
// operator's labels: placement by group, instance type, lifecycle, zone,
// and the instance by which the managers find its node.
func EngineLabels(group string, labels map[string]string, i Instance) []string {
	var keys, out []string
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+labels[k])
	}
	return append(out, names.EngineLabelGroup+"="+group, names.EngineLabelInstanceType+"="+i.Type, names.EngineLabelLifecycle+"="+i.Lifecycle,
		names.EngineLabelZone+"="+i.Zone, names.EngineLabelInstanceID+"="+i.ID)
}

// EngineLogs is where the engine ships its containers' output: the
// cluster's log group, with the awslogs driver.
type EngineLogs struct {
	Group, Region, InstanceID string
	// Manager says the node is a manager: its streams start with the
	// managers' prefix, an agent's with the agents' (each role may write
	// its own only).
	Manager bool
	// Endpoint is the CloudWatch Logs endpoint; "" for AWS's (tests set
	// one).
	Endpoint string
}

// DaemonJSON is the engine's configuration: labels, and with logs the
// awslogs driver.
// A swarm task logs to stream <role>/service/<service>/<task>@<instance>,
// any other container to <role>/container/<name>@<instance> (role: the
// node's, names.LogStreamPrefix); non-blocking with a bounded buffer, so
// that a CloudWatch outage never blocks a container.
func DaemonJSON(labels []string, logs *EngineLogs) []byte {
	conf := map[string]any{"labels": labels}
	if logs != nil {
		opts := map[string]string{
			"awslogs-group": logs.Group, "awslogs-region": logs.Region, "mode": "non-blocking", "max-buffer-size": "4m",
			"tag": names.LogStreamPrefix(logs.Manager) + `{{with index .ContainerLabels "com.docker.swarm.service.name"}}` + names.LogStreamService + "{{.}}{{else}}" +
				strings.TrimSuffix(names.LogStreamContainer, "/") + "{{end}}/{{.Name}}@" + logs.InstanceID,
		}
		if logs.Endpoint != "" {
			opts["awslogs-endpoint"] = logs.Endpoint
		}
		conf["log-driver"], conf["log-opts"] = "awslogs", opts
	}
	b, _ := json.MarshalIndent(conf, "", "  ")
	return append(b, '\n')
}

// InstanceTags are the tags an agent puts on its own instance: what it
// really is (in a mixed group, the instance type is too).
func InstanceTags(i Instance) map[string]string {
	return map[string]string{names.TagInstanceType: i.Type, names.TagLifecycle: i.Lifecycle, names.TagZone: i.Zone}
}
