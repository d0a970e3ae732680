package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/iostreams"
	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/motoserver"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/preflight"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// The orchestration runs in process against moto (which models stacks,
// instances, Auto Scaling groups and buckets) and, for what moto does not
// model (failed updates and deletes), against the scripted CloudFormation
// fake with small in-memory stand-ins for the other services.

var moto struct {
	once sync.Once
	srv  *motoserver.Server
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if moto.srv != nil {
		moto.srv.Close()
	}
	os.Exit(code)
}

// motoService returns a Service on a fresh moto account. A missing
// moto_server fails the test: these tests never skip.
func motoService(t *testing.T) *Clients {
	t.Helper()
	cfg := motoConfig(t)
	cfn := cloudformation.NewFromConfig(cfg)
	ios, _, _, _ := iostreams.Test()
	return &Clients{
		Stacks:  stacks.NewManager(cfn, stacks.Options{RunID: "test"}),
		CFN:     cfn,
		EC2:     ec2.NewFromConfig(cfg),
		ASG:     autoscaling.NewFromConfig(cfg),
		S3:      s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }),
		SSM:     ssm.NewFromConfig(cfg),
		ACM:     acm.NewFromConfig(cfg),
		ELB:     elasticloadbalancingv2.NewFromConfig(cfg),
		STS:     sts.NewFromConfig(cfg),
		CWLogs:  cloudwatchlogs.NewFromConfig(cfg),
		Sources: preflight.Sources{SNS: sns.NewFromConfig(cfg), SecretsManager: secretsmanager.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg), Region: cfg.Region},
		IO:      ios,
		Version: "test",
		Agents:  testAgents,
		Run:     Run{Command: "test", ID: "test"},
	}
}

