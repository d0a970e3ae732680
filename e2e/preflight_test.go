package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// objectsUnder counts the object versions under a prefix of a bucket.
func objectsUnder(t *testing.T, c clients, bucket, prefix string) int {
	t.Helper()
	out, err := c.s3.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Versions)
}

// Settings the account cannot honour are refused before anything is
// created or uploaded: exit 2, one line.
func TestPreflightRefusals(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()
	must(t, "create-core", "core", "-q")
	bucket := outputs(describeStack(t, c, "core"))["BucketName"]
	vpc, err := c.ec2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.7.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	sn, err := c.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String("10.7.1.0/24"), AvailabilityZone: aws.String("us-east-1a")})
	if err != nil {
		t.Fatal(err)
	}
	foreign := aws.ToString(sn.Subnet.SubnetId)
	const arm = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64"

	add := []string{"add-agents", "-n", "g", "-j", "core", "-q"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"subnet of another VPC", append(add, "-t", "m5.large", "--subnet-ids", foreign), "subnet " + foreign + " is in " + aws.ToString(vpc.Vpc.VpcId) + ", not in the core's VPC"},
		{"missing subnet", append(add, "-t", "m5.large", "--subnet-ids", "subnet-0123456789abcdef0"), "subnet subnet-0123456789abcdef0 does not exist"},
		{"unknown instance type", append(add, "-t", "foo9.bar"), "instance type foo9.bar does not exist"},
		{"missing AMI", append(add, "-t", "m5.large", "--image-id", "ami-0123456789abcdef0"), "image ami-0123456789abcdef0 does not exist"},
		{"image of another architecture", append(add, "-t", "m5.large", "--image-id", arm), "is arm64, which instance type m5.large (x86_64) cannot run"},
		{"type not offered where asked", append(add, "-t", "c5.large", "--subnet-ids", subnetOf(t, c, "us-east-1a")+","+subnetOf(t, c, "us-east-1e")), "instance type c5.large is not offered in us-east-1e (subnet "},
		{"core key pair", []string{"create-core", "other", "--key-name", "nosuch", "-q"}, `key pair "nosuch" does not exist`},
		{"core subnet", []string{"create-core", "other", "--subnet-ids", "subnet-0123456789abcdef0", "-q"}, "subnet subnet-0123456789abcdef0 does not exist"},
		{"core type", []string{"create-core", "other", "--instance-type", "foo9.bar", "-q"}, "instance type foo9.bar does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := clusterctl(t, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("want exit 2 and one line with %q\n%s", tt.want, r)
			}
		})
	}
	if names := c.stackNames(t); !sameSet(names, []string{"core"}) {
		t.Errorf("refused commands created stacks: %v", names)
	}
	if n := objectsUnder(t, c, bucket, "join/groups/"); n != 0 {
		t.Errorf("refused commands uploaded %d node configurations", n)
	}

	// update-group is checked the same way, before it uploads or changes anything.
	must(t, "add-agents", "-n", "g", "-t", "m5.large", "-j", "core", "-q")
	before := objectsUnder(t, c, bucket, "join/groups/g/")
	lt := aws.ToString(groupASG(t, c, "core", "g").LaunchTemplate.LaunchTemplateId)
	versions := len(launchTemplateVersions(t, c, lt))
	for _, args := range [][]string{
		{"--subnet-ids", foreign},
		{"-t", "foo9.bar", "-m", "role=x"},
		{"-t", "m7g.large", "--image-id", "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"},
	} {
		r := clusterctl(t, append([]string{"update-group", "-n", "g", "-j", "core", "-q"}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "pre-flight: ") {
			t.Errorf("update-group %v:\n%s", args, r)
		}
	}
	if n := objectsUnder(t, c, bucket, "join/groups/g/"); n != before {
		t.Errorf("refused updates uploaded: %d node configurations, was %d", n, before)
	}
	if n := len(launchTemplateVersions(t, c, lt)); n != versions {
		t.Errorf("refused updates made launch template versions: %d, was %d", n, versions)
	}
	must(t, "delete-core", "core", "--cascade", "--yes", "-q")
}

func subnetOf(t *testing.T, c clients, zone string) string {
	t.Helper()
	out, err := c.ec2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range out.Subnets {
		if aws.ToString(sn.AvailabilityZone) == zone && aws.ToBool(sn.DefaultForAz) {
			return aws.ToString(sn.SubnetId)
		}
	}
	t.Fatalf("no default subnet in %s", zone)
	return ""
}
