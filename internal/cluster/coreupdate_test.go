package cluster

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
)

var managerGroup = cfnfake.Res{LogicalID: names.ResourceManagerGroup, Type: "AWS::AutoScaling::AutoScalingGroup"}

// seedCore puts a core of the current contract into the fake as
// clusterctl would have deployed it, its image path resolved to memAMI.
func (e *fakeEnv) seedCore(t *testing.T, c spec.Core) {
	t.Helper()
	c.VpcID, c.SubnetIDs = testJoin.VpcId, testJoin.SubnetIds
	r, err := render.Core("core", c, testBuild)
	if err != nil {
		t.Fatal(err)
	}
	params := r.Parameters
	params[names.ParamImageParameter] = memAMI
	e.fake.Seed(cfnfake.Seed{Name: "core", Template: string(r.Template), Params: params, Tags: r.Tags, Outputs: testJoin.Outputs(),
		Resources: []cfnfake.Resource{
			{LogicalID: names.ResourceControlLaunchTemplate, Type: "AWS::EC2::LaunchTemplate"},
			{LogicalID: managerGroup.LogicalID, Type: managerGroup.Type},
			{LogicalID: names.ResourceBucket, Type: "AWS::S3::Bucket", PhysicalID: testJoin.BucketName},
		}})
}

// A failed update of the core is reported with its root cause and what
// to do next; the groups are not touched.
func TestUpdateCoreRollbackExplained(t *testing.T) {
	e := fakeService(t)
	e.seedCore(t, spec.Core{Managers: intp(3)})
	e.seed(t, spec.Group{Name: "g", InstanceType: spec.InstanceTypes{"m5.large"}})
	e.fake.Script("core", cfnfake.Update, cfnfake.UpdateRollback(time.Minute, managerGroup,
		"Received 0 SUCCESS signal(s) out of 1. Unable to satisfy 100% MinSuccessfulInstancesPercent requirement")...)

	res, err := NewCore(e.s).UpdateCore(t.Context(), CoreUpdateOptions{Cluster: "core", Yes: true,
		Desired: func(d spec.Core) spec.Core { d.InstanceType = "m6i.large"; return d }})
	if err == nil {
		t.Fatal("the update succeeded")
	}
	for _, want := range []string{"UPDATE_ROLLBACK_COMPLETE", "0 SUCCESS signal", "the core runs its previous configuration", "`clusterctl update-core core` again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
	if errs.ExitCode(err) != errs.ExitFailed {
		t.Errorf("exit code %d", errs.ExitCode(err))
	}
	if res == nil || res.Plan == nil || res.Plan.NodesLine() != "3 managers will be replaced one at a time" {
		t.Errorf("plan %+v", res)
	}
	if st := e.fake.Status("core-g"); st != "CREATE_COMPLETE" || len(e.fake.Log("CreateChangeSet")) != 1 {
		t.Errorf("group %s, %d change sets: the core's update touched a group", st, len(e.fake.Log("CreateChangeSet")))
	}
}

// A failed rollback leaves the core UPDATE_ROLLBACK_FAILED: the error
// names update-core --continue-rollback, which gets it out.
func TestUpdateCoreContinueRollback(t *testing.T) {
	e := fakeService(t)
	e.seedCore(t, spec.Core{})
	sg := cfnfake.Res{LogicalID: "ControlSecurityGroup", Type: "AWS::EC2::SecurityGroup"}
	e.fake.Script("core", cfnfake.Update, cfnfake.UpdateRollbackFails(time.Minute, managerGroup, "Received 0 SUCCESS signal(s) out of 1",
		sg, "resource sg-1 has a dependent object")...)

	_, err := NewCore(e.s).UpdateCore(t.Context(), CoreUpdateOptions{Cluster: "core", Yes: true,
		Desired: func(d spec.Core) spec.Core { d.SSHCIDR = "203.0.113.0/24"; return d }})
	if err == nil || !strings.Contains(err.Error(), "UPDATE_ROLLBACK_FAILED") || !strings.Contains(err.Error(), "`clusterctl update-core core --continue-rollback`") {
		t.Fatalf("error %v, want the advice to continue the rollback", err)
	}
	if _, err := NewCore(e.s).UpdateCore(t.Context(), CoreUpdateOptions{Cluster: "core", Yes: true}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--continue-rollback") {
		t.Errorf("an update of a stuck core: %v", err)
	}
	st, err := NewGroups(e.s).ContinueRollback(t.Context(), "core", "")
	if err != nil || st.Status != "UPDATE_ROLLBACK_COMPLETE" {
		t.Fatalf("continue rollback: %+v, %v", st, err)
	}
	// The core runs its previous configuration again: usable, nothing to change.
	res, err := NewCore(e.s).UpdateCore(t.Context(), CoreUpdateOptions{Cluster: "core"})
	if err != nil || !res.NoOp {
		t.Errorf("flagless update after the rollback: %+v, %v", res, err)
	}
}

// What a core cannot become is refused before anything is planned: exit 2
// at the setting, nothing created.
func TestUpdateCoreRefusals(t *testing.T) {
	e := fakeService(t)
	e.seedCore(t, spec.Core{Managers: intp(5)})
	for _, tc := range []struct {
		name   string
		change func(*spec.Core)
		path   string
		want   string
	}{
		{"another VPC", func(c *spec.Core) { c.VpcID = "vpc-0fff9999" }, "vpcId", "a cluster's VPC cannot change"},
		{"two steps down", func(c *spec.Core) { c.Managers = intp(1) }, "managers", "5 → 1 removes 4 of 5 managers at once: go down one step at a time (5 → 3, then 3 → 1)"},
		{"even", func(c *spec.Core) { c.Managers = intp(4) }, "managers", "even"},
		{"resize and replace", func(c *spec.Core) { c.Managers = intp(3); c.InstanceType = "m6i.large" }, "managers", "make the changes in two updates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewCore(e.s).UpdateCore(t.Context(), CoreUpdateOptions{Cluster: "core", Yes: true,
				Desired: func(d spec.Core) spec.Core { tc.change(&d); return d }})
			var fe *spec.FieldError
			if !errors.As(err, &fe) || fe.Path != tc.path || !strings.Contains(fe.Msg, tc.want) || errs.ExitCode(err) != errs.ExitUsage {
				t.Errorf("error %v, want one at %s saying %q", err, tc.path, tc.want)
			}
		})
	}
	if n := len(e.fake.Log("CreateChangeSet")); n != 0 {
		t.Errorf("%d change sets created", n)
	}
}