// motoConfig is an AWS configuration for a fresh moto account.
func motoConfig(t *testing.T) aws.Config {
	t.Helper()
	moto.once.Do(func() { moto.srv, moto.err = motoserver.Start(nil) })
	if moto.err != nil {
		t.Fatal(moto.err)
	}
	if err := moto.srv.Reset(); err != nil {
		t.Fatal(err)
	}
	cfg, err := motoserver.Config(context.Background(), moto.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func intp(n int) *int { return &n }

// create, observe, update (no-op, values, dry run), remove and delete, each
// checked against what moto then holds.
func TestOrchestrationOnMoto(t *testing.T) {
	s := motoService(t)
	ctx := t.Context()

	core := spec.Core{SSHCIDR: "203.0.113.0/24", VolumeSize: intp(25)}
	coreStack, err := NewCore(s).CreateCore(ctx, "core", core, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if coreStack.Outputs[names.OutputBucketName] == "" {
		t.Fatalf("core outputs %v", coreStack.Outputs)
	}
	if _, err := NewCore(s).CreateCore(ctx, "core", core, CreateOptions{}); !errors.Is(err, ErrRefused) {
		t.Errorf("second CreateCore: %v", err)
	}

	web := spec.Group{Name: "web", InstanceType: spec.InstanceTypes{"c5.large"}, Count: intp(2), Labels: spec.Labels{"role": "web"},
		VolumeSize: intp(40), SSHCIDR: "198.51.100.0/24", RollingUpdate: spec.RollingUpdate{MaxBatch: intp(2)}}
	nodes, err := NewGroups(s).AddAgents(ctx, "core", web, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0].Labels["role"] != "web" {
		t.Errorf("nodes %+v", nodes)
	}

	// What is deployed reads back into the spec it was created from.
	obs, err := NewObserver(s).Observe(ctx, "core")
	if err != nil {
		t.Fatal(err)
	}
	wantCore := core
	wantCore.Default()
	wantCore.VpcID, wantCore.SubnetIDs = obs.Spec.Core.VpcID, obs.Spec.Core.SubnetIDs
	wantCore.Operators = []string{motoCaller} // the default: the principal that created it
	if !reflect.DeepEqual(obs.Spec.Core, wantCore) || !strings.HasPrefix(wantCore.VpcID, "vpc-") || len(wantCore.SubnetIDs) == 0 {
		t.Errorf("observed core %+v, want %+v with the default VPC", obs.Spec.Core, wantCore)
	}
	wantWeb := web
	wantWeb.Default()
	if len(obs.Spec.Groups) != 1 || !reflect.DeepEqual(obs.Spec.Groups[0], wantWeb) {
		t.Errorf("observed groups %+v, want %+v", obs.Spec.Groups, wantWeb)
	}
	if g := obs.Groups["web"]; g == nil || g.Nodes != 2 || g.Stack.Name != "core-web" {
		t.Errorf("observed web %+v", g)
	}
	if err := obs.Spec.Check(); err != nil {
		t.Errorf("the observed cluster is no valid spec: %v", err)
	}

	// Nothing asked, nothing changes.
	res, err := NewGroups(s).UpdateGroup(ctx, UpdateOptions{Cluster: "core", Group: "web"})
	if err != nil || !res.NoOp || res.Applied {
		t.Fatalf("identity update: %+v, %v", res, err)
	}

	// A count change: the plan has the value, and no node is replaced
	// (moto's change set lists no change for it).
	var shown *Plan
	res, err = NewGroups(s).UpdateGroup(ctx, UpdateOptions{Cluster: "core", Group: "web",
		Desired: func(d spec.Group) spec.Group { d.Count = intp(3); return d },
		OnPlan:  func(p *Plan) error { shown = p; return nil }})
	if err != nil || !res.Applied || shown != res.Plan {
		t.Fatalf("count update: %+v, %v", res, err)
	}
	want := []spec.Change{{Path: "count", Old: 2, New: 3, OldText: "2", NewText: "3"}}
	if !reflect.DeepEqual(res.Plan.Settings, want) || res.Plan.NodesReplaced != 0 {
		t.Errorf("plan %+v, want %+v and no node replaced", res.Plan, want)
	}
	if g, _ := NewObserver(s).ObserveGroup(ctx, "core", "web"); *g.Spec.Count != 3 || g.Nodes != 3 {
		t.Errorf("after the count update: %+v, %d nodes", g.Spec, g.Nodes)
	}

	// A type change replaces every node, two at a time; a dry run changes nothing.
	res, err = NewGroups(s).UpdateGroup(ctx, UpdateOptions{Cluster: "core", Group: "web", DryRun: true,
		Desired: func(d spec.Group) spec.Group { d.InstanceType = spec.InstanceTypes{"c5.xlarge"}; return d }})
	if err != nil || res.Applied || res.NoOp {
		t.Fatalf("dry run: %+v, %v", res, err)
	}
	if p := res.Plan; p.NodesReplaced != 3 || p.BatchSize != 2 || p.NodesLine() != "3 nodes will be replaced, 2 at a time" ||
		len(p.Settings) != 1 || p.Settings[0].Path != "instanceType" ||
		// moto's change set leaves out a resource whose only change is a
		// parameter's value (the launch template's instance type, now
		// that the user data does not name it): CloudFormation lists it.
		!slices.ContainsFunc(p.Changes, func(c ResourceChange) bool {
			return c.LogicalID == names.ResourceLaunchTemplate || c.LogicalID == names.ResourceAutoScalingGroup
		}) {
		t.Errorf("type plan %+v", p)
	}
	if g, _ := NewObserver(s).ObserveGroup(ctx, "core", "web"); g.Spec.InstanceType.String() != "c5.large" {
		t.Errorf("the dry run changed the type to %s", g.Spec.InstanceType)
	}

	// Bad desired settings are a usage error at their path; nothing changes.
	_, err = NewGroups(s).UpdateGroup(ctx, UpdateOptions{Cluster: "core", Group: "web",
		Desired: func(d spec.Group) spec.Group { d.Min = intp(9); return d }})
	var fe *spec.FieldError
	if !errors.As(err, &fe) || fe.Path != "min" || errs.ExitCode(err) != errs.ExitUsage {
		t.Errorf("min above count: %v", err)
	}

	// remove-group deletes the stack and the group's node configurations.
	if _, err := NewGroups(s).RemoveGroup(ctx, RemoveOptions{Cluster: "core", Group: "web", Yes: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewObserver(s).ObserveGroup(ctx, "core", "web"); !errors.Is(err, ErrRefused) {
		t.Errorf("observing a removed group: %v", err)
	}
	objs, err := s.S3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(coreStack.Outputs[names.OutputBucketName]), Prefix: aws.String(names.GroupConfigPrefix("web"))})
	if err != nil || len(objs.Versions) != 0 {
		t.Errorf("node configurations left: %v, %v", objs, err)
	}

	if _, err := NewCore(s).DeleteCore(ctx, DeleteCoreOptions{Name: "core", Yes: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewObserver(s).Observe(ctx, "core"); !errors.Is(err, ErrRefused) {
		t.Errorf("observing a deleted cluster: %v", err)
	}
}

// fakeEnv is the CloudFormation fake and in-memory stand-ins for the
// services it does not speak.
type fakeEnv struct {
	fake *cfnfake.Server
	s    *Clients
	s3   *recS3
}

// fakeService is a Service on the CloudFormation fake, with S3 on moto
// (the cluster bucket, testJoin's, exists there) and in-memory stand-ins
// for the rest.
func fakeService(t *testing.T) *fakeEnv {
	t.Helper()
	fake := cfnfake.New(t)
	ios, _, _, _ := iostreams.Test()
	rec := &recS3{Client: s3.NewFromConfig(motoConfig(t), func(o *s3.Options) { o.UsePathStyle = true })}
	if _, err := rec.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(testJoin.BucketName)}); err != nil {
		t.Fatal(err)
	}
	// Tagged as the core's template tags it: that proves it the cluster's.
	if _, err := rec.PutBucketTagging(t.Context(), &s3.PutBucketTaggingInput{Bucket: aws.String(testJoin.BucketName), Tagging: &s3types.Tagging{TagSet: []s3types.Tag{
		{Key: aws.String(names.TagCluster), Value: aws.String("core")}, {Key: aws.String(names.TagRole), Value: aws.String(names.RoleCore)}}}}); err != nil {
		t.Fatal(err)
	}
	return &fakeEnv{fake: fake, s3: rec, s: &Clients{
		Stacks:  stacks.NewManager(fake.Client(), stacks.Options{RunID: "test", Clock: fake.Clock}),
		CFN:     fake.Client(),
		EC2:     memEC2{},
		ASG:     memASG{names.GroupControl: 3},
		S3:      rec,
		SSM:     memSSM{},
		IO:      ios,
		Agents:  testAgents,
		Version: "test",
	}}
}

// testCore is the core seeded in the fake, testJoin its outputs.
var testCore = spec.Core{VpcID: "vpc-0123abcd", SubnetIDs: []string{"subnet-0aaa1111"}}

var testJoin = render.Join{
	ClusterName: "core", BucketName: "core-bucket", ManagersKey: names.ManagersKey,
	ControlSecurityGroupId: "sg-0c0c0c0c", AgentSecurityGroupId: "sg-0a0a0a0a",
	AgentInstanceProfile: "arn:aws:iam::123456789012:instance-profile/core-agents",
	VpcId:                "vpc-0123abcd", SubnetIds: []string{"subnet-0aaa1111"}, ContractVersion: render.ContractVersion,
}

// seed puts a core and its groups into the fake as clusterctl would have
// deployed them.
func (e *fakeEnv) seed(t *testing.T, groups ...spec.Group) {
	t.Helper()
	e.seedWith(t, testJoin, testJoin, memAMI, groups...)
}

// seedWith seeds a core whose outputs are now core, and groups deployed
// when they were join, their image path resolved to ami.
func (e *fakeEnv) seedWith(t *testing.T, core, join render.Join, ami string, groups ...spec.Group) {
	t.Helper()
	// The core as create-core renders it, so that it reads back.
	rc, err := render.Core("core", testCore, testBuild)
	if err != nil {
		t.Fatal(err)
	}
	e.fake.Seed(cfnfake.Seed{Name: "core", Template: string(rc.Template), Params: rc.Parameters, Outputs: core.Outputs(), Tags: rc.Tags,
		Resources: []cfnfake.Resource{{LogicalID: names.ResourceBucket, Type: "AWS::S3::Bucket", PhysicalID: core.BucketName}}})
	// The node agents, as create-core uploaded them.
	set, _ := testAgents(t.Context())
	if _, err := agentbin.Upload(t.Context(), e.s3.Client, join.BucketName, set, nil); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		r, err := render.Group("core", g, join, testBuild)
		if err != nil {
			t.Fatal(err)
		}
		if err := UploadArtifacts(t.Context(), e.s3.Client, join.BucketName, r.Artifacts); err != nil {
			t.Fatal(err)
		}
		params := r.Parameters
		params[names.ParamImageParameter] = ami // as resolved
		e.fake.Seed(cfnfake.Seed{Name: r.StackName, Template: string(r.Template), Params: params, Tags: r.Tags,
			Resources: []cfnfake.Resource{
				{LogicalID: names.ResourceLaunchTemplate, Type: "AWS::EC2::LaunchTemplate"},
				{LogicalID: names.ResourceAutoScalingGroup, Type: "AWS::AutoScaling::AutoScalingGroup"},
			}})
	}
}

// A failed update is reported with its root cause and what to do next,
// composed where the commands live; the node configuration was uploaded
// before the update ran.
func TestUpdateRollbackExplained(t *testing.T) {
	e := fakeService(t)
	e.seed(t, spec.Group{Name: "g", InstanceType: spec.InstanceTypes{"m5.large"}, Count: intp(2)})
	asg := cfnfake.Res{LogicalID: names.ResourceAutoScalingGroup, Type: "AWS::AutoScaling::AutoScalingGroup"}
	e.fake.Script("core-g", cfnfake.Update, cfnfake.UpdateRollback(time.Minute, asg, "Received 0 SUCCESS signal(s) out of 1")...)

	res, err := NewGroups(e.s).UpdateGroup(t.Context(), UpdateOptions{Cluster: "core", Group: "g", Yes: true,
		Desired: func(d spec.Group) spec.Group { d.InstanceType = spec.InstanceTypes{"m5.xlarge"}; return d }})
	if err == nil {
		t.Fatal("the update succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"UPDATE_ROLLBACK_COMPLETE", "0 SUCCESS signal", "previous configuration", "`clusterctl update-group -n g -j core`"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if errs.ExitCode(err) != errs.ExitFailed {
		t.Errorf("exit code %d", errs.ExitCode(err))
	}
	if res == nil || res.Plan == nil || res.Plan.NodesReplaced != 2 {
		t.Errorf("plan %+v", res)
	}
	// The node configuration the update needs is in the bucket; the type
	// is the launch template's, so it is the seeded one, not put again.
	if puts := e.s3.configPuts(); len(puts) != 0 {
		t.Errorf("uploads %v, want none: the node configuration is unchanged", puts)
	}
	listed, lerr := e.s3.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(testJoin.BucketName), Prefix: aws.String(names.GroupConfigPrefix("g"))})
	if lerr != nil || len(listed.Contents) == 0 {
		t.Errorf("no node configuration of g in the bucket: %v", lerr)
	}
	if n := len(e.fake.Log("ExecuteChangeSet")); n != 1 {
		t.Errorf("ExecuteChangeSet called %d times", n)
	}
}

// A flagless update of a group deployed with every setting changes
// nothing: no change set is even created.
func TestUpdateNothingCreatesNoChangeSet(t *testing.T) {
	e := fakeService(t)
	e.seed(t, spec.Group{Name: "g", InstanceType: spec.InstanceTypes{"m5.large"}, Count: intp(2), Min: intp(1), Max: intp(5), SSHCIDR: "203.0.113.0/24",
		KeyName: "ops", Labels: spec.Labels{"a": "1"}, ImageID: "/my/images/node", VolumeSize: intp(50), SubnetIDs: []string{"subnet-0bbb2222"},
		RollingUpdate: spec.RollingUpdate{MaxBatch: intp(2), MinInService: intp(0)}})
	res, err := NewGroups(e.s).UpdateGroup(t.Context(), UpdateOptions{Cluster: "core", Group: "g",
		Desired: func(d spec.Group) spec.Group { return d.Update(spec.Group{}, nil) }})
	if err != nil || !res.NoOp {
		t.Fatalf("flagless update: %+v, %v", res, err)
	}
	if n := len(e.fake.Log("CreateChangeSet")); n != 0 || len(e.s3.configPuts()) != 0 {
		t.Errorf("%d change sets, %d uploads", n, len(e.s3.configPuts()))
	}
}

// With no setting changed, a group still follows its core (subnets the
// core moved to) and a newer AMI behind its image path: the plan says
// why, and that the nodes are replaced.
func TestPlanFollowsCoreAndImage(t *testing.T) {
	e := fakeService(t)
	moved := testJoin
	moved.SubnetIds = []string{"subnet-0ccc3333"}
	e.seedWith(t, moved, testJoin, "ami-00000000000000001", spec.Group{Name: "g", InstanceType: spec.InstanceTypes{"m5.large"}, Count: intp(2)})
	res, err := NewGroups(e.s).UpdateGroup(t.Context(), UpdateOptions{Cluster: "core", Group: "g", DryRun: true})
	if err != nil || res.NoOp || res.Applied {
		t.Fatalf("update: %+v, %v", res, err)
	}
	want := []spec.Change{
		{Path: "join.SubnetIds", Old: "subnet-0aaa1111", New: "subnet-0ccc3333", OldText: "subnet-0aaa1111", NewText: "subnet-0ccc3333"},
		{Path: resolvedImage, Old: "ami-00000000000000001", New: memAMI, OldText: "ami-00000000000000001", NewText: memAMI},
	}
	if !reflect.DeepEqual(res.Plan.Settings, want) || res.Plan.NodesReplaced != 2 || len(res.Plan.Changes) == 0 {
		t.Errorf("plan %+v\nwant settings %+v, 2 nodes replaced", res.Plan, want)
	}
	if len(e.s3.configPuts()) != 0 || len(e.fake.Log("ExecuteChangeSet")) != 0 {
		t.Error("a dry run uploaded or executed")
	}
}

// A cascade whose group deletes fail names the recovery of each group.
func TestDeleteCascadeExplained(t *testing.T) {
	e := fakeService(t)
	e.seed(t, spec.Group{Name: "a", InstanceType: spec.InstanceTypes{"m5.large"}}, spec.Group{Name: "b", InstanceType: spec.InstanceTypes{"m5.large"}})
	sg := cfnfake.Res{LogicalID: "SshSecurityGroup", Type: "AWS::EC2::SecurityGroup"}
	for _, g := range []string{"core-a", "core-b"} {
		e.fake.Script(g, cfnfake.Delete, cfnfake.DeleteFails(30*time.Second, sg, "resource sg-1 has a dependent object")...)
	}
	_, err := NewCore(e.s).DeleteCore(t.Context(), DeleteCoreOptions{Name: "core", Cascade: true, Yes: true})
	if err == nil {
		t.Fatal("the cascade succeeded")
	}
	for _, want := range []string{"clusterctl remove-group -n a -j core --retain-failed", "clusterctl remove-group -n b -j core --retain-failed", "dependent object"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
	if st := e.fake.Status("core"); st != "CREATE_COMPLETE" {
		t.Errorf("core %s: deleted although its groups are not", st)
	}
}

// In-memory stand-ins.

const memAMI = "ami-0123456789abcdef0"

type memSSM struct{}

func (memSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: in.Name, Value: aws.String(memAMI)}}, nil
}

