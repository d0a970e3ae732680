package cluster

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"golang.org/x/sync/errgroup"

	"github.com/clusterctl/clusterctl/internal/clusterfile"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// motoWorld is what moto holds that settings refer to: an image, the
// default VPC's subnets, a key pair.
type motoWorld struct {
	ami     string
	vpc     string
	subnets []string
	// offered are the subnets whose zone offers the types the tests use
	// (moto's us-east-1e, like the real one, offers neither t3 nor r5).
	offered []string
}

func newMotoWorld(t *testing.T, s *Clients) motoWorld {
	t.Helper()
	ctx := t.Context()
	ec2c := s.EC2.(*ec2.Client)
	images, err := ec2c.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(images.Images) == 0 {
		t.Fatalf("moto's images: %v", err)
	}
	vpcs, err := ec2c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: aws.String("is-default"), Values: []string{"true"}}}})
	if err != nil || len(vpcs.Vpcs) == 0 {
		t.Fatalf("moto's default VPC: %v", err)
	}
	subnets, err := ec2c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil || len(subnets.Subnets) < 2 {
		t.Fatalf("moto's default subnets: %v", err)
	}
	if _, err := ec2c.CreateKeyPair(ctx, &ec2.CreateKeyPairInput{KeyName: aws.String("ops")}); err != nil {
		t.Fatal(err)
	}
	w := motoWorld{ami: aws.ToString(images.Images[0].ImageId), vpc: aws.ToString(vpcs.Vpcs[0].VpcId)}
	for _, sn := range subnets.Subnets {
		w.subnets = append(w.subnets, aws.ToString(sn.SubnetId))
		if aws.ToString(sn.AvailabilityZone) != "us-east-1e" {
			w.offered = append(w.offered, aws.ToString(sn.SubnetId))
		}
	}
	slices.Sort(w.subnets)
	slices.Sort(w.offered)
	return w
}

