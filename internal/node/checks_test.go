package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

const forger = "AIDAFORGEDSENDER0001"

// putFrom puts a message the queue records as sent by sender.
func (l *lab) putFrom(id, body, sender string) {
	l.q.put(id, body, l.clock.now)
	l.q.msgs[len(l.q.msgs)-1].Sender = sender
}

// A termination notice for an instance Auto Scaling does not show waiting
// in that group's hook is dropped: nothing drained, removed or completed,
// and the log names the sender.
func TestForgedTerminationDropped(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state [2]string
	}{
		{"in service", [2]string{"core-web-Group-1", "InService"}},
		{"in no group", [2]string{"", ""}},
		{"waiting in another group", [2]string{"core-other-Group-1", "Terminating:Wait"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			l.e.addWorker(nodeID("w1"), iW1)
			l.s.lifecycle = map[string][2]string{iW1: tc.state}
			l.putFrom("n1", terminationBody("core-web-Group-1", iW1, start), forger)
			l.round()
			l.round()
			if l.c.index("docker node") >= 0 || l.c.index("complete") >= 0 || l.c.index("sqs delete n1") < 0 {
				t.Errorf("calls %v", l.c.l)
			}
			if !l.logged("dropping the termination notice of "+iW1) || !l.logged("sent by "+forger) {
				t.Errorf("logs %v", l.logs)
			}
		})
	}
	// The leader's own instance: not demoted on a forged notice.
	l := newLab(t)
	l.e.addManager(nodeID("m2"), "i-0000000000000f002", "10.0.1.2", false)
	l.s.lifecycle = map[string][2]string{iM1: {"core-ManagerGroup-1", "InService"}}
	l.putFrom("n1", terminationBody("core-ManagerGroup-1", iM1, start), forger)
	l.round()
	l.round()
	if l.c.index("docker node demote") >= 0 || l.c.index("archive") >= 0 && l.c.index("complete") >= 0 {
		t.Errorf("acted on a forged notice of the leader's own instance: %v", l.c.l)
	}
}

// Every decision on a message is logged with the sender the queue
// recorded.
func TestSenderLogged(t *testing.T) {
	l := newLab(t)
	w1 := l.e.addWorker(nodeID("w1"), iW1)
	l.round()
	l.putFrom("r1", requestBody(t, "core", iW1, "drain", l.clock.now), "AROAOPERATOR:alice")
	l.putFrom("r2", "<html>", "")
	l.round()
	l.round()
	var drained, junk bool
	for _, s := range l.logs {
		drained = drained || strings.Contains(s, "set node "+w1.ID) && strings.Contains(s, "sent by AROAOPERATOR:alice")
		junk = junk || strings.Contains(s, "ignoring a message") && strings.Contains(s, "sent by a sender the queue did not record")
	}
	if !drained || !junk {
		t.Errorf("logs %v", l.logs)
	}
}

// A spot or rebalance warning its node's agent does not confirm waits
// ConfirmWait and is dropped, nothing drained; a confirmation of another
// instance, or too far in time, does not count; one that confirms drains.
func TestInterruptionNeedsTheAgentsConfirmation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		confirm func(l *lab)
		drains  bool
	}{
		{"none", func(*lab) {}, false},
		{"another instance's", func(l *lab) { l.confirm(iW2, wire.InterruptionSpot, start.Add(2*time.Minute)) }, false},
		{"written under another instance's key", func(l *lab) {
			c := wire.InterruptionConfirmation{InstanceID: iW1, Kind: wire.InterruptionSpot, Time: start}
			l.b.set(names.InterruptionPrefix+"/AROAAGENTROLE:"+iW2, c.Marshal())
		}, false},
		{"a day old", func(l *lab) { l.confirm(iW1, wire.InterruptionSpot, start.Add(-24*time.Hour)) }, false},
		{"a rebalance for a spot warning", func(l *lab) { l.confirm(iW1, wire.InterruptionRebalance, start) }, false},
		{"confirmed late, within the wait", func(l *lab) {
			l.clock.tick = func() {
				if l.clock.now.After(start.Add(time.Minute)) && l.b.objects[names.InterruptionPrefix+"/AROAAGENTROLE:"+iW1] == nil {
					l.confirm(iW1, wire.InterruptionSpot, start.Add(2*time.Minute))
				}
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			w1 := l.e.addWorker(nodeID("w1"), iW1)
			l.e.addWorker(nodeID("w2"), iW2)
			tc.confirm(l)
			l.putFrom("n1", interruptionBody(wire.DetailSpot, iW1), forger)
			for range 20 {
				l.round()
				l.clock.now = l.clock.now.Add(10 * time.Second)
				if tc.confirm != nil && l.clock.tick != nil {
					l.clock.tick()
				}
			}
			drained := l.c.index("docker node update --availability drain "+w1.ID) >= 0
			if drained != tc.drains || l.c.index("sqs delete n1") < 0 {
				t.Fatalf("drained %v, want %v: %v", drained, tc.drains, l.c.l)
			}
			if !tc.drains && (!l.logged("its agent did not confirm it from the instance metadata within 1m30s; nothing is drained") || !l.logged("sent by "+forger)) {
				t.Errorf("logs %v", l.logs)
			}
		})
	}
}