// memEC2 answers pre-flight: every subnet is in testJoin's VPC, every
// key pair, instance type and image exists (x86_64), every type is
// offered. It has no instances.
type memEC2 struct{}

func (memEC2) DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	return &ec2.DescribeInstancesOutput{}, nil
}

func (memEC2) DescribeRouteTables(context.Context, *ec2.DescribeRouteTablesInput, ...func(*ec2.Options)) (*ec2.DescribeRouteTablesOutput, error) {
	return &ec2.DescribeRouteTablesOutput{}, nil
}

func (memEC2) DescribeVpcs(context.Context, *ec2.DescribeVpcsInput, ...func(*ec2.Options)) (*ec2.DescribeVpcsOutput, error) {
	return &ec2.DescribeVpcsOutput{Vpcs: []ec2types.Vpc{{VpcId: aws.String(testJoin.VpcId)}}}, nil
}

func (memEC2) DescribeSubnets(_ context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	var out ec2.DescribeSubnetsOutput
	for _, f := range in.Filters {
		if aws.ToString(f.Name) == "subnet-id" {
			for _, id := range f.Values {
				out.Subnets = append(out.Subnets, ec2types.Subnet{SubnetId: aws.String(id), VpcId: aws.String(testJoin.VpcId), AvailabilityZone: aws.String("us-east-1a")})
			}
		}
	}
	return &out, nil
}

