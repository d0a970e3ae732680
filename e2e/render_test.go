package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/spec"
)

// deployment is the JSON form of render --parameters and of the dry runs.
type deployment struct {
	Stack         string            `json:"stack"`
	TemplateBytes int               `json:"templateBytes"`
	Parameters    map[string]string `json:"parameters"`
	Tags          map[string]string `json:"tags"`
	Capabilities  []string          `json:"capabilities"`
	Uploads       []upload          `json:"uploads"`
}

type upload struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// stackInput is the document of render --cli-input-json.
type stackInput struct {
	StackName    string
	TemplateBody string
	Parameters   []struct{ ParameterKey, ParameterValue string }
	Tags         []struct{ Key, Value string }
	Capabilities []string
}

// Every flag of render group and render core changes what render prints:
// the template, or the parameters and tags of --parameters (the values
// given reach the parameter or tag that carries them). No flag is
// silently ignored; a new flag without a case here fails the test.
func TestRenderTakesEveryFlag(t *testing.T) {
	parallel(t)
	resetMoto(t)
	must(t, "create-core", "core", "-q") // for -j, which reads the live core

	type tcase struct {
		flag string
		base []string // instead of the command's base arguments
		args []string // added to the base
		// want are parameters and tags (by name) the flag must set;
		// form flags (want nil) must change what is printed instead.
		want map[string]string
		// node: the flag reaches the group's node settings, so render
		// node-config changes with it (and with no other flag). What a
		// node is (its type, its image) it reads from the instance.
		node bool
	}
	for _, cmd := range []struct {
		command []string
		base    []string
		cases   []tcase
	}{
		{[]string{"render", "group"}, []string{"render", "group", "-n", "web", "-t", "c5.large"}, []tcase{
			{"--name", nil, []string{"-n", "api"}, map[string]string{"clusterctl:group": "api"}, true},
			{"--instance-type", nil, []string{"-t", "m7g.large"}, map[string]string{"InstanceType": "m7g.large", "ImageParameter": "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64"}, false},
			{"--instance-type", nil, []string{"-t", "c5.large,c5a.large"}, map[string]string{"InstanceType": "c5.large,c5a.large"}, false},
			{"--spot", nil, []string{"--spot"}, map[string]string{"OnDemandBaseCapacity": "0", "OnDemandPercentageAboveBaseCapacity": "0", "SpotAllocationStrategy": "price-capacity-optimized"}, false},
			{"--on-demand-base", nil, []string{"--spot", "--on-demand-base", "2"}, map[string]string{"OnDemandBaseCapacity": "2"}, false},
			{"--on-demand-percent", nil, []string{"--spot", "--on-demand-percent", "30"}, map[string]string{"OnDemandPercentageAboveBaseCapacity": "30"}, false},
			{"--spot-allocation", nil, []string{"--spot", "--spot-allocation", "lowest-price"}, map[string]string{"SpotAllocationStrategy": "lowest-price"}, false},
			{"--count", nil, []string{"-c", "3"}, map[string]string{"DesiredCapacity": "3", "MaxSize": "4", "MinInstancesInService": "3"}, false},
			{"--min", nil, []string{"--min", "1"}, map[string]string{"MinSize": "1"}, false},
			{"--max", nil, []string{"--max", "5"}, map[string]string{"MaxSize": "5"}, false},
			{"--labels", nil, []string{"-m", "role=web", "-m", "tier=front"}, map[string]string{"clusterctl:labels": "role=web,tier=front"}, true},
			{"--image-id", nil, []string{"--image-id", "ami-0123456789abcdef0"}, map[string]string{"ImageId": "ami-0123456789abcdef0", "clusterctl:image": "ami-0123456789abcdef0"}, false},
			{"--volume-size", nil, []string{"--volume-size", "50"}, map[string]string{"VolumeSize": "50"}, false},
			{"--subnet-ids", nil, []string{"--subnet-ids", "subnet-0123456789abcdef0"}, map[string]string{"SubnetIds": "subnet-0123456789abcdef0", "clusterctl:subnets": "own"}, false},
			{"--ssh-cidr", nil, []string{"--ssh-cidr", "203.0.113.0/24"}, map[string]string{"SshCidr": "203.0.113.0/24"}, false},
			{"--allow-ssh-from-anywhere", nil, []string{"--ssh-cidr", "0.0.0.0/0", "--allow-ssh-from-anywhere"}, map[string]string{"SshCidr": "0.0.0.0/0"}, false},
			{"--key-name", nil, []string{"--key-name", "ops"}, map[string]string{"KeyName": "ops"}, false},
			{"--public-ips", nil, []string{"--public-ips"}, map[string]string{"PublicIps": "true"}, false},
			{"--max-batch", nil, []string{"-c", "3", "--max-batch", "2"}, map[string]string{"MaxBatchSize": "2"}, false},
			{"--min-in-service", nil, []string{"--min-in-service", "0"}, map[string]string{"MinInstancesInService": "0"}, false},
			{"--publish", nil, []string{"--publish", "80,443:30443"}, map[string]string{"LoadBalancerScheme": "internet-facing", "LoadBalancerAllowFrom": "0.0.0.0/0", "DeregistrationDelay": "30", "AccessLogsBucket": ""}, false},
			{"--load-balancer", nil, []string{"--publish", "80", "--load-balancer", "internal"}, map[string]string{"LoadBalancerScheme": "internal"}, false},
			{"--allow-from", nil, []string{"--publish", "80", "--allow-from", "203.0.113.0/24,198.51.100.0/24"}, map[string]string{"LoadBalancerAllowFrom": "203.0.113.0/24,198.51.100.0/24"}, false},
			{"--certificate", nil, []string{"--publish", "443/tls", "--certificate", testCertificateARN}, map[string]string{"CertificateArn": testCertificateARN}, false},
			{"--deregistration-delay", nil, []string{"--publish", "80", "--deregistration-delay", "5"}, map[string]string{"DeregistrationDelay": "5"}, false},
			{"--access-logs", nil, []string{"--publish", "80", "--access-logs", "ops-lb-logs"}, map[string]string{"AccessLogsBucket": "ops-lb-logs"}, false},
			{"--tags", nil, []string{"--tags", "team=web"}, map[string]string{"team": "web"}, false},
			{"--autoscale", nil, []string{"--autoscale", "--min", "2", "--max", "5"}, map[string]string{"DesiredCapacity": "2", "MinSize": "2", "MaxSize": "5"}, false},
			{"--scale-down-after", []string{"render", "group", "-n", "web", "-t", "c5.large", "--autoscale"}, []string{"--scale-down-after", "3m"}, nil, false},
			{"--cluster", nil, []string{"-j", "core"}, map[string]string{"ClusterName": "core", "ContractVersion": "2", "ManagersKey": "join/swarm/managers"}, true},
			{"--cluster", nil, []string{"-j", "prod", "--offline"}, map[string]string{"clusterctl:cluster": "prod"}, true},
			{"--offline", []string{"render", "group", "-n", "web", "-t", "c5.large", "-j", "core"}, []string{"--offline"}, map[string]string{"ClusterName": "", "BucketName": ""}, true},
			{"--parameters", nil, []string{"--parameters"}, nil, false},
			{"--cli-input-json", nil, []string{"--cli-input-json"}, nil, false},
		}},
		{[]string{"render", "core"}, []string{"render", "core", "c9"}, []tcase{
			{"--instance-type", nil, []string{"--instance-type", "m5.large"}, map[string]string{"InstanceType": "m5.large"}, false},
			{"--image-id", nil, []string{"--image-id", "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-6.1-x86_64"}, map[string]string{"ImageParameter": "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-6.1-x86_64"}, false},
			{"--key-name", nil, []string{"--key-name", "ops"}, map[string]string{"KeyName": "ops"}, false},
			{"--ssh-cidr", nil, []string{"--ssh-cidr", "203.0.113.0/24"}, map[string]string{"SshCidr": "203.0.113.0/24"}, false},
			{"--allow-ssh-from-anywhere", nil, []string{"--ssh-cidr", "0.0.0.0/0", "--allow-ssh-from-anywhere"}, map[string]string{"SshCidr": "0.0.0.0/0"}, false},
			{"--vpc-id", nil, []string{"--vpc-id", "vpc-0123456789abcdef0"}, map[string]string{"VpcId": "vpc-0123456789abcdef0"}, false},
			{"--subnet-ids", nil, []string{"--subnet-ids", "subnet-0123456789abcdef0,subnet-0123456789abcdef1"}, map[string]string{"SubnetIds": "subnet-0123456789abcdef0,subnet-0123456789abcdef1"}, false},
			{"--volume-size", nil, []string{"--volume-size", "50"}, map[string]string{"VolumeSize": "50"}, false},
			{"--managers", nil, []string{"--managers", "3"}, map[string]string{"Managers": "3"}, false},
			{"--tags", nil, []string{"--tags", "team=platform"}, map[string]string{"team": "platform"}, false},
			{"--cluster", []string{"render", "core"}, []string{"-j", "c9"}, map[string]string{"clusterctl:cluster": "c9"}, false},
			{"--log-retention-days", nil, []string{"--log-retention-days", "7"}, map[string]string{"LogRetentionDays": "7"}, false},
			{"--log-kms-key", nil, []string{"--log-kms-key", "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"}, map[string]string{"LogKmsKey": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"}, false},
			{"--log-driver", nil, []string{"--log-driver", "none"}, map[string]string{"LogDriver": "none"}, false},
			{"--engine-version", nil, []string{"--engine-version", "24.0.9"}, map[string]string{"EngineVersion": "24.0.9"}, false},
			{"--alarms", nil, []string{"--alarms", "off"}, map[string]string{"Alarms": "off"}, false},
			{"--notify", nil, []string{"--notify", "ops@example.com"}, map[string]string{"NotifyEmail": "ops@example.com", "NotifyTopicArn": ""}, false},
			{"--notify", nil, []string{"--notify", "arn:aws:sns:us-east-1:123456789012:pager"}, map[string]string{"NotifyTopicArn": "arn:aws:sns:us-east-1:123456789012:pager", "NotifyEmail": ""}, false},
			{"--backup-keep", nil, []string{"--backup-keep", "20"}, map[string]string{"BackupKeep": "20"}, false},
			{"--operators", nil, []string{"--operators", "arn:aws:iam::123456789012:role/Admin"}, map[string]string{"Operators": "arn:aws:iam::123456789012:role/Admin"}, false},
			{"--public-ips", nil, []string{"--public-ips"}, map[string]string{"PublicIps": "true"}, false},
			{"--network", nil, []string{"--network", "prod"}, map[string]string{"Network": "prod", "clusterctl:network": "prod"}, false},
			{"--public-subnet-ids", nil, []string{"--public-subnet-ids", "subnet-0123456789abcdef2"}, map[string]string{"PublicSubnetIds": "subnet-0123456789abcdef2"}, false},
			{"--parameters", nil, []string{"--parameters"}, nil, false},
			{"--cli-input-json", nil, []string{"--cli-input-json"}, nil, false},
		}},
	} {
		name := strings.Join(cmd.command, " ")
		covered := map[string]bool{}
		for _, c := range cmd.cases {
			covered[c.flag] = true
		}
		for _, f := range flagsOf(t, cmd.command...) {
			if !covered[f] {
				t.Errorf("%s %s has no case here: show that it changes what is rendered", name, f)
			}
		}
		for _, c := range cmd.cases {
			t.Run(name+" "+strings.Join(c.args, " "), func(t *testing.T) {
				base := cmd.base
				if c.base != nil {
					base = c.base
				}
				with := overriding(base, c.args)
				if c.want == nil {
					if before, after := must(t, base...).stdout, must(t, with...).stdout; before == after {
						t.Errorf("%s prints the template unchanged", c.flag)
					}
					return
				}
				before, after := renderedStack(t, base), renderedStack(t, with)
				if before.template == after.template && maps.Equal(before.values, after.values) {
					t.Fatalf("%s changes neither the template nor the parameters and tags", strings.Join(c.args, " "))
				}
				for k, v := range c.want {
					if got, ok := after.values[k]; !ok || got != v {
						t.Errorf("%s: %s = %q, want %q", strings.Join(c.args, " "), k, got, v)
					}
				}
				if cmd.command[1] != "group" {
					return
				}
				// render node-config takes the same flags.
				nodeConfig := func(args []string) string {
					return must(t, slices.Concat([]string{"render", "node-config"}, args[2:])...).stdout
				}
				if changed := nodeConfig(base) != nodeConfig(with); changed != c.node {
					t.Errorf("%s changes the node configuration: %v, want %v", strings.Join(c.args, " "), changed, c.node)
				}
			})
		}
	}
}

// rendered is what render prints of one stack: its template and its
// parameters and tags (by name; none share a name).
type rendered struct {
	template string
	values   map[string]string
}

func renderedStack(t *testing.T, args []string) rendered {
	t.Helper()
	d := decode[deployment](t, must(t, slices.Concat(args, []string{"--parameters", "-o", "json"})...))
	values := maps.Clone(d.Parameters)
	maps.Copy(values, d.Tags)
	return rendered{template: must(t, args...).stdout, values: values}
}

// A group rendered with -j is what add-agents deploys: the same template,
// the same parameters, and the node configuration under the same key with
// the same bytes. The dry runs of create-core and add-agents show the same
// and create and upload nothing.
func TestRenderIsWhatAddAgentsDeploys(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()

	r := must(t, "create-core", "core", "--dry-run", "-q")
	if !strings.HasPrefix(r.stdout, "Stack core: template ") || !strings.Contains(r.stdout, "CAPABILITY_IAM") ||
		!strings.Contains(r.stdout, "VpcId ") || !strings.Contains(r.stderr, "Dry run: nothing created") {
		t.Errorf("create-core --dry-run:\n%s", r)
	}
	if got := c.stackNames(t); len(got) != 0 {
		t.Fatalf("create-core --dry-run created %v", got)
	}
	if b := buckets(t, c); len(b) != 0 {
		t.Fatalf("create-core --dry-run created buckets %v", b)
	}
	corePlan := decode[deployment](t, must(t, "create-core", "core", "--dry-run", "-o", "json", "-q"))
	must(t, "create-core", "core", "-q")
	if got := deployedStack(t, c, "core").params; !sameParameters(got, corePlan.Parameters) {
		t.Errorf("core deployed with %v, its dry run showed %v", got, corePlan.Parameters)
	}
	bucket := describeStack(t, c, "core").Outputs
	bucketName := ""
	for _, o := range bucket {
		if aws.ToString(o.OutputKey) == "BucketName" {
			bucketName = aws.ToString(o.OutputValue)
		}
	}

	group := []string{"-n", "web", "-t", "c5.large", "-j", "core", "-c", "2", "-m", "role=web", "--ssh-cidr", "203.0.113.0/24"}
	live := decode[deployment](t, must(t, slices.Concat([]string{"render", "group"}, group, []string{"--parameters", "-o", "json"})...))
	template := must(t, slices.Concat([]string{"render", "group"}, group)...).stdout
	script := must(t, slices.Concat([]string{"render", "node-config"}, group)...).stdout
	key := must(t, slices.Concat([]string{"render", "node-config"}, group, []string{"--query", ".key"})...).stdout
	if len(live.Uploads) != 1 || live.Uploads[0].Bucket != bucketName || live.Uploads[0].Key+"\n" != key || live.Uploads[0].Bytes != len(script) {
		t.Fatalf("render group -j core uploads %+v; render node-config: key %q, %d bytes", live.Uploads, key, len(script))
	}
	if live.Parameters["BucketName"] != bucketName || live.Parameters["SshCidr"] != "203.0.113.0/24" || live.Parameters["DesiredCapacity"] != "2" {
		t.Errorf("render group -j core parameters %v", live.Parameters)
	}
	offline := decode[deployment](t, must(t, slices.Concat([]string{"render", "group"}, group, []string{"--offline", "--parameters", "-o", "json"})...))
	if offline.Uploads[0].Key == live.Uploads[0].Key {
		t.Error("the offline node configuration has the live one's hash: the core's values do not reach it")
	}

	r = must(t, slices.Concat([]string{"add-agents"}, group, []string{"--dry-run", "-q"})...)
	if !strings.Contains(r.stdout, "s3://"+bucketName+"/"+live.Uploads[0].Key) || !strings.Contains(r.stderr, "Dry run: nothing created or uploaded") {
		t.Errorf("add-agents --dry-run:\n%s", r)
	}
	plan := decode[deployment](t, must(t, slices.Concat([]string{"add-agents"}, group, []string{"--dry-run", "-o", "json", "-q"})...))
	if !maps.Equal(plan.Parameters, live.Parameters) || !maps.Equal(plan.Tags, live.Tags) || !slices.Equal(plan.Uploads, live.Uploads) || plan.TemplateBytes != len(template) {
		t.Errorf("add-agents --dry-run %+v differs from render group -j core %+v", plan, live)
	}
	if got := c.stackNames(t); !slices.Equal(got, []string{"core"}) {
		t.Errorf("add-agents --dry-run left stacks %v", got)
	}
	if keys := objectKeys(t, c, bucketName, "join/groups/"); len(keys) != 0 {
		t.Errorf("add-agents --dry-run uploaded %v", keys)
	}

	must(t, slices.Concat([]string{"add-agents"}, group, []string{"-q"})...)
	if keys := objectKeys(t, c, bucketName, "join/groups/"); !slices.Equal(keys, []string{live.Uploads[0].Key}) {
		t.Errorf("add-agents uploaded %v; render group -j core said %s", keys, live.Uploads[0].Key)
	}
	obj, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucketName), Key: aws.String(live.Uploads[0].Key)})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	if err != nil || string(body) != script {
		t.Errorf("the uploaded node configuration differs from render node-config (%v)", err)
	}
	dep := deployedStack(t, c, "core-web")
	if dep.template != template {
		t.Error("the deployed template differs from render group -j core")
	}
	if !sameParameters(dep.params, live.Parameters) {
		t.Errorf("deployed parameters %v, rendered %v", dep.params, live.Parameters)
	}

	if r := clusterctl(t, "render", "group", "-n", "web", "-t", "c5.large", "-j", "nosuch"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("render group -j of a missing cluster:\n%s", r)
	}
	if r := clusterctl(t, "add-agents", "-n", "web", "-t", "c5.large", "-j", "core", "--dry-run"); r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("add-agents --dry-run of an existing group:\n%s", r)
	}
	for _, args := range [][]string{
		{"add-agents", "-n", "api", "-t", "c5.large", "-j", "core", "-c", "5", "--max", "3", "--dry-run"},
		{"render", "group", "-n", "api", "-t", "c5.large", "-j", "core", "-c", "5", "--max", "3"},
		{"render", "node-config", "-n", "api", "-t", "c5.large", "-j", "core", "-c", "5", "--max", "3"},
	} {
		if r := clusterctl(t, args...); r.code != 2 || !strings.HasPrefix(r.stderr, "clusterctl: --max: ") || r.stdout != "" {
			t.Errorf("%s:\n%s", strings.Join(args, " "), r)
		}
	}
}

