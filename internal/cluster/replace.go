package cluster

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
)

// ReplaceOptions says which node replace-node replaces.
type ReplaceOptions struct {
	Instance string
	Cluster  string // "": the cluster the instance's tags name
	// Yes replaces the only manager without asking.
	Yes bool
	// Progress gets a line for each change seen while waiting; nil for
	// none.
	Progress io.Writer
}

// Replacement is how replace-node ended. The JSON keys are a public
// interface.
type Replacement struct {
	Cluster          string `json:"cluster"`
	Group            string `json:"group"`
	InstanceID       string `json:"instanceId"`
	AutoScalingGroup string `json:"autoScalingGroup"`
	// Replacement is the instance that took its place, NodeID its node
	// in the swarm.
	Replacement     string  `json:"replacement"`
	NodeID          string  `json:"nodeId"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// ReplaceNode terminates an instance through its Auto Scaling group,
// which launches another (the desired capacity stays): the group's
// lifecycle hook has the managers' housekeeping drain the node (a manager
// is demoted) and remove it from the swarm first. It waits until a new
// instance of the group is in service and Ready in the swarm (a Reachable
// manager, for a manager) and the old node has left the swarm. A manager
// whose removal would cost the swarm its quorum is refused; the only
// manager is replaced only when confirmed.
func (s *Nodes) ReplaceNode(ctx context.Context, o ReplaceOptions) (*Replacement, error) {
	start := time.Now()
	n, err := s.findNode(ctx, o.Instance, o.Cluster)
	if err != nil {
		return nil, err
	}
	r := &Replacement{Cluster: n.Cluster, Group: n.Group, InstanceID: n.InstanceID, AutoScalingGroup: n.AutoScalingGroup}
	// The group's lease (the core's, for a manager): no update of the
	// group runs its own replacements meanwhile.
	scope := lease.Group(n.Group)
	if n.manager() {
		scope = lease.Core()
	}
	err = s.leases.withLease(ctx, n.Cluster, scope, func(ctx context.Context, in leased) error {
		st, err := s.status.readStatus(ctx, in.bucket, n.Cluster)
		if err != nil {
			return err
		}
		// Which managers there are is a safety decision: only running
		// instances of the core's managers' group count, whatever the
		// snapshot names.
		running := map[string]bool{}
		if n.manager() {
			if running, err = s.runningManagers(ctx, n); err != nil {
				return err
			}
			if st != nil {
				if odd := strangers(st, running); len(odd) > 0 {
					s.say.printf("Note: the swarm status names %s that %s no running instance of the managers of cluster %s, not counted: %s\n",
						query.Plural(len(odd), "manager"), isAre(len(odd)), n.Cluster, strings.Join(odd, ", "))
				}
			}
		}
		risk, err := checkReplace(st, n, running, time.Now())
		if err != nil {
			return err
		}
		if risk != "" {
			s.say.printf("Note: %s\n", risk)
			if err := s.say.confirm(ctx, o.Yes, fmt.Sprintf("replace %s, the only manager of cluster %s", n.InstanceID, n.Cluster)); err != nil {
				return err
			}
		}
		before, err := s.groupInstances(ctx, n.AutoScalingGroup)
		if err != nil {
			return err
		}
		if _, err := s.ASG.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
			InstanceId: aws.String(n.InstanceID), ShouldDecrementDesiredCapacity: aws.Bool(false),
		}); err != nil {
			return fmt.Errorf("terminating %s through its auto scaling group: %w", n.InstanceID, err)
		}
		progressf(o.Progress, "Terminating %s through its Auto Scaling group %s, which replaces it; the lifecycle hook has the managers drain it first\n",
			n.InstanceID, n.AutoScalingGroup)
		return s.awaitReplacement(ctx, n, in.bucket, before, r, o.Progress)
	})
	r.DurationSeconds = seconds(time.Since(start))
	if err != nil {
		return nil, err
	}
	return r, nil
}

// runningManagers are the running instances of the core's managers' group
// (its own ManagerGroup resource, not a group that carries its tags), as
// Auto Scaling and EC2 both say: the managers a safety decision may count.
// The manager n must be one of that group's.
func (s *Nodes) runningManagers(ctx context.Context, n *clusterNode) (map[string]bool, error) {
	r, err := s.Stacks.Resource(ctx, n.core.Name, names.ResourceManagerGroup)
	if err != nil {
		return nil, fmt.Errorf("finding the managers' group of cluster %q: %w", n.Cluster, err)
	}
	if r.PhysicalID != n.AutoScalingGroup {
		return nil, errs.Usage("instance %s is not a manager of cluster %q: its Auto Scaling group %s is not the core's managers' group %s", n.InstanceID, n.Cluster, n.AutoScalingGroup, r.PhysicalID)
	}
	members, err := s.groupInstances(ctx, r.PhysicalID)
	if err != nil {
		return nil, err
	}
	var ids []string
	for id, state := range members {
		if state == "InService" {
			ids = append(ids, id)
		}
	}
	running := map[string]bool{}
	if len(ids) == 0 {
		return running, nil
	}
	p := ec2.NewDescribeInstancesPaginator(s.EC2, &ec2.DescribeInstancesInput{
		InstanceIds: ids,
		Filters:     []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"running"}}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing the managers of cluster %q: %w", n.Cluster, err)
		}
		for _, res := range page.Reservations {
			for _, i := range res.Instances {
				if i.State != nil && i.State.Name == ec2types.InstanceStateNameRunning {
					running[aws.ToString(i.InstanceId)] = true
				}
			}
		}
	}
	return running, nil
}

// strangers are the instances the snapshot names as managers that are not
// among the running managers, sorted.
func strangers(st *swarmStatus, running map[string]bool) []string {
	var out []string
	for _, m := range st.managers() {
		if !running[m.InstanceID] && !slices.Contains(out, m.InstanceID) {
			out = append(out, m.InstanceID)
		}
	}
	slices.Sort(out)
	return out
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// checkReplace says whether replacing node n keeps the swarm working, from
// its status snapshot st at now and running, the running instances of the
// managers' group (only those count as managers; for a manager): an error
// when it is refused; what happens to the control plane when n is the only
// manager, which the operator must confirm.
func checkReplace(st *swarmStatus, n *clusterNode, running map[string]bool, now time.Time) (string, error) {
	if st == nil {
		return "", refused("cluster %q has no swarm status in its bucket: its managers have never published one, so the replacement could not be seen joining the swarm (clusterctl describe %s)", n.Cluster, n.Cluster)
	}
	stale := ""
	if st.stale(now) {
		stale = fmt.Sprintf("the swarm status of cluster %q is %s old: no manager leads the swarm or its housekeeping is stopped", n.Cluster, query.FormatAge(st.age(now)))
	}
	if !n.manager() {
		if stale != "" {
			return "", refused("%s, so %s would not be drained before it terminates; bring the control plane back first (clusterctl describe %s)", stale, n.InstanceID, n.Cluster)
		}
		return "", nil
	}
	managers := st.managers()
	var others []SwarmNode
	for _, m := range managers {
		if m.InstanceID != n.InstanceID && running[m.InstanceID] && m.IdentityProblem == "" {
			others = append(others, m)
		}
	}
	if len(others) == 0 {
		// The only manager: its replacement restores the swarm from the
		// backup it takes as it leaves, or from the last one if it is
		// gone already.
		from := "from the backup it takes as it leaves"
		if stale != "" {
			switch {
			case st.LastBackup == nil:
				from = "anew: there is no backup, so services, secrets and networks are lost"
			default:
				from = fmt.Sprintf("from the last backup, of %s ago", query.FormatAge(now.Sub(*st.LastBackup)))
			}
			stale = fmt.Sprintf(" (%s)", stale)
		}
		return fmt.Sprintf("%s is the only manager%s: the control plane is down until its replacement restores the swarm %s; services keep running on the agents",
			n.InstanceID, stale, from), nil
	}
	if stale != "" {
		return "", errs.Usage("refusing to replace manager %s: %s, so whether the swarm keeps its quorum cannot be told", n.InstanceID, stale)
	}
	// Once n is demoted and removed, the others are the managers.
	remaining := len(others)
	quorum := remaining/2 + 1
	reachable := 0
	var unreachable []string
	for _, m := range others {
		if inQuorum(m) {
			reachable++
		} else {
			unreachable = append(unreachable, m.InstanceID)
		}
	}
	if reachable < quorum {
		return "", errs.Usage("refusing to replace manager %s: the swarm would keep %d reachable managers of %d, fewer than the %d its quorum needs (unreachable: %s); replace the unreachable first",
			n.InstanceID, reachable, remaining, quorum, strings.Join(unreachable, ", "))
	}
	return "", nil
}

// groupInstances maps the instances of an Auto Scaling group to their
// lifecycle states (InService, Pending, Terminating:Wait, ...).
func (s *Nodes) groupInstances(ctx context.Context, name string) (map[string]string, error) {
	out, err := s.ASG.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}})
	if err != nil {
		return nil, fmt.Errorf("describing the auto scaling group %s: %w", name, err)
	}
	is := map[string]string{}
	for _, g := range out.AutoScalingGroups {
		for _, i := range g.Instances {
			is[aws.ToString(i.InstanceId)] = string(i.LifecycleState)
		}
	}
	return is, nil
}

// awaitReplacement waits until an instance of the group that was not in
// it before is in service and Ready in the swarm, and the node of the
// instance replaced has left the swarm; it says each change on progress
// and fills in r.
func (s *Nodes) awaitReplacement(ctx context.Context, n *clusterNode, bucket string, before map[string]string, r *Replacement, progress io.Writer) error {
	hint := fmt.Sprintf("Auto Scaling carries on replacing %s; follow it with `clusterctl list-nodes -j %s -n %s`", n.InstanceID, n.Cluster, n.Group)
	said := map[string]string{}
	say := func(instance, line string) {
		if said[instance] != line {
			progressf(progress, "%s: %s\n", instance, line)
			said[instance] = line
		}
	}
	tick := time.NewTicker(pollStatus)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return stoppedWaiting(fmt.Errorf("waiting for the replacement of %s: %w", n.InstanceID, ctx.Err()), hint)
		case <-tick.C:
		}
		now, err := s.groupInstances(ctx, n.AutoScalingGroup)
		var st *swarmStatus
		if err == nil {
			st, err = s.status.readStatus(ctx, bucket, n.Cluster)
		}
		if ctx.Err() != nil {
			return stoppedWaiting(fmt.Errorf("waiting for the replacement of %s: %w", n.InstanceID, ctx.Err()), hint)
		}
		if err != nil {
			return err
		}
		if state, ok := now[n.InstanceID]; ok {
			say(n.InstanceID, state)
		}
		gone := st != nil && len(st.nodesOf(n.InstanceID, n.PrivateIP)) == 0
		if gone {
			say(n.InstanceID, "gone from the swarm")
		}
		for _, id := range slices.Sorted(maps.Keys(now)) {
			if _, old := before[id]; old {
				continue
			}
			line, node := now[id], readyNode(st, id, n.manager())
			switch {
			case node != nil:
				line += fmt.Sprintf(", Ready in the swarm as node %s", short(node.NodeID))
			case now[id] == "InService":
				line += ", not Ready in the swarm yet"
			}
			say(id, line)
			if now[id] == "InService" && node != nil && r.Replacement == "" {
				r.Replacement, r.NodeID = id, node.NodeID
			}
		}
		if r.Replacement != "" && gone {
			return nil
		}
	}
}

// readyNode is the swarm node of an instance when it is Ready (and a
// Reachable manager, for a manager); nil otherwise.
func readyNode(st *swarmStatus, instance string, manager bool) *SwarmNode {
	if st == nil {
		return nil
	}
	for _, node := range st.nodesOf(instance, "") {
		if node.State == "ready" && (!manager || inQuorum(node)) {
			return &node
		}
	}
	return nil
}