func (memEC2) DescribeKeyPairs(_ context.Context, in *ec2.DescribeKeyPairsInput, _ ...func(*ec2.Options)) (*ec2.DescribeKeyPairsOutput, error) {
	return &ec2.DescribeKeyPairsOutput{KeyPairs: []ec2types.KeyPairInfo{{KeyName: aws.String(in.Filters[0].Values[0])}}}, nil
}

func (memEC2) DescribeInstanceTypes(_ context.Context, in *ec2.DescribeInstanceTypesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	var out ec2.DescribeInstanceTypesOutput
	for _, t := range in.Filters[0].Values {
		out.InstanceTypes = append(out.InstanceTypes, ec2types.InstanceTypeInfo{InstanceType: ec2types.InstanceType(t),
			ProcessorInfo: &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{ec2types.ArchitectureTypeX8664}}})
	}
	return &out, nil
}

func (memEC2) DescribeInstanceTypeOfferings(_ context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	var out ec2.DescribeInstanceTypeOfferingsOutput
	for _, t := range in.Filters[0].Values {
		for _, z := range in.Filters[1].Values {
			out.InstanceTypeOfferings = append(out.InstanceTypeOfferings, ec2types.InstanceTypeOffering{InstanceType: ec2types.InstanceType(t), Location: aws.String(z)})
		}
	}
	return &out, nil
}

