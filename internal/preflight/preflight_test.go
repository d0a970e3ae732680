package preflight

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/motoserver"
	"github.com/clusterctl/clusterctl/internal/render"
)

var (
	ec2c *ec2.Client
	ssmc *ssm.Client
	// The account's default VPC and its default subnet in each zone.
	defaultVPC string
	subnetIn   = map[string]string{}
	// A subnet of another VPC, and the AMIs Amazon Linux 2023 resolves to.
	foreignSubnet, foreignVPC string
	al2023                    = map[string]string{}
	// awsConfig reaches moto, for the clients of other services.
	awsConfig aws.Config
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	srv, err := motoserver.Start(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "preflight: FAIL:", err) // never a skip
		return 1
	}
	defer srv.Close()
	ctx := context.Background()
	cfg, err := motoserver.Config(ctx, srv.URL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ec2c, ssmc = ec2.NewFromConfig(cfg), ssm.NewFromConfig(cfg)
	awsConfig = cfg
	if err := setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "preflight: setting up moto:", err)
		return 1
	}
	return m.Run()
}

func setup(ctx context.Context) error {
	subnets, err := ec2c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil {
		return err
	}
	for _, sn := range subnets.Subnets {
		subnetIn[aws.ToString(sn.AvailabilityZone)] = aws.ToString(sn.SubnetId)
		defaultVPC = aws.ToString(sn.VpcId)
	}
	vpc, err := ec2c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.9.0.0/16")})
	if err != nil {
		return err
	}
	foreignVPC = aws.ToString(vpc.Vpc.VpcId)
	sn, err := ec2c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String("10.9.1.0/24"), AvailabilityZone: aws.String("us-east-1a")})
	if err != nil {
		return err
	}
	foreignSubnet = aws.ToString(sn.Subnet.SubnetId)
	if _, err := ec2c.CreateKeyPair(ctx, &ec2.CreateKeyPairInput{KeyName: aws.String("ops")}); err != nil {
		return err
	}
	for _, arch := range []string{"x86_64", "arm64"} {
		p, err := ssmc.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(render.ImageParameterFor(arch))})
		if err != nil {
			return err
		}
		al2023[arch] = aws.ToString(p.Parameter.Value)
	}
	return nil
}

