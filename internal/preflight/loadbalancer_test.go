package preflight

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// importCertificate imports a self-signed certificate into ACM: issued.
func importCertificate(t *testing.T, c *acm.Client) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "app.example.com"}, DNSNames: []string{"app.example.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.ImportCertificate(context.Background(), &acm.ImportCertificateInput{
		Certificate: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		PrivateKey:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.CertificateArn)
}

func TestCheckLoadBalancer(t *testing.T) {
	ctx := context.Background()
	acmc := acm.NewFromConfig(awsConfig)
	issued := importCertificate(t, acmc)
	req, err := acmc.RequestCertificate(ctx, &acm.RequestCertificateInput{DomainName: aws.String("pending.example.com")})
	if err != nil {
		t.Fatal(err)
	}
	pending := aws.ToString(req.CertificateArn)
	missing := strings.Replace(issued, issued[len(issued)-12:], "000000000000", 1)

	// A VPC of its own: subnet pub routes to an internet gateway through
	// its own route table, priv only through the main one, which has none.
	vpc, err := ec2c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.20.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	vpcID := vpc.Vpc.VpcId
	subnet := func(cidr, zone string) string {
		sn, err := ec2c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpcID, CidrBlock: aws.String(cidr), AvailabilityZone: aws.String(zone)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(sn.Subnet.SubnetId)
	}
	pub, priv, priv2 := subnet("10.20.1.0/24", "us-east-1a"), subnet("10.20.2.0/24", "us-east-1b"), subnet("10.20.3.0/24", "us-east-1b")
	igw, err := ec2c.CreateInternetGateway(ctx, &ec2.CreateInternetGatewayInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ec2c.AttachInternetGateway(ctx, &ec2.AttachInternetGatewayInput{InternetGatewayId: igw.InternetGateway.InternetGatewayId, VpcId: vpcID}); err != nil {
		t.Fatal(err)
	}
	rt, err := ec2c.CreateRouteTable(ctx, &ec2.CreateRouteTableInput{VpcId: vpcID})
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
	zones := map[string]string{pub: "us-east-1a", priv: "us-east-1b", priv2: "us-east-1b"}
	lb := func(scheme, cert string, subnets ...string) LoadBalancerRequest {
		return LoadBalancerRequest{Scheme: scheme, Certificate: cert, SubnetIDs: subnets, SubnetZones: zones, VpcID: aws.ToString(vpcID)}
	}
	for _, tt := range []struct {
		name string
		req  LoadBalancerRequest
		want string
	}{
		{"issued certificate, public subnet", lb(spec.SchemeInternetFacing, issued, pub), ""},
		{"internal in private subnets", lb(spec.SchemeInternal, "", priv), ""},
		{"certificate missing", lb(spec.SchemeInternal, missing, priv), "certificate " + missing + " does not exist in this region"},
		{"certificate pending", lb(spec.SchemeInternal, pending, priv), "certificate " + pending + " is PENDING_VALIDATION, not ISSUED"},
		{"internet-facing in a private subnet", lb(spec.SchemeInternetFacing, "", pub, priv),
			"an internet-facing load balancer needs subnets with a route to an internet gateway, and " + priv + " has none"},
		{"two subnets in one zone", lb(spec.SchemeInternal, "", priv, priv2),
			"a load balancer takes one subnet per zone, and these zones have several: us-east-1b (" + priv + ", " + priv2 + ")"},
		{"everything at once", lb(spec.SchemeInternetFacing, pending, priv, priv2), "is PENDING_VALIDATION, not ISSUED; an internet-facing load balancer needs subnets with a route to an internet gateway, and " + priv + ", " + priv2 + " have none (give public subnets with --subnet-ids, or --load-balancer internal); a load balancer takes one subnet per zone"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckLoadBalancer(ctx, ec2c, acmc, tt.req)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || errs.ExitCode(err) != 2 || strings.Contains(err.Error(), "\n")):
				t.Errorf("error = %v (exit %d), want one line with %q, exit 2", err, errs.ExitCode(err), tt.want)
			}
		})
	}
	// The main route table reaching an internet gateway makes the subnets
	// without their own public.
	main, err := ec2c.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{aws.ToString(vpcID)}}, {Name: aws.String("association.main"), Values: []string{"true"}}}})
	if err != nil || len(main.RouteTables) != 1 {
		t.Fatalf("main route table: %v, %v", main, err)
	}
	if _, err := ec2c.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: main.RouteTables[0].RouteTableId, DestinationCidrBlock: aws.String("0.0.0.0/0"),
		GatewayId: igw.InternetGateway.InternetGatewayId}); err != nil {
		t.Fatal(err)
	}
	if err := CheckLoadBalancer(ctx, ec2c, acmc, lb(spec.SchemeInternetFacing, issued, pub, priv)); err != nil {
		t.Errorf("subnet public through the main route table refused: %v", err)
	}
}