// DescribeLaunchTemplateVersions: the fake's stacks have no real launch
// templates.
func (memEC2) DescribeLaunchTemplateVersions(context.Context, *ec2.DescribeLaunchTemplateVersionsInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error) {
	return &ec2.DescribeLaunchTemplateVersionsOutput{}, nil
}

func (memEC2) DescribeImages(_ context.Context, in *ec2.DescribeImagesInput, _ ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error) {
	return &ec2.DescribeImagesOutput{Images: []ec2types.Image{{ImageId: aws.String(in.ImageIds[0]), State: ec2types.ImageStateAvailable, Architecture: ec2types.ArchitectureValuesX8664}}}, nil
}

// memASG has one Auto Scaling group for every group asked for by its
// tags: of as many nodes as it says for that group, 2 by default.
type memASG map[string]int

func (m memASG) DescribeAutoScalingGroups(_ context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, _ ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	var out autoscaling.DescribeAutoScalingGroupsOutput
	for _, f := range in.Filters {
		if aws.ToString(f.Name) == "tag:"+names.TagGroup {
			n, ok := m[f.Values[0]]
			if !ok {
				n = 2
			}
			g := asgtypes.AutoScalingGroup{AutoScalingGroupName: aws.String(f.Values[0])}
			for i := range n {
				g.Instances = append(g.Instances, asgtypes.Instance{InstanceId: aws.String(fmt.Sprintf("i-%d", i+1))})
			}
			out.AutoScalingGroups = append(out.AutoScalingGroups, g)
		}
	}
	return &out, nil
}

