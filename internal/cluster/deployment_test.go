package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// A dry run checks and renders everything create-core and add-agents
// would, and creates and uploads nothing; what it shows is exactly what
// the real run then deploys and uploads. A live render of the group shows
// the same.
func TestDryRunsShowWhatIsDeployed(t *testing.T) {
	s := motoService(t)
	ctx := t.Context()
	cfn := s.CFN.(*cloudformation.Client)
	s3c := s.S3.(*s3.Client)

	plan, err := NewCore(s).PlanCore(ctx, "core", spec.Core{SSHCIDR: "203.0.113.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	p := plan.Parameters
	if plan.Stack != "core" || !strings.HasPrefix(p[names.ParamVpcID], "vpc-") || len(spec.SplitList(p[names.ParamSubnetIDs])) == 0 ||
		p[names.ParamSSHCIDR] != "203.0.113.0/24" || plan.Tags[names.TagRole] != names.RoleCore || plan.TemplateBytes == 0 ||
		len(plan.Capabilities) != 1 || len(plan.Uploads) != 0 {
		t.Errorf("core plan %+v", plan)
	}
	if n := stackCount(t, cfn); n != 0 {
		t.Fatalf("the core's dry run created %d stacks", n)
	}

	coreStack, err := NewCore(s).CreateCore(ctx, "core", spec.Core{SSHCIDR: "203.0.113.0/24"}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := deployedParams(t, cfn, "core"); !sameParams(t, s, got, plan.Parameters) {
		t.Errorf("core deployed with %v, planned %v", got, plan.Parameters)
	}
	if _, err := NewCore(s).PlanCore(ctx, "core", spec.Core{}); !errors.Is(err, ErrRefused) {
		t.Errorf("dry run of an existing core: %v", err)
	}

	bucket := coreStack.Outputs[names.OutputBucketName]
	web := spec.Group{Name: "web", InstanceType: spec.InstanceTypes{"c5.large"}, Count: intp(2), Labels: spec.Labels{"role": "web"}}
	plan, err = NewGroups(s).PlanAgents(ctx, "core", web, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Uploads) != 1 || plan.Uploads[0].Bucket != bucket || !strings.HasPrefix(plan.Uploads[0].Key, names.GroupConfigPrefix("web")) {
		t.Fatalf("group plan uploads %+v", plan.Uploads)
	}
	if n := stackCount(t, cfn); n != 1 {
		t.Errorf("the group's dry run left %d stacks", n)
	}
	if keys := bucketKeys(t, s3c, bucket, names.NodeConfigPrefix); len(keys) != 0 {
		t.Errorf("the group's dry run uploaded %v", keys)
	}

	live, err := NewGroups(s).RenderGroup(ctx, "core", web)
	if err != nil {
		t.Fatal(err)
	}
	if d := DeploymentOf(live); !maps.Equal(d.Parameters, plan.Parameters) || d.Uploads[0] != plan.Uploads[0] {
		t.Errorf("live render %+v differs from the plan %+v", d, plan)
	}

	if _, err := NewGroups(s).AddAgents(ctx, "core", web, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	up := plan.Uploads[0]
	if keys := bucketKeys(t, s3c, bucket, names.NodeConfigPrefix); len(keys) != 1 || keys[0] != up.Key {
		t.Errorf("add-agents uploaded %v, the plan said %s", keys, up.Key)
	}
	obj, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(up.Key)})
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	if _, err := body.ReadFrom(obj.Body); err != nil {
		t.Fatal(err)
	}
	obj.Body.Close()
	sum := sha256.Sum256(body.Bytes())
	if body.Len() != up.Bytes || hex.EncodeToString(sum[:]) != up.SHA256 || !strings.HasSuffix(up.Key, "node-"+up.SHA256+".env") {
		t.Errorf("uploaded %d bytes with SHA-256 %x, planned %+v", body.Len(), sum, up)
	}
	if got := deployedParams(t, cfn, "core-web"); !sameParams(t, s, got, plan.Parameters) {
		t.Errorf("group deployed with %v, planned %v", got, plan.Parameters)
	}
	tpl, err := cfn.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String("core-web"), TemplateStage: cfntypes.TemplateStageOriginal})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(tpl.TemplateBody) != string(live.Template) {
		t.Error("the deployed template differs from the live render")
	}
	if _, err := NewGroups(s).PlanAgents(ctx, "core", web, CreateOptions{}); !errors.Is(err, ErrRefused) {
		t.Errorf("dry run of an existing group: %v", err)
	}
	if _, err := NewGroups(s).RenderGroup(ctx, "nosuch", web); !errors.Is(err, ErrRefused) {
		t.Errorf("live render against a missing core: %v", err)
	}
}

