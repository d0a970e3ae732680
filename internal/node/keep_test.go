package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
)

// Down nodes are removed after the grace period when their instance is
// terminated or gone, or when a Ready node of the same instance replaced
// them; a manager is demoted first; a Down node whose instance runs stays.
func TestDeadNodes(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	gone := l.e.addWorker(nodeID("d1"), "i-00000000000000d01")
	term := l.e.addManager(nodeID("d2"), "i-00000000000000d02", "10.0.1.9", false)
	alive := l.e.addWorker(nodeID("d3"), "i-00000000000000d03")
	old := l.e.addWorker(nodeID("d4"), iW2)
	l.e.addWorker(nodeID("n4"), iW2) // Ready, same instance: rejoined
	for _, n := range []*Node{gone, term, alive, old} {
		n.State = "down"
	}
	term.Reachability = "unreachable"
	l.ec2.states = map[string]string{"i-00000000000000d02": "terminated", "i-00000000000000d03": "running"}
	if err := l.m.parts().guard.clean(ctx); err != nil {
		t.Fatal(err)
	}
	if l.c.index("docker node") >= 0 || l.c.index("ec2") >= 0 {
		t.Fatalf("acted at once: %v", l.c.l)
	}
	// Within the grace period: nothing.
	l.clock.now = start.Add(l.m.T.DeadGrace - time.Second)
	l.m.parts().guard.clean(ctx)
	if l.c.index("docker node") >= 0 {
		t.Fatalf("acted within the grace: %v", l.c.l)
	}
	l.clock.now = start.Add(l.m.T.DeadGrace + l.m.T.DeadEvery)
	if err := l.m.parts().guard.clean(ctx); err != nil {
		t.Fatal(err)
	}
	l.order("ec2 describe i-00000000000000d01,i-00000000000000d02,i-00000000000000d03", "docker node rm "+gone.ID)
	l.order("docker node demote "+term.ID, "docker node rm "+term.ID)
	if l.c.index("docker node rm "+old.ID) < 0 || l.c.index("docker node rm "+alive.ID) >= 0 || l.c.index("docker node rm "+nodeID("n4")) >= 0 {
		t.Errorf("calls %v", l.c.l)
	}
	if !l.logged("(replaced)") || !l.logged("(gone)") || !l.logged("(terminated)") {
		t.Errorf("logs %v", l.logs)
	}
	// A node back up is forgotten: Down again, its grace starts over.
	alive.State = "ready"
	l.clock.now = l.clock.now.Add(l.m.T.DeadEvery)
	l.m.parts().guard.clean(ctx)
	if files, _ := l.m.State.List(downDir); len(files) != 0 {
		t.Errorf("still counted Down: %v", files)
	}
}

// The join material is published once, again when it changes, never when
// its token and CA are of different swarms; a manager the swarm knows by
// another address is published with the pair.
func TestJoinMaterial(t *testing.T) {
	l := newLab(t)
	ctx := context.Background()
	m2 := l.e.addManager(nodeID("m2"), "i-0000000000000f002", "10.0.1.7", false)
	m2.ManagerAddr = "10.0.1.2:2377" // restored onto another host
	l.e.addManager(nodeID("m3"), "i-0000000000000f003", "10.0.1.3", false).Reachability = "unreachable"
	if err := l.m.parts().join.publish(ctx, false); err != nil {
		t.Fatal(err)
	}
	l.order("s3 put join/swarm/ca.pem", "s3 put control/manager-token", "s3 put control/manager-aliases", "s3 put join/swarm/managers", "s3 put join/swarm/worker-token")
	if got := string(l.b.objects[names.ManagersKey]); got != "10.0.1.1:2377\n10.0.1.7:2377\n" {
		t.Errorf("managers %q", got)
	}
	if got := string(l.b.objects[names.ControlKey(names.ManagerAliases)]); got != "10.0.1.2 10.0.1.7\n" {
		t.Errorf("aliases %q", got)
	}
	n := len(l.c.l)
	l.m.parts().join.publish(ctx, false)
	if len(l.c.l) != n {
		t.Errorf("published again unchanged: %v", l.c.l[n:])
	}
	l.m.parts().join.publish(ctx, true)
	if len(l.c.l) != n+5 {
		t.Errorf("not published when forced: %v", l.c.l[n:])
	}
	// Another swarm's CA with this token: nothing published.
	other, _, _ := swarmCA(t, "two")
	l.e.ca = other
	n = len(l.c.l)
	if err := l.m.parts().join.publish(ctx, true); err == nil || !strings.Contains(err.Error(), "does not match") || len(l.c.l) != n {
		t.Errorf("published a mismatched CA: %v, %v", err, l.c.l[n:])
	}
	// Managers apply the pairs published.
	l.e.ca = string(l.b.objects["join/swarm/ca.pem"])
	l.m.parts().join.applyAliases(ctx)
	l.m.parts().join.applyAliases(ctx)
	if l.c.count("redirect 10.0.1.2 10.0.1.7") != 1 {
		t.Errorf("redirects %v", l.c.l)
	}
}

func TestTokenDigest(t *testing.T) {
	ca, w, _ := swarmCA(t, "x")
	if !CAMatchesToken(w, ca) || CAMatchesToken(w, ca+"\n") {
		t.Error("digest of the token")
	}
	fips := strings.Replace(w, "SWMTKN-1-", "SWMTKN-2-1-", 1)
	if !CAMatchesToken(fips, ca) {
		t.Error("a FIPS token")
	}
	for _, bad := range []string{"", "SWMTKN-1-abc-def", "SWMTKN-3-" + w[9:]} {
		if ValidToken(bad) || CAMatchesToken(bad, ca) {
			t.Errorf("%q taken", bad)
		}
	}
}

// A housekeeping service that starts (every boot, every restart) publishes
// the join material in its first round as the leader, even when its state
// says it was published: the objects may have been removed meanwhile.
// Later rounds publish only what changed.
func TestJoinMaterialRepublishedAtStart(t *testing.T) {
	l := newLab(t)
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.m.parts().join.publish(ctx, false); err != nil {
		t.Fatal(err)
	}
	delete(l.b.objects, names.SwarmPrefix+"/"+names.SwarmToken)
	rounds := 0
	l.m.Log = func(format string, args ...any) {
		if strings.HasPrefix(format, "published the join material") {
			rounds++
			cancel() // the service stops after this round
		}
	}
	_ = l.m.Housekeeping(ctx)
	if _, ok := l.b.objects[names.SwarmPrefix+"/"+names.SwarmToken]; !ok || rounds != 1 {
		t.Fatalf("the worker token not published again at start (%d publications)", rounds)
	}
	l.m.Round(context.Background())
	if rounds != 1 {
		t.Errorf("published again in a later round with nothing changed: %d", rounds)
	}
}
