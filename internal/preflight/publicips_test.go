package preflight

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/clusterctl/clusterctl/internal/errs"
)

// Nodes without public IPs are refused in public subnets (they could reach
// nothing) and pass in private ones; given public IPs in public subnets,
// the check says so.
func TestCheckPublicIPs(t *testing.T) {
	ctx := context.Background()
	vpc, err := ec2c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.30.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	vpcID := aws.ToString(vpc.Vpc.VpcId)
	subnet := func(cidr string) string {
		sn, err := ec2c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String(cidr), AvailabilityZone: aws.String("us-east-1a")})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(sn.Subnet.SubnetId)
	}
	pub, priv := subnet("10.30.1.0/24"), subnet("10.30.2.0/24")
	igw, err := ec2c.CreateInternetGateway(ctx, &ec2.CreateInternetGatewayInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ec2c.AttachInternetGateway(ctx, &ec2.AttachInternetGatewayInput{InternetGatewayId: igw.InternetGateway.InternetGatewayId, VpcId: vpc.Vpc.VpcId}); err != nil {
		t.Fatal(err)
	}
	rt, err := ec2c.CreateRouteTable(ctx, &ec2.CreateRouteTableInput{VpcId: vpc.Vpc.VpcId})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ec2c.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: rt.RouteTable.RouteTableId, DestinationCidrBlock: aws.String("0.0.0.0/0"),
		GatewayId: igw.InternetGateway.InternetGatewayId}); err != nil {
		t.Fatal(err)
	}
	if _, err := ec2c.AssociateRouteTable(ctx, &ec2.AssociateRouteTableInput{RouteTableId: rt.RouteTable.RouteTableId, SubnetId: aws.String(pub)}); err != nil {
		t.Fatal(err)
	}
	req := func(public bool, subnets ...string) PublicIPsRequest {
		return PublicIPsRequest{What: "the managers", Flag: "--public-ips", SubnetIDs: subnets, VpcID: vpcID, PublicIPs: public}
	}
	for _, tt := range []struct {
		name      string
		req       PublicIPsRequest
		err, note string
	}{
		{"private, no public IPs", req(false, priv), "", ""},
		{"private, public IPs", req(true, priv), "", ""},
		{"public, no public IPs", req(false, priv, pub), "pre-flight: the managers would run in public subnet " + pub + " (a route to an internet gateway, no NAT), where a node without a public IP reaches neither AWS nor a registry: pass --public-ips, or run the cluster in a private network of its own (clusterctl create-network NAME, then create-core --network NAME)", ""},
		{"public, public IPs", req(true, pub), "", "Note: the managers get public IPs in public subnet " + pub},
	} {
		note, err := CheckPublicIPs(ctx, ec2c, tt.req)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.err != "" && (err == nil || err.Error() != tt.err || errs.ExitCode(err) != 2):
			t.Errorf("%s: error %v (exit %d), want %q, exit 2", tt.name, err, errs.ExitCode(err), tt.err)
		case !strings.HasPrefix(note, tt.note) || (tt.note == "") != (note == ""):
			t.Errorf("%s: note %q, want %q", tt.name, note, tt.note)
		}
	}
}
