package bootstrap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// instanceTags returns the tags of an instance as moto holds them.
func (tc *testCluster) instanceTags(t *testing.T, id string) map[string]string {
	t.Helper()
	out, err := tc.c.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(out.Reservations) == 0 || len(out.Reservations[0].Instances) == 0 {
		t.Fatalf("describing instance %s: %v", id, err)
	}
	tags := map[string]string{}
	for _, tg := range out.Reservations[0].Instances[0].Tags {
		tags[*tg.Key] = *tg.Value
	}
	return tags
}

// A spot node labels itself spot, so services can keep off it; EC2's
// interruption warning drains it at once, and its replicas run elsewhere
// well within the warning's two minutes; when Auto Scaling then terminates
// it, the termination notice removes it from the swarm and completes the
// lifecycle action, as for any termination. A rebalance recommendation
// drains at once too; a warning for an instance with no node in this
// swarm (another cluster's) changes nothing.
func TestSpotInterruption(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "spot")
	g := tc.deployGroup(t, "g", 2, spec.Labels{"role": "worker"})
	g.instances[0].lifecycle = "spot"
	control := tc.bootControl(t)
	spot, onDemand := g.bootAgent(t, 0), g.bootAgent(t, 1)
	for _, n := range []*enginetest.Node{spot, onDemand} {
		g.readyAgent(t, n)
	}
	spotID, onDemandID := g.instances[0].id, g.instances[1].id
	var spotNode, onDemandNode string
	eventually(t, 3*time.Minute, "both agents in the swarm", func() (bool, string) {
		nodes, err := trySwarmNodes(control)
		if err != nil {
			return false, err.Error()
		}
		s, o := byInstance(nodes, spotID), byInstance(nodes, onDemandID)
		if s == nil || o == nil {
			return false, fmt.Sprintf("%d nodes", len(nodes))
		}
		spotNode, onDemandNode = s.ID, o.ID
		return true, ""
	})

	// What each node is, as it says itself: engine labels and instance tags.
	for _, n := range swarmNodes(t, control) {
		want := map[string]string{spotNode: "spot", onDemandNode: "on-demand"}[n.ID]
		if want == "" {
			continue
		}
		l := n.Description.Engine.Labels
		if l[names.EngineLabelLifecycle] != want || l[names.EngineLabelZone] != availabilityZone || l[names.EngineLabelInstanceType] != "m5.large" {
			t.Errorf("node %s has labels %v, want lifecycle %s", n.ID, l, want)
		}
	}
	for id, want := range map[string]string{spotID: "spot", onDemandID: "on-demand"} {
		tags := tc.instanceTags(t, id)
		if tags[names.TagLifecycle] != want || tags[names.TagZone] != availabilityZone || tags[names.TagInstanceType] != "m5.large" {
			t.Errorf("instance %s has tags %v, want lifecycle %s", id, tags, want)
		}
	}

	// web anywhere in the group; api on on-demand nodes only.
	createService(t, control, "web", 4, "--constraint", "engine.labels.clusterctl.group==g")
	createService(t, control, "api", 2, "--constraint", "engine.labels.clusterctl.lifecycle==on-demand")
	eventually(t, 3*time.Minute, "web on both agents, api on the on-demand one", func() (bool, string) {
		web, api := runningOn(serviceTasks(t, control, "web")), runningOn(serviceTasks(t, control, "api"))
		return web[spotNode] > 0 && web[spotNode]+web[onDemandNode] == 4 && api[onDemandNode] == 2 && len(api) == 1,
			fmt.Sprintf("web %v, api %v", web, api)
	})

	// Another cluster's instance: nothing is drained.
	events := watchNodeEvents(t, control)
	tc.putNotice(t, enginetest.InterruptionWarning(account, region, "i-0123456789abcdef0"))
	eventually(t, 3*time.Minute, "the foreign warning leaves the queue", func() (bool, string) { return tc.queueEmpty(t) })
	for _, n := range swarmNodes(t, control) {
		if n.Spec.Role == "worker" && n.Spec.Availability != "active" {
			t.Errorf("node %s is %s after another cluster's warning", n.ID, n.Spec.Availability)
		}
	}

	// Forged: a warning for the spot node its instance metadata does not
	// give, and a termination notice for an instance Auto Scaling keeps in
	// service. Nothing is drained; the leader says so, with the sender.
	tc.putNotice(t, enginetest.InterruptionWarning(account, region, spotID))
	tc.putNotice(t, enginetest.TerminationNotice(account, region, enginetest.LifecycleAction{
		Token: "6ba7b810-9dad-11d1-80b4-00c04fd430c8", Group: g.asg, Hook: names.LifecycleHook(tc.name), InstanceID: onDemandID}))
	eventually(t, 3*time.Minute, "the forged notices leave the queue", func() (bool, string) { return tc.queueEmpty(t) })
	for _, n := range swarmNodes(t, control) {
		if n.Spec.Role == "worker" && n.Spec.Availability != "active" {
			t.Errorf("node %s is %s after forged notices", n.ID, n.Spec.Availability)
		}
	}
	for _, want := range []string{"dropping the spot notice of " + spotID + ": its agent did not confirm it", "dropping the termination notice of " + onDemandID, "sent by "} {
		if !strings.Contains(control.Logs(), want) {
			t.Errorf("the leader did not log %q:\n%s", want, control.Logs())
		}
	}

	// EC2 warns: the instance metadata says so, its agent confirms it, the
	// spot node is drained at once, and every replica runs on the other
	// agent within the two minutes the warning gives.
	at := watchCompletion(t, control, spotID, "web")
	spot.SetMetadata("spot/instance-action", fmt.Sprintf(`{"action": "terminate", "time": %q}`, time.Now().Add(2*time.Minute).UTC().Format(time.RFC3339)))
	tc.putNotice(t, enginetest.InterruptionWarning(account, region, spotID))
	eventually(t, 3*time.Minute, "web runs on the on-demand agent only", func() (bool, string) {
		web := runningOn(serviceTasks(t, control, "web"))
		return web[onDemandNode] == 4 && web[spotNode] == 0, fmt.Sprint(web)
	})
	if got := events.of(spotNode); !slices.Equal(got, []string{"drain"}) {
		t.Errorf("events of the spot node %v, want a drain only: it stays in the swarm until it terminates", got)
	}
	eventually(t, 2*time.Minute, "the warning leaves the queue", func() (bool, string) { return tc.queueEmpty(t) })

	// Auto Scaling terminates it: the termination notice removes the node
	// and completes the action.
	token := tc.terminate(t, g.asg, spotID, spot)
	if act := completed(t, token, 4*time.Minute); act.Result != "CONTINUE" {
		t.Errorf("lifecycle action %+v", act)
	}
	at.check(t, spotID, spotNode, map[string]int{"web": 4})
	tc.terminateInstance(t, spot)
	if n := byInstance(swarmNodes(t, control), spotID); n != nil {
		t.Errorf("the spot node is still in the swarm: %+v", n)
	}

	// A rebalance recommendation, confirmed, drains at once too.
	onDemand.SetMetadata("events/recommendations/rebalance", fmt.Sprintf(`{"noticeTime": %q}`, time.Now().UTC().Format(time.RFC3339)))
	tc.putNotice(t, enginetest.RebalanceRecommendation(account, region, onDemandID))
	eventually(t, 3*time.Minute, "the node of a rebalance recommendation is drained", func() (bool, string) {
		n := byInstance(swarmNodes(t, control), onDemandID)
		return n != nil && n.Spec.Availability == "drain", fmt.Sprintf("%+v", n)
	})
}