// The node commands are tested on moto and with the real binary (e2e):
// the fake's groups have no instances to find or terminate.
func (memASG) DescribeAutoScalingInstances(context.Context, *autoscaling.DescribeAutoScalingInstancesInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingInstancesOutput, error) {
	return nil, errors.New("memASG: no instances")
}

func (memASG) TerminateInstanceInAutoScalingGroup(context.Context, *autoscaling.TerminateInstanceInAutoScalingGroupInput, ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error) {
	return nil, errors.New("memASG: no instances")
}

// recS3 is moto's S3, recording the keys put.
type recS3 struct {
	*s3.Client
	mu   sync.Mutex
	puts []string
}

func (r *recS3) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	r.mu.Lock()
	r.puts = append(r.puts, aws.ToString(in.Key))
	r.mu.Unlock()
	return r.Client.PutObject(ctx, in, opts...)
}

// configPuts are the node configurations put (not the leases).
func (r *recS3) configPuts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, k := range r.puts {
		if strings.HasPrefix(k, names.NodeConfigPrefix+"/") {
			out = append(out, k)
		}
	}
	return out
}

// Continuing a failed rollback changes the group: it holds the group's
// lease, and is refused while another run holds it.
func TestContinueRollbackHoldsTheGroupLease(t *testing.T) {
	e := fakeService(t)
	e.seed(t)
	e.fake.Seed(cfnfake.Seed{Name: "core-g", Status: "UPDATE_ROLLBACK_FAILED",
		Tags: map[string]string{names.TagCluster: "core", names.TagRole: names.RoleAgents, names.TagGroup: "g"}})
	other := lease.New(e.s3.Client, testJoin.BucketName, lease.Options{Cluster: "core", Holder: "bob@ci (pid 1)", Command: "update-group -n g -j core -c 3"})
	l, err := other.Acquire(t.Context(), lease.Group("g"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewGroups(e.s).ContinueRollback(t.Context(), "core", "g")
	if !errors.Is(err, lease.ErrHeld) || !strings.Contains(err.Error(), "`update-group -n g -j core -c 3`") {
		t.Errorf("ContinueRollback under another run's lease = %v", err)
	}
	if n := len(e.fake.Log("ContinueUpdateRollback")); n != 0 {
		t.Errorf("ContinueUpdateRollback called %d times under another run's lease", n)
	}
	l.Release(t.Context())
	st, err := NewGroups(e.s).ContinueRollback(t.Context(), "core", "g")
	if err != nil || st.Status != "UPDATE_ROLLBACK_COMPLETE" {
		t.Errorf("ContinueRollback = %+v, %v", st, err)
	}
}

// New tags go with the change set, so that CloudFormation puts them on
// the stack and its resources (moto keeps a stack's first tags; the fake
// applies a change set's as CloudFormation does); removed ones go.
func TestUpdateChangesTags(t *testing.T) {
	e := fakeService(t)
	e.seed(t, spec.Group{Name: "g", InstanceType: spec.InstanceTypes{"m5.large"}, Count: intp(2), Tags: spec.Tags{"team": "web", "owner": "jane"}})
	res, err := NewGroups(e.s).UpdateGroup(t.Context(), UpdateOptions{Cluster: "core", Group: "g", Yes: true,
		Desired: func(d spec.Group) spec.Group {
			return d.Update(spec.Group{Tags: spec.Tags{"team": "api"}}, []string{"tags"})
		}})
	if err != nil || !res.Applied {
		t.Fatalf("update: %+v, %v", res, err)
	}
	if len(res.Plan.Settings) != 1 || res.Plan.Settings[0].Path != "tags" || res.Plan.NodesReplaced != 2 {
		t.Errorf("plan %+v", res.Plan)
	}
	calls := e.fake.Log("CreateChangeSet")
	if len(calls) != 1 {
		t.Fatalf("%d change sets", len(calls))
	}
	sent := map[string]string{}
	for i := 1; calls[0].Params.Get(fmt.Sprintf("Tags.member.%d.Key", i)) != ""; i++ {
		sent[calls[0].Params.Get(fmt.Sprintf("Tags.member.%d.Key", i))] = calls[0].Params.Get(fmt.Sprintf("Tags.member.%d.Value", i))
	}
	if sent["team"] != "api" || sent["owner"] != "" || sent[names.TagCluster] != "core" {
		t.Errorf("change set tags %v", sent)
	}
	st, err := e.s.Stacks.Get(t.Context(), "core-g")
	if err != nil || st.Tags["team"] != "api" || st.Tags["owner"] != "" {
		t.Errorf("stack tags after the update: %v, %v", st.Tags, err)
	}
}

// testAgents stands in for the node agents a clusterctl pins: nodes never
// run here, only their hashes and the uploads matter.
func testAgents(context.Context) (agentbin.Set, error) {
	return agentbin.Set{
		"amd64": agentbin.New("amd64", []byte("node agent for linux/amd64")),
		"arm64": agentbin.New("arm64", []byte("node agent for linux/arm64")),
	}, nil
}

// testBuild is what the tests' Service renders with.
var testBuild = render.Build{Version: "test", Agents: map[string]string{
	"amd64": agentbin.New("amd64", []byte("node agent for linux/amd64")).SHA256,
	"arm64": agentbin.New("arm64", []byte("node agent for linux/arm64")).SHA256,
}}
