package bootstrap

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/clusterctl/clusterctl/internal/enginetest"
)

// instanceState is the state moto gives an instance.
func (tc *testCluster) instanceState(t *testing.T, id string) string {
	t.Helper()
	out, err := tc.c.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(out.Reservations) == 0 || len(out.Reservations[0].Instances) == 0 {
		t.Fatalf("instance %s: %v", id, err)
	}
	return string(out.Reservations[0].Instances[0].State.Name)
}

// Two managers of three lost, one terminated and one stopped (its engine
// gone with the instance, EBS-backed: it could be started again with its
// old Raft state). The survivor does not take the stopped manager as
// gone: it terminates it through the managers' Auto Scaling group first,
// and forces a new cluster only once EC2 shows it terminated.
func TestQuorumLossStoppedManagerFenced(t *testing.T) {
	scenario(t)
	tc := deployManagers(t, "fence", 3)
	managers := tc.bootManagers(t, "CLUSTERCTL_QUORUM_GRACE=20")
	leader := leaderOf(t, managers)
	var survivor, stopped *enginetest.Node
	for _, m := range managers {
		switch {
		case m == leader:
		case survivor == nil:
			survivor = m
		default:
			stopped = m
		}
	}
	tc.terminateInstance(t, leader)
	stopped.PowerOff()
	if _, err := tc.c.ec2.StopInstances(context.Background(), &ec2.StopInstancesInput{InstanceIds: []string{stopped.Spec.InstanceID}}); err != nil {
		t.Fatal(err)
	}
	if st := tc.instanceState(t, stopped.Spec.InstanceID); st != "stopped" {
		t.Fatalf("moto shows the stopped manager %s", st)
	}
	lostAt := time.Now()
	eventually(t, 5*time.Minute, "the survivor leads a working swarm", func() (bool, string) {
		out, err := survivor.Docker(context.Background(), "node", "ls", "--format", "{{.Hostname}} {{.ManagerStatus}}")
		return err == nil && strings.Contains(out, "Leader"), fmt.Sprint(out, err)
	})
	t.Logf("measured: the survivor led again %s after the loss", time.Since(lostAt).Round(time.Second))
	logs := survivor.Logs()
	fenced := strings.Index(logs, "fencing the lost manager at "+stopped.Spec.IP.String()+": its instance "+stopped.Spec.InstanceID+" is stopped")
	forced := strings.Index(logs, "every lost manager is proven gone")
	if fenced < 0 || forced < 0 || fenced > forced {
		t.Errorf("the stopped manager was not fenced before the recovery (fenced at %d, forced at %d):\n%s", fenced, forced, logs)
	}
	if st := tc.instanceState(t, stopped.Spec.InstanceID); st != "terminated" {
		t.Errorf("the stopped manager's instance is %s, want terminated", st)
	}
	// Through its group, the desired capacity kept: the group replaces it.
	if g := autoScalingGroup(t, tc.c, tc.managerGroup); aws.ToInt32(g.DesiredCapacity) != 3 {
		t.Errorf("the managers' group wants %d, want 3", aws.ToInt32(g.DesiredCapacity))
	}
}