// Scaling plans say what happens to the managers; a non-terminal needs
// --yes, and without it nothing is applied.
func TestUpdateCoreScalingPlans(t *testing.T) {
	e := fakeService(t)
	e.seedCore(t, spec.Core{Managers: intp(3)})
	for _, tc := range []struct {
		to    int
		notes []string
	}{
		{5, []string{"2 managers will be added (3 → 5): they join the swarm as managers."}},
		{1, []string{"2 managers will be demoted and removed, one at a time (3 → 1)."}},
	} {
		res, err := NewCore(e.s).UpdateCore(t.Context(), CoreUpdateOptions{Cluster: "core", DryRun: true,
			Desired: func(d spec.Core) spec.Core { d.Managers = intp(tc.to); return d }})
		if err != nil || res.Applied || res.Plan.NodesReplaced != 0 || !reflect.DeepEqual(res.Plan.Notes, tc.notes) {
			t.Errorf("3 → %d: %+v, %v", tc.to, res, err)
		}
		if len(res.Plan.Settings) != 1 || res.Plan.Settings[0].Path != "managers" {
			t.Errorf("3 → %d settings %+v", tc.to, res.Plan.Settings)
		}
	}
	_, err := NewCore(e.s).UpdateCore(t.Context(), CoreUpdateOptions{Cluster: "core",
		Desired: func(d spec.Core) spec.Core { d.Managers = intp(5); return d }})
	if errs.ExitCode(err) != errs.ExitUsage || !strings.Contains(err.Error(), "--yes") {
		t.Errorf("no terminal, no --yes: %v", err)
	}
	if n := len(e.fake.Log("ExecuteChangeSet")); n != 0 {
		t.Errorf("%d change sets executed", n)
	}
	if created, deleted := len(e.fake.Log("CreateChangeSet")), len(e.fake.Log("DeleteChangeSet")); created != deleted {
		t.Errorf("%d change sets created, %d deleted: some left behind", created, deleted)
	}
}