// sameParameters compares deployed parameters with rendered ones as moto
// reports them: lists in Python's form, and the image path resolved to
// its AMI (so that one is left out).
func sameParameters(deployed, rendered map[string]string) bool {
	if len(deployed) != len(rendered) {
		return false
	}
	for k, v := range rendered {
		got, ok := deployed[k]
		if !ok || k != "ImageParameter" && got != v && !slices.Equal(spec.SplitList(got), spec.SplitList(v)) {
			return false
		}
	}
	return true
}

func buckets(t *testing.T, c clients) []string {
	t.Helper()
	out, err := c.s3.ListBuckets(context.Background(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range out.Buckets {
		names = append(names, aws.ToString(b.Name))
	}
	return names
}

func objectKeys(t *testing.T, c clients, bucket, prefix string) []string {
	t.Helper()
	out, err := c.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// An operator with the AWS CLI deploys a group by hand from what render
// prints, with the steps of docs/render.md (the block after its
// "<!-- run: TestGroupDeployedByHand" line): the node configuration
// uploaded under its key, the stack created from --cli-input-json.
// clusterctl recognises the group as one of its own, joined, and has
// nothing to change in it.
func TestGroupDeployedByHand(t *testing.T) {
	parallel(t)
	if _, err := exec.LookPath("aws"); err != nil {
		t.Fatal("the AWS CLI is needed (pip install awscli): ", err)
	}
	script := readmeBlock(t, "<!-- run: TestGroupDeployedByHand")
	if !strings.Contains(script, "aws cloudformation create-stack --cli-input-json") {
		t.Fatalf("the block of docs/render.md does not create the stack:\n%s", script)
	}
	resetMoto(t)
	must(t, "create-core", "core", "-q")
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = t.TempDir()
	// The AWS CLI takes an empty AWS_PROFILE for a profile named "". The
	// region is set as docs/aws.md's "Pointing it at AWS" says, so that
	// the AWS CLI v1 (which reads only AWS_DEFAULT_REGION) finds it too.
	cmd.Env = slices.DeleteFunc(append(envOf(t), "PATH="+filepath.Dir(binary)+":"+pathEnv()), func(v string) bool {
		return strings.HasPrefix(v, "AWS_PROFILE=") || strings.HasPrefix(v, "AWS_REGION=") || strings.HasPrefix(v, "AWS_DEFAULT_REGION=")
	})
	cmd.Env = append(cmd.Env, readmeRegionEnv(t, "us-east-1")...)
	if r := runCommand(t, cmd); r.code != 0 {
		t.Fatalf("%s\n%s", script, r)
	}

	type group struct {
		Group        string            `json:"group"`
		Stack        string            `json:"stack"`
		InstanceType string            `json:"instanceType"`
		Desired      int               `json:"desired"`
		Labels       map[string]string `json:"labels"`
		Joined       bool              `json:"joined"`
	}
	groups := decode[[]group](t, must(t, "list-groups", "-j", "core", "-o", "json"))
	want := group{Group: "hand", Stack: "core-hand", InstanceType: "t3.small", Desired: 2, Labels: map[string]string{"role": "hand"}, Joined: true}
	if len(groups) != 1 || fmt.Sprint(groups[0]) != fmt.Sprint(want) {
		t.Errorf("list-groups after deploying by hand: %+v, want %+v", groups, want)
	}
	if r := must(t, "update-group", "-n", "hand", "-j", "core", "-q"); !strings.Contains(r.stderr, "No changes") {
		t.Errorf("update-group of the group deployed by hand:\n%s", r)
	}
	if r := must(t, "describe", "core"); !strings.Contains(r.stdout, "healthy") {
		t.Errorf("describe:\n%s", r)
	}
}

// The upload of a hand-deployed group's node configuration (docs/render.md)
// survives a command on another group run before the stack is created:
// the configuration no launch template names yet is young, and kept.
func TestHandUploadKeptBeforeItsStack(t *testing.T) {
	parallel(t)
	if _, err := exec.LookPath("aws"); err != nil {
		t.Fatal("the AWS CLI is needed (pip install awscli): ", err)
	}
	script, _, ok := strings.Cut(readmeBlock(t, "<!-- run: TestGroupDeployedByHand"), "aws cloudformation create-stack")
	if !ok || !strings.Contains(script, "aws s3 cp") {
		t.Fatalf("the block of docs/render.md does not upload before it creates the stack:\n%s", script)
	}
	c, bucket := newCluster(t, "g")
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = slices.DeleteFunc(append(envOf(t), "PATH="+filepath.Dir(binary)+":"+pathEnv()), func(v string) bool {
		return strings.HasPrefix(v, "AWS_PROFILE=") || strings.HasPrefix(v, "AWS_REGION=") || strings.HasPrefix(v, "AWS_DEFAULT_REGION=")
	})
	cmd.Env = append(cmd.Env, readmeRegionEnv(t, "us-east-1")...)
	if r := runCommand(t, cmd); r.code != 0 {
		t.Fatalf("%s\n%s", script, r)
	}
	uploaded := objectKeys(t, c, bucket, "join/groups/hand/")
	if len(uploaded) != 1 {
		t.Fatalf("the upload of docs/render.md left %v", uploaded)
	}
	r := must(t, "update-group", "-n", "g", "-j", "core", "-c", "2")
	if strings.Contains(r.stderr, "group hand") {
		t.Errorf("a command on another group touched the hand group's configuration:\n%s", r)
	}
	if got := objectKeys(t, c, bucket, "join/groups/hand/"); !slices.Equal(got, uploaded) {
		t.Errorf("node configuration of the hand group after a command on another group: %v, want %v", got, uploaded)
	}
}

// docs/render.md documents every parameter of a group stack and every tag
// clusterctl puts on it, so that an operator can deploy one by hand.
func TestReadmeDocumentsGroupParametersAndTags(t *testing.T) {
	parallel(t)
	readme, err := os.ReadFile("../docs/render.md")
	if err != nil {
		t.Fatal(err)
	}
	in := decode[stackInput](t, must(t, "render", "group", "-n", "web", "-t", "c5.large", "-m", "role=web", "--cli-input-json"))
	var names []string
	for _, p := range in.Parameters {
		names = append(names, p.ParameterKey)
	}
	for _, tag := range in.Tags {
		names = append(names, tag.Key)
	}
	if len(names) < 20 {
		t.Fatalf("only %d parameters and tags rendered: %+v", len(names), in)
	}
	for _, n := range names {
		if !strings.Contains(string(readme), "| `"+n+"` |") {
			t.Errorf("docs/render.md has no table row for the group's %s", n)
		}
	}
}

// readmeRegionEnv returns the region variables the "Pointing it at AWS"
// example of docs/aws.md exports, each set to region.
func readmeRegionEnv(t *testing.T, region string) []string {
	t.Helper()
	readme, err := os.ReadFile("../docs/aws.md")
	if err != nil {
		t.Fatal(err)
	}
	var vars []string
	for _, line := range strings.Split(section(string(readme), "## Pointing it at AWS"), "\n") {
		words, ok := strings.CutPrefix(line, "export ")
		if !ok {
			continue
		}
		for _, w := range strings.Fields(words) {
			if name, _, ok := strings.Cut(w, "="); ok && strings.Contains(name, "REGION") {
				vars = append(vars, name+"="+region)
			}
		}
	}
	if len(vars) == 0 {
		t.Fatal(`docs/aws.md's "Pointing it at AWS" exports no region`)
	}
	return vars
}

// readmeBlock returns the fenced block of docs/render.md that follows the
// line starting with marker.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	readme, err := os.ReadFile("../docs/render.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n"+marker)
	if !ok {
		t.Fatalf("docs/render.md has no line %q", marker)
	}
	_, after, _ = strings.Cut(after, "\n```\n")
	block, _, ok := strings.Cut(after, "\n```\n")
	if !ok {
		t.Fatalf("docs/render.md has no fenced block after %q", marker)
	}
	return block + "\n"
}

// overriding is base with args after it, less the flags of base that args
// give again (with their values): a flag of one value is given once.
func overriding(base, args []string) []string {
	again := map[string]bool{}
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			again[a] = true
		}
	}
	var out []string
	for i := 0; i < len(base); i++ {
		if again[base[i]] {
			if i+1 < len(base) && !strings.HasPrefix(base[i+1], "-") {
				i++
			}
			continue
		}
		out = append(out, base[i])
	}
	return append(out, args...)
}