func TestCheck(t *testing.T) {
	a, b, e := subnetIn["us-east-1a"], subnetIn["us-east-1b"], subnetIn["us-east-1e"]
	tests := []struct {
		name string
		req  Request
		want string // "" = passes
		ok   func(t *testing.T, r *Report)
	}{
		{"default image follows EC2's architecture", Request{InstanceTypes: []string{"m5.large"}, SubnetIDs: []string{a, b}, VpcID: defaultVPC, KeyName: "ops"}, "",
			func(t *testing.T, r *Report) {
				if r.Architecture != "x86_64" || r.ImageID != al2023["x86_64"] || r.ImageParameter != render.ImageParameterFor("x86_64") ||
					r.SubnetZones[a] != "us-east-1a" || r.SubnetZones[b] != "us-east-1b" || len(r.Unoffered) != 0 {
					t.Errorf("report = %+v", r)
				}
			}},
		{"graviton", Request{InstanceTypes: []string{"m7g.large"}, SubnetIDs: []string{a}}, "",
			func(t *testing.T, r *Report) {
				if r.Architecture != "arm64" || r.ImageID != al2023["arm64"] {
					t.Errorf("report = %+v", r)
				}
			}},
		{"several types of one architecture", Request{InstanceTypes: []string{"m5.large", "m5a.large", "m6i.large"}, SubnetIDs: []string{a}}, "", nil},
		{"an AMI id", Request{InstanceTypes: []string{"m7g.large"}, Image: al2023["arm64"], SubnetIDs: []string{a}}, "",
			func(t *testing.T, r *Report) {
				if r.ImageID != al2023["arm64"] || r.ImageParameter != "" {
					t.Errorf("report = %+v", r)
				}
			}},
		{"an SSM path", Request{InstanceTypes: []string{"m7g.large"}, Image: render.ImageParameterFor("arm64"), SubnetIDs: []string{a}}, "", nil},
		{"no zone offers the type", Request{InstanceTypes: []string{"c5.large"}, SubnetIDs: []string{e}, Zones: SomeZone},
			"instance type c5.large is not offered in any of the subnets' zones (us-east-1e)", nil},
		{"a zone lacks the type, subnets named", Request{InstanceTypes: []string{"c5.large"}, SubnetIDs: []string{a, e}},
			"instance type c5.large is not offered in us-east-1e (subnet " + e + ")", nil},
		{"a zone lacks the type, subnets by default", Request{InstanceTypes: []string{"c5.large"}, SubnetIDs: []string{a, e}, Zones: SomeZone}, "",
			func(t *testing.T, r *Report) {
				if len(r.Unoffered) != 1 || r.Unoffered[0].String() != "c5.large is not offered in us-east-1e (subnet "+e+")" {
					t.Errorf("Unoffered = %v", r.Unoffered)
				}
			}},
		{"unknown type", Request{InstanceTypes: []string{"foo9.bar"}, SubnetIDs: []string{a}}, "instance type foo9.bar does not exist in this region", nil},
		{"a slip of the keyboard", Request{InstanceTypes: []string{"c5.lage"}, SubnetIDs: []string{a}}, "instance type c5.lage does not exist in this region; did you mean c5.large?", nil},
		{"mixed architectures", Request{InstanceTypes: []string{"m5.large", "m7g.large", "m6i.large"}, SubnetIDs: []string{a}},
			"instance types must share one architecture: m7g.large is arm64, while m5.large, m6i.large are x86_64", nil},
		{"missing subnet", Request{InstanceTypes: []string{"m5.large"}, SubnetIDs: []string{a, "subnet-0123456789abcdef0"}, VpcID: defaultVPC},
			"subnet subnet-0123456789abcdef0 does not exist", nil},
		{"subnet of another VPC", Request{InstanceTypes: []string{"m5.large"}, SubnetIDs: []string{a, foreignSubnet}, VpcID: defaultVPC},
			"subnet " + foreignSubnet + " is in " + foreignVPC + ", not in the core's VPC " + defaultVPC, nil},
		{"missing key pair", Request{InstanceTypes: []string{"m5.large"}, SubnetIDs: []string{a}, KeyName: "nosuch"}, `key pair "nosuch" does not exist in this region`, nil},
		{"missing AMI", Request{InstanceTypes: []string{"m5.large"}, SubnetIDs: []string{a}, Image: "ami-0123456789abcdef0"},
			"image ami-0123456789abcdef0 does not exist or is not available to this account", nil},
		{"missing SSM path", Request{InstanceTypes: []string{"m5.large"}, SubnetIDs: []string{a}, Image: "/nope/ami"}, "image SSM parameter /nope/ami does not exist", nil},
		{"AMI of another architecture", Request{InstanceTypes: []string{"m5.large"}, SubnetIDs: []string{a}, Image: al2023["arm64"]},
			"image " + al2023["arm64"] + " is arm64, which instance type m5.large (x86_64) cannot run", nil},
		{"SSM path to another architecture", Request{InstanceTypes: []string{"m7g.large"}, SubnetIDs: []string{a}, Image: render.ImageParameterFor("x86_64")},
			"image " + al2023["x86_64"] + " (from " + render.ImageParameterFor("x86_64") + ") is x86_64, which instance type m7g.large (arm64) cannot run", nil},
		{"everything at once, in a fixed order", Request{InstanceTypes: []string{"foo9.bar", "m5.large"}, SubnetIDs: []string{"subnet-0123456789abcdef0"}, KeyName: "nosuch", Image: "ami-0123456789abcdef0"},
			"pre-flight: instance type foo9.bar does not exist in this region; subnet subnet-0123456789abcdef0 does not exist; key pair \"nosuch\" does not exist in this region; image ami-0123456789abcdef0 does not exist", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Check(t.Context(), ec2c, ssmc, tt.req)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check = %v", err)
				}
				if tt.ok != nil {
					tt.ok(t, r)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check passed, want %q", tt.want)
			}
			if errs.ExitCode(err) != errs.ExitUsage || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Check = %q (exit %d), want one usage line containing %q", err, errs.ExitCode(err), tt.want)
			}
		})
	}
}