func stackCount(t *testing.T, cfn *cloudformation.Client) int {
	t.Helper()
	out, err := cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Stacks)
}

func deployedParams(t *testing.T, cfn *cloudformation.Client, stack string) map[string]string {
	t.Helper()
	out, err := cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]string{}
	for _, p := range out.Stacks[0].Parameters {
		params[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
	}
	return params
}

// sameParams compares deployed parameters with planned ones as
// CloudFormation implementations report them: lists in either form, and
// the image path as given or as the AMI it resolves to (moto).
func sameParams(t *testing.T, s *Clients, deployed, planned map[string]string) bool {
	t.Helper()
	if len(deployed) != len(planned) {
		return false
	}
	for k, v := range planned {
		got, ok := deployed[k]
		if k == names.ParamImageParameter && got != v {
			out, err := s.SSM.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(v)})
			if err != nil {
				t.Fatal(err)
			}
			v = aws.ToString(out.Parameter.Value)
		}
		if !ok || !sameValue(got, v) {
			return false
		}
	}
	return true
}

func bucketKeys(t *testing.T, s3c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	out, err := s3c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// The forms of a rendered stack: the deployment's tables, the
// create-stack input with AWS's keys in order, the node configuration.
func TestDeploymentForms(t *testing.T) {
	r := &render.Rendered{
		StackName:  "prod-web",
		Template:   []byte("{}\n"),
		Parameters: map[string]string{"MinSize": "0", "BucketName": "prod-bucket", "InstanceType": "c5.large"},
		Tags:       map[string]string{names.TagRole: names.RoleAgents, names.TagCluster: "prod"},
		Artifacts:  []render.Artifact{{Key: "join/groups/web/node-abc.sh", Body: []byte("#!/bin/sh\n")}},
	}
	d := DeploymentOf(r)
	sum := sha256.Sum256([]byte("#!/bin/sh\n"))
	wantUpload := Upload{Bucket: "prod-bucket", Key: "join/groups/web/node-abc.sh", Bytes: 10, SHA256: hex.EncodeToString(sum[:])}
	if d.TemplateBytes != 3 || d.Capabilities == nil || len(d.Uploads) != 1 || d.Uploads[0] != wantUpload {
		t.Errorf("deployment %+v", d)
	}

	var buf bytes.Buffer
	if err := WriteDeployment(&buf, d); err != nil {
		t.Fatal(err)
	}
	want := `Stack prod-web: template 3 bytes, capabilities none

PARAMETER      VALUE
BucketName     prod-bucket
InstanceType   c5.large
MinSize        0

TAG                  VALUE
clusterctl:cluster   prod
clusterctl:role      agents

UPLOAD                                         BYTES
s3://prod-bucket/join/groups/web/node-abc.sh   10
`
	if buf.String() != want {
		t.Errorf("table form:\n%s\nwant:\n%s", buf.String(), want)
	}

	d.Replaces = "ROLLBACK_COMPLETE"
	buf.Reset()
	if err := WriteDeployment(&buf, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\nThe dead stack prod-web (ROLLBACK_COMPLETE) is deleted first.\n") {
		t.Errorf("the table form does not say the dead stack is deleted first:\n%s", buf.String())
	}

	in := StackInputOf(r)
	if in.StackName != "prod-web" || in.TemplateBody != "{}\n" || in.Capabilities != nil ||
		len(in.Parameters) != 3 || in.Parameters[0] != (StackParameter{"BucketName", "prod-bucket"}) ||
		len(in.Tags) != 2 || in.Tags[0] != (StackTag{names.TagCluster, "prod"}) {
		t.Errorf("stack input %+v", in)
	}

	nc, err := NodeConfigOf(r)
	if err != nil || nc.Script != "#!/bin/sh\n" || nc.Upload != d.Uploads[0] {
		t.Errorf("node configuration %+v, %v", nc, err)
	}
	r.Artifacts = nil
	if _, err := NodeConfigOf(r); err == nil {
		t.Error("a stack without node configuration has one")
	}
}
