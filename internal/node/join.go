package node

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
)

// joining is the swarm's join material: the leader publishes it for
// newcomers, every manager reaches the others through the aliases in it,
// and a manager joins the swarm through it (at boot, after a restore,
// when Recovery has it rejoin).
type joining struct {
	Engine  Engine
	Bucket  Bucket
	Network Network
	State   State
	Clock   Clock
	Log     Logger
	Address string // this node's private IPv4

	// republish: the first round this service leads publishes the join
	// material whatever was last recorded, as every boot does (the
	// objects may have been removed or overwritten meanwhile).
	republish bool
}

// joinMaterial is what the leader publishes for newcomers.
type joinMaterial struct {
	worker, manager, ca string
	managers, aliases   []string
}

// read reads the swarm's join material from the engine: each manager at
// the address it has; and, where the swarm knows it by another (a swarm
// restored onto another host keeps the lost host's address), that pair,
// for the managers to reach it (applyAliases). self is what the engine
// says of itself.
func (jn *joining) read(ctx context.Context, self Self) (joinMaterial, error) {
	var j joinMaterial
	var err error
	if j.worker, j.manager, err = jn.Engine.JoinTokens(ctx); err != nil {
		return j, err
	}
	if j.ca, err = jn.Engine.CA(ctx); err != nil {
		return j, err
	}
	nodes, err := jn.Engine.Nodes(ctx)
	if err != nil {
		return j, err
	}
	for _, n := range nodes {
		if n.Role != "manager" || !n.Manager() {
			continue
		}
		real, known := n.Addr, host(n.ManagerAddr)
		if n.ID == self.NodeID {
			real = jn.Address
		}
		if n.Reachability == "reachable" {
			at := real
			if at == "" || at == "0.0.0.0" {
				at = known
			}
			j.managers = append(j.managers, fmt.Sprintf("%s:%d", at, SwarmPort))
		}
		if real != "" && real != "0.0.0.0" && known != real {
			j.aliases = append(j.aliases, known+" "+real)
		}
	}
	sort.Strings(j.managers)
	sort.Strings(j.aliases)
	for _, a := range j.managers {
		if !ValidManager(a) {
			return j, fmt.Errorf("a manager at %q", a)
		}
	}
	for _, a := range j.aliases {
		k, r, _ := strings.Cut(a, " ")
		if !ValidIPv4(k) || !ValidIPv4(r) {
			return j, fmt.Errorf("a manager known as %q", a)
		}
	}
	if !ValidToken(j.worker) || !ValidToken(j.manager) {
		return j, fmt.Errorf("the engine's join tokens are not of the shape of one")
	}
	if !CAMatchesToken(j.worker, j.ca) {
		return j, fmt.Errorf("the swarm's CA certificate does not match the digest in its join token")
	}
	return j, nil
}

func lines(l []string) []byte {
	if len(l) == 0 {
		return nil
	}
	return []byte(strings.Join(l, "\n") + "\n")
}

// round is the leader's part, every round: the join material when it
// changed, and whatever was last published when republish asks. self is
// what the engine said of itself at the start of the round.
func (jn *joining) round(ctx context.Context, self Self) error {
	if err := jn.publishAs(ctx, self, jn.republish); err != nil {
		return err
	}
	jn.republish = false
	return nil
}

// publish publishes the swarm's join material when it is not what was
// last published (always with force): the CA certificate, the manager
// token (for the managers only), the managers' addresses, and last the
// worker token, which agents wait for.
func (jn *joining) publish(ctx context.Context, force bool) error {
	self, err := jn.Engine.Self(ctx)
	if err != nil {
		return err
	}
	return jn.publishAs(ctx, self, force)
}

// publishAs is publish, with what the engine said of itself.
func (jn *joining) publishAs(ctx context.Context, self Self, force bool) error {
	j, err := jn.read(ctx, self)
	if err != nil {
		return err
	}
	sum := Digest([]byte(strings.Join([]string{j.worker, j.manager, j.ca, string(lines(j.managers)), string(lines(j.aliases))}, "\x00")))
	var last string
	if _, err := jn.State.Load("published", &last); err != nil {
		return err
	}
	if !force && last == sum {
		return nil
	}
	for _, o := range []struct {
		key, kind string
		body      []byte
	}{
		{names.SwarmPrefix + "/" + names.SwarmCA, "application/x-pem-file", []byte(j.ca)},
		{names.ControlKey(names.ManagerToken), "text/plain", []byte(j.manager)},
		{names.ControlKey(names.ManagerAliases), "text/plain", lines(j.aliases)},
		{names.ManagersKey, "text/plain", lines(j.managers)},
		{names.SwarmPrefix + "/" + names.SwarmToken, "text/plain", []byte(j.worker)},
	} {
		if err := jn.Bucket.Put(ctx, o.key, o.body, o.kind, nil); err != nil {
			return err
		}
	}
	if err := jn.State.Save("published", sum); err != nil {
		return err
	}
	jn.Log("published the join material (%d managers)", len(j.managers))
	return nil
}

// republished publishes the join material of a swarm this manager has
// just restored or rejoined, and again in the first round it leads.
func (jn *joining) republished(ctx context.Context) {
	jn.republish = true
	if err := jn.publish(ctx, true); err != nil {
		jn.Log("publishing the join material failed: %v", err)
	}
}

// applyAliases makes this node reach a manager that the swarm knows by an
// address it no longer has: Docker keeps a manager's address when its
// swarm is restored onto another host, and tells the other managers to
// reach it there.
func (jn *joining) applyAliases(ctx context.Context) error {
	b, _, err := jn.Bucket.Get(ctx, names.ControlKey(names.ManagerAliases))
	if errors.Is(err, ErrMissing) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(b), "\n") {
		known, real, ok := strings.Cut(strings.TrimSpace(l), " ")
		if !ok || !ValidIPv4(known) || !ValidIPv4(real) {
			continue
		}
		added, err := jn.Network.Redirect(ctx, known, real)
		if err != nil {
			return err
		}
		if added {
			jn.Log("the swarm knows manager %s as %s: reaching it there", real, known)
		}
	}
	return nil
}

// joinManagers joins the swarm as a manager through the first published
// manager that takes this node.
func (jn *joining) joinManagers(ctx context.Context) bool {
	token, _, err := jn.Bucket.Get(ctx, names.ControlKey(names.ManagerToken))
	if err != nil || !ValidToken(string(token)) {
		return false
	}
	list, _, err := jn.Bucket.Get(ctx, names.ManagersKey)
	if err != nil {
		return false
	}
	for _, a := range strings.Fields(string(list)) {
		if !ValidManager(a) || a == fmt.Sprintf("%s:%d", jn.Address, SwarmPort) {
			continue
		}
		err := jn.Engine.Join(ctx, string(token), jn.Address, a)
		if err == nil || jn.joinedLater(ctx) {
			jn.Log("joined the swarm at %s as a manager", a)
			return true
		}
		jn.Log("joining the swarm at %s: %v", a, err)
		_ = jn.Engine.Leave(ctx)
	}
	return false
}

// joinedLater waits a while for a join that goes on in the background (the
// managers take their time to agree on a new member).
func (jn *joining) joinedLater(ctx context.Context) bool {
	for end := jn.Clock.Now().Add(time.Minute); ; {
		self, err := jn.Engine.Self(ctx)
		if err != nil || self.LocalState != StatePending || !jn.Clock.Now().Before(end) {
			return err == nil && self.LocalState == StateActive
		}
		if jn.Clock.Sleep(ctx, 2*time.Second) != nil {
			return false
		}
	}
}