func TestArchitecture(t *testing.T) {
	archs, err := Architectures(t.Context(), ec2c, []string{"m5.large", "m7g.large", "t2.micro", "a1.large", "g5g.xlarge", "g4dn.xlarge"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"m5.large": "x86_64", "m7g.large": "arm64", "t2.micro": "x86_64", "a1.large": "arm64", "g5g.xlarge": "arm64", "g4dn.xlarge": "x86_64"}
	for k, v := range want {
		if archs[k] != v {
			t.Errorf("%s: %q, want %q", k, archs[k], v)
		}
	}
	if a, err := Architecture(t.Context(), ec2c, "r3.large"); err != nil || a != "x86_64" {
		t.Errorf("Architecture(r3.large) = %q, %v", a, err)
	}
	if _, err := Architecture(t.Context(), ec2c, "foo9.bar"); errs.ExitCode(err) != errs.ExitUsage || !strings.Contains(err.Error(), "foo9.bar does not exist") {
		t.Errorf("Architecture(foo9.bar) = %v", err)
	}
}

// scripted plays the EC2 calls moto cannot be made to answer so: an image
// still pending, and an API failure.
type scripted struct {
	EC2API
	image ec2types.Image
	fail  error
}

func (s scripted) DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, opts ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error) {
	if s.fail != nil {
		return nil, s.fail
	}
	return &ec2.DescribeImagesOutput{Images: []ec2types.Image{s.image}}, nil
}

func TestImageStateAndAPIFailure(t *testing.T) {
	a := subnetIn["us-east-1a"]
	pending := scripted{EC2API: ec2c, image: ec2types.Image{ImageId: aws.String("ami-0aaaaaaaaaaaaaaaa"), State: ec2types.ImageStatePending, Architecture: ec2types.ArchitectureValuesX8664}}
	_, err := Check(t.Context(), pending, ssmc, Request{InstanceTypes: []string{"m5.large"}, SubnetIDs: []string{a}, Image: "ami-0aaaaaaaaaaaaaaaa"})
	if errs.ExitCode(err) != errs.ExitUsage || !strings.Contains(err.Error(), "image ami-0aaaaaaaaaaaaaaaa is pending, not available") {
		t.Errorf("pending image: %v", err)
	}
	down := scripted{EC2API: ec2c, fail: errors.New("service unavailable")}
	_, err = Check(t.Context(), down, ssmc, Request{InstanceTypes: []string{"m5.large"}, SubnetIDs: []string{a}})
	if err == nil || errs.ExitCode(err) != errs.ExitFailed || !strings.Contains(err.Error(), "service unavailable") {
		t.Errorf("EC2 failing: %v (exit %d), want a failure, not a usage error", err, errs.ExitCode(err))
	}
}

// Mixed-instance groups will ask about several types: each zone gap is
// named per type.
func TestSeveralTypesZoneGaps(t *testing.T) {
	a, d := subnetIn["us-east-1a"], subnetIn["us-east-1d"]
	// r3.large is offered in us-east-1a but not us-east-1d; m5.large in both.
	_, err := Check(t.Context(), ec2c, ssmc, Request{InstanceTypes: []string{"m5.large", "r3.large"}, SubnetIDs: []string{a, d}})
	if err == nil || !strings.Contains(err.Error(), "instance type r3.large is not offered in us-east-1d") || strings.Contains(err.Error(), "m5.large is not offered") {
		t.Errorf("Check = %v", err)
	}
	r, err := Check(t.Context(), ec2c, ssmc, Request{InstanceTypes: []string{"m5.large", "r3.large"}, SubnetIDs: []string{a, d}, Zones: SomeZone})
	if err != nil || !slices.ContainsFunc(r.Unoffered, func(g Gap) bool { return g.InstanceType == "r3.large" && g.Zone == "us-east-1d" }) {
		t.Errorf("SomeZone: %+v, %v", r, err)
	}
}