// A node drained on a confirmed warning whose instance runs on, InService,
// is set active again after InterruptedHold; one whose instance is
// terminating stays drained for the hook.
func TestInterruptedNodeReleased(t *testing.T) {
	for _, tc := range []struct {
		name    string
		state   [2]string
		ec2     string
		release bool
	}{
		{"runs on", [2]string{"core-web-Group-1", "InService"}, "running", true},
		{"terminating", [2]string{"core-web-Group-1", "Terminating:Wait"}, "running", false},
		{"stopped", [2]string{"core-web-Group-1", "InService"}, "stopped", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			w1 := l.e.addWorker(nodeID("w1"), iW1)
			l.confirm(iW1, wire.InterruptionRebalance, start)
			l.putFrom("n1", interruptionBody(wire.DetailRebalance, iW1), "AIDAEVENTBRIDGE")
			l.round()
			l.round()
			if l.e.nodes[w1.ID].Availability != wire.AvailabilityDrain {
				t.Fatalf("not drained: %v", l.c.l)
			}
			l.s.lifecycle = map[string][2]string{iW1: tc.state}
			l.ec2.states[iW1] = tc.ec2
			l.clock.now = start.Add(l.m.T.InterruptedHold - time.Minute)
			l.round()
			if l.e.nodes[w1.ID].Availability != wire.AvailabilityDrain {
				t.Fatalf("set active within the hold: %v", l.c.l)
			}
			l.clock.now = start.Add(l.m.T.InterruptedHold + time.Minute)
			l.round()
			active := l.e.nodes[w1.ID].Availability == wire.AvailabilityActive
			if active != tc.release {
				t.Fatalf("active %v, want %v: %v %v", active, tc.release, l.c.l, l.logs)
			}
			if _, kept := l.b.objects[interruptedKey(iW1)]; kept == tc.release {
				t.Errorf("record kept %v", kept)
			}
		})
	}
}

// notices is a fake instance metadata.
type notices struct {
	c  wire.InterruptionConfirmation
	ok bool
}

func (n *notices) Interruption(context.Context, string) (wire.InterruptionConfirmation, bool) {
	return n.c, n.ok
}

// The agent writes what its metadata says, once per notice, at its key.
func TestInterruptionWatch(t *testing.T) {
	c := &calls{}
	clk := &clock{now: start}
	b := newBucket(c, clk)
	md := &notices{}
	asked := 0
	w := &InterruptionWatch{InstanceID: iW1, Metadata: md, Bucket: b, Clock: clk, Every: 5 * time.Second,
		Key: func(context.Context) (string, error) {
			asked++
			return names.InterruptionPrefix + "/AROAAGENTROLE:" + iW1, nil
		},
		Log: func(string, ...any) {}}
	ctx := context.Background()
	key := names.InterruptionPrefix + "/AROAAGENTROLE:" + iW1
	w.Check(ctx)
	if len(b.objects) != 0 || asked != 0 {
		t.Fatalf("wrote without a notice: %v", c.l)
	}
	md.c, md.ok = wire.InterruptionConfirmation{InstanceID: iW1, Kind: wire.InterruptionRebalance, Time: start}, true
	w.Check(ctx)
	w.Check(ctx)
	md.c = wire.InterruptionConfirmation{InstanceID: iW1, Kind: wire.InterruptionSpot, Action: "terminate", Time: start.Add(2 * time.Minute)}
	w.Check(ctx)
	if c.count("s3 put "+key) != 2 || asked != 1 {
		t.Fatalf("puts %v, key asked %d times", c.l, asked)
	}
	got, err := wire.ParseInterruptionConfirmation(b.objects[key])
	if err != nil || got.Kind != wire.InterruptionSpot || !got.Confirms(iW1, wire.InterruptionSpot, start, confirmWindow) {
		t.Errorf("%+v %v", got, err)
	}
}