// roundTrip exports cluster name, writes the file in format, reads it
// back and applies it (dry run): nothing may change.
func roundTrip(t *testing.T, s *Clients, name, format string) {
	t.Helper()
	ctx := t.Context()
	c, err := NewObserver(s).Export(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := clusterfile.Marshal(c, format)
	if err != nil {
		t.Fatal(err)
	}
	back, err := clusterfile.Read("exported."+format, b)
	if err != nil {
		t.Fatalf("the exported file does not read back: %v\n%s", err, b)
	}
	p, err := NewApplier(s).Apply(ctx, ApplyOptions{Spec: back, DryRun: true})
	if err != nil {
		t.Fatalf("apply of the exported file: %v\n%s", err, b)
	}
	if !p.NoChanges {
		for _, sp := range p.Stacks {
			if sp.Action != ActionUnchanged {
				t.Errorf("%s: %s %+v (note %q)\n%s", sp.Stack, sp.Action, sp.Settings, sp.Note, b)
			}
		}
	}
}

// Every setting survives export | apply -f -: a cluster created with it
// (by the flag commands' own functions), exported, read back and applied
// changes nothing. Each core setting gets a cluster, each group setting a
// group; every setting of the spec needs a case.
func TestExportApplyRoundTripEverySetting(t *testing.T) {
	s := motoService(t)
	ctx := t.Context()
	w := newMotoWorld(t, s)
	publicVPC(t, s, w.vpc)
	cert := issuedCertificate(t, s)
	// A network for the core that joins one (create-network's stack).
	rn, err := render.Network(spec.Network{Name: "rtnet", Zones: intp(2)}, render.Build{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stacks.Create(ctx, specFrom(rn, false)); err != nil {
		t.Fatal(err)
	}
	dbSecret := secretSources(t, s, "prod/db", "/prod/api/token", "pager")
	coreCases := []struct {
		setting string
		core    spec.Core
	}{
		{"instanceType", spec.Core{InstanceType: "m5.large"}},
		{"imageId", spec.Core{ImageID: w.ami}},
		{"keyName", spec.Core{KeyName: "ops"}},
		{"sshCidr", spec.Core{SSHCIDR: "203.0.113.0/24"}},
		{"vpcId", spec.Core{VpcID: w.vpc}},
		{"subnetIds", spec.Core{SubnetIDs: w.offered[1:]}},
		{"volumeSize", spec.Core{VolumeSize: intp(25)}},
		{"allowSshFromAnywhere", spec.Core{SSHCIDR: "0.0.0.0/0", AllowSSHFromAnywhere: true}},
		{"managers", spec.Core{Managers: intp(3)}},
		{"tags", spec.Core{Tags: spec.Tags{"team": "platform", "cost-center": "4711"}}},
		{"logRetentionDays", spec.Core{LogRetentionDays: intp(365)}},
		{"logKmsKey", spec.Core{LogKMSKey: "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"}},
		{"logDriver", spec.Core{LogDriver: "none"}},
		{"engineVersion", spec.Core{EngineVersion: "24.0.9"}},
		{"secrets", spec.Core{Secrets: spec.Secrets{
			{Name: "db_password", From: dbSecret, Key: "password"},
			{Name: "api_token", From: "ssm:/prod/api/token"},
		}}},
		{"alarms", spec.Core{Alarms: "off"}},
		{"notify", spec.Core{Notify: "ops@example.com"}},
		{"notify", spec.Core{Notify: "arn:aws:sns:us-east-1:123456789012:pager"}},
		{"backupKeep", spec.Core{BackupKeep: intp(20)}},
		{"operators", spec.Core{Operators: []string{"arn:aws:iam::123456789012:role/ops/Admin", "arn:aws:iam::123456789012:user/alice"}}},
		{"publicIps", spec.Core{PublicIPs: true}},
		{"network", spec.Core{Network: "rtnet"}},
		{"publicSubnetIds", spec.Core{PublicSubnetIDs: w.offered[:1]}},
	}
	groupCases := []struct {
		setting string
		group   spec.Group
	}{
		{"name", spec.Group{}}, // every case names its group and type
		{"instanceType", spec.Group{InstanceType: spec.InstanceTypes{"m7g.large"}}},
		{"instanceType", spec.Group{InstanceType: spec.InstanceTypes{"m5.large", "m5a.large", "m6i.large"}}},
		{"spot", spec.Group{Spot: true}},
		{"onDemandBase", spec.Group{Spot: true, OnDemandBase: intp(1), Count: intp(2)}},
		{"onDemandPercent", spec.Group{Spot: true, OnDemandPercent: intp(50), InstanceType: spec.InstanceTypes{"m5.large", "m6i.large"}}},
		{"spotAllocation", spec.Group{Spot: true, SpotAllocation: spec.SpotCapacityOptimized}},
		{"count", spec.Group{Count: intp(2)}},
		{"min", spec.Group{Count: intp(2), Min: intp(1)}},
		{"max", spec.Group{Max: intp(4)}},
		{"max", spec.Group{Count: intp(2), Max: intp(3)}}, // the default: left out of the file
		{"labels", spec.Group{Labels: spec.Labels{"role": "web", "tier": "front/1"}}},
		{"imageId", spec.Group{ImageID: w.ami}},
		{"imageId", spec.Group{InstanceType: spec.InstanceTypes{"m7g.large"}, ImageID: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64"}},
		{"allowSshFromAnywhere", spec.Group{SSHCIDR: "0.0.0.0/0", AllowSSHFromAnywhere: true}},
		{"volumeSize", spec.Group{VolumeSize: intp(40)}},
		{"subnetIds", spec.Group{SubnetIDs: w.offered[:1]}},
		{"sshCidr", spec.Group{SSHCIDR: "198.51.100.0/24"}},
		{"keyName", spec.Group{KeyName: "ops"}},
		{"rollingUpdate.maxBatch", spec.Group{Count: intp(3), RollingUpdate: spec.RollingUpdate{MaxBatch: intp(2)}}},
		{"rollingUpdate.minInService", spec.Group{RollingUpdate: spec.RollingUpdate{MinInService: intp(0)}}},
		{"publish", spec.Group{Publish: spec.Ports{"80", "8443:30443/tls", "53/udp"}, Certificate: cert}},
		{"loadBalancer", spec.Group{Publish: spec.Ports{"80"}, LoadBalancer: spec.SchemeInternal}},
		{"allowFrom", spec.Group{Publish: spec.Ports{"80"}, AllowFrom: []string{"203.0.113.0/24", "198.51.100.0/24"}}},
		{"certificate", spec.Group{Publish: spec.Ports{"443/tls"}, Certificate: cert}},
		{"deregistrationDelay", spec.Group{Publish: spec.Ports{"80"}, DeregistrationDelay: intp(5)}},
		{"deregistrationDelay", spec.Group{Publish: spec.Ports{"80"}, DeregistrationDelay: intp(30)}}, // the default: left out of the file
		{"accessLogs", spec.Group{Publish: spec.Ports{"80"}, AccessLogs: "rt-lb-logs"}},
		{"tags", spec.Group{Tags: spec.Tags{"team": "web", "owner": "Jane Doe"}, Labels: spec.Labels{"role": "web"}}},
		{"autoscale.enabled", spec.Group{Min: intp(1), Max: intp(4), Autoscale: spec.Autoscale{Enabled: true}}},
		{"publicIps", spec.Group{PublicIPs: true}},
		{"autoscale.scaleDownAfter", spec.Group{Max: intp(3), Autoscale: spec.Autoscale{Enabled: true, ScaleDownAfter: spec.Duration(90 * time.Second)}}},
	}
	covered := map[string]bool{}
	for _, c := range coreCases {
		covered["core."+c.setting] = true
	}
	for _, c := range groupCases {
		covered["group."+c.setting] = true
	}
	for _, f := range spec.Fields(spec.Core{}) {
		if !covered["core."+f.Path] {
			t.Errorf("core setting %s has no case here", f.Path)
		}
	}
	for _, f := range spec.Fields(spec.Group{}) {
		if !covered["group."+f.Path] {
			t.Errorf("group setting %s has no case here", f.Path)
		}
	}

	// The clusters, then the groups, are created as many at a time as
	// apply creates groups. The VPC is public (for the load balancers):
	// every node needs a public IP there.
	var creates errgroup.Group
	creates.SetLimit(DefaultParallel)
	core, groups := NewCore(s), NewGroups(s)
	for i, c := range coreCases {
		c.core.PublicIPs = true
		creates.Go(func() error {
			if _, err := core.CreateCore(ctx, fmt.Sprintf("c%d", i), c.core, CreateOptions{}); err != nil {
				return fmt.Errorf("core %s: %w", c.setting, err)
			}
			return nil
		})
	}
	creates.Go(func() error {
		_, err := core.CreateCore(ctx, "rt", spec.Core{PublicIPs: true}, CreateOptions{})
		return err
	})
	if err := creates.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, c := range coreCases {
		t.Run("core "+c.setting, func(t *testing.T) { roundTrip(t, s, fmt.Sprintf("c%d", i), "yaml") })
	}
	for i, c := range groupCases {
		g := c.group
		g.Name = fmt.Sprintf("g%d", i)
		if len(g.InstanceType) == 0 {
			g.InstanceType = spec.InstanceTypes{"t3.small"}
		}
		g.PublicIPs = true
		creates.Go(func() error {
			if _, err := groups.AddAgents(ctx, "rt", g, CreateOptions{}); err != nil {
				return fmt.Errorf("group %s: %w", c.setting, err)
			}
			return nil
		})
	}
	if err := creates.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"yaml", "json"} {
		t.Run("groups as "+format, func(t *testing.T) { roundTrip(t, s, "rt", format) })
	}
}

// A cluster made from a file exports as that file, but for the defaults;
// an edit of the file then converges the cluster: a group updated, one
// created, one pruned.
func TestApplyFileOnMoto(t *testing.T) {
	s := motoService(t)
	ctx := t.Context()
	w := newMotoWorld(t, s)
	const text = `apiVersion: clusterctl/v1
kind: Cluster
name: prod
core:
  sshCidr: 203.0.113.0/24
  volumeSize: 25
groups:
  - name: web
    instanceType: c5.large
    count: 2
    labels:
      role: web
    sshCidr: 198.51.100.0/24
    rollingUpdate:
      maxBatch: 2
  - name: db
    instanceType: r5.large
    keyName: ops
    volumeSize: 50
    subnetIds: [%s]
`
	want, err := clusterfile.Read("prod.yaml", fmt.Appendf(nil, text, w.offered[0]))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewApplier(s).Apply(ctx, ApplyOptions{Spec: want, File: "prod.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(p); !slices.Equal(got, []string{"prod create", "prod-web create", "prod-db create"}) {
		t.Errorf("first apply: %v", got)
	}
	if got := results(p); len(got) != 3 || got["prod"] != ResultDone || got["prod-web"] != ResultDone || got["prod-db"] != ResultDone {
		t.Errorf("results %v", got)
	}

	got, err := NewObserver(s).Export(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	got.Default()
	if got.Core.VpcID != w.vpc || !slices.Equal(slices.Sorted(slices.Values(got.Core.SubnetIDs)), w.subnets) {
		t.Errorf("the core's network: %s %v, want the default VPC %s %v", got.Core.VpcID, got.Core.SubnetIDs, w.vpc, w.subnets)
	}
	want.Core.VpcID, want.Core.SubnetIDs = got.Core.VpcID, got.Core.SubnetIDs // the defaults the core was created with
	want.Core.Operators = []string{motoCaller}                                // the principal that created it
	// Groups are exported by name.
	byName := func(a, b spec.Group) int { return strings.Compare(a.Name, b.Name) }
	wantSorted := want
	wantSorted.Groups = slices.SortedFunc(slices.Values(want.Groups), byName)
	if !reflect.DeepEqual(got, wantSorted) {
		t.Errorf("exported\n%+v\nwant the file\n%+v", got, want)
	}

	// An edit: web grows, db goes, cache comes.
	edited := want
	edited.Groups = []spec.Group{want.Groups[0], {Name: "cache", InstanceType: spec.InstanceTypes{"r5.large"}}}
	edited.Groups[0].Count, edited.Groups[0].Max = intp(3), nil
	p, err = NewApplier(s).Apply(ctx, ApplyOptions{Spec: edited, Prune: true, Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(p); !slices.Equal(got, []string{"prod unchanged", "prod-web update", "prod-cache create", "prod-db delete"}) {
		t.Errorf("edit: %v", got)
	}
	obs, err := NewObserver(s).Observe(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, g := range obs.Spec.Groups {
		groups = append(groups, g.Name)
	}
	slices.Sort(groups)
	if !slices.Equal(groups, []string{"cache", "web"}) || *obs.Groups["web"].Spec.Count != 3 || obs.Groups["web"].Nodes != 3 {
		t.Errorf("after the edit: groups %v, web %+v", groups, obs.Groups["web"])
	}
	roundTrip(t, s, "prod", "yaml")
}

// secretSources creates on moto what a core's settings may point at: a
// secret (its ARN returned), a parameter and an SNS topic.
func secretSources(t *testing.T, s *Clients, secret, parameter, topic string) string {
	t.Helper()
	ctx := t.Context()
	out, err := s.Sources.SecretsManager.(*secretsmanager.Client).CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(secret), SecretString: aws.String(`{"password":"p"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sources.SSM.(*ssm.Client).PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(parameter), Value: aws.String("v"), Type: ssmtypes.ParameterTypeSecureString}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sources.SNS.(*sns.Client).CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(topic)}); err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.ARN)
}
