package cluster

import (
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
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// issuedCertificate imports a self-signed certificate into moto's ACM
// (imported certificates are issued) and returns its ARN.
func issuedCertificate(t *testing.T, s *Clients) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "app.example.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.ACM.(*acm.Client).ImportCertificate(t.Context(), &acm.ImportCertificateInput{
		Certificate: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		PrivateKey:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.CertificateArn)
}

// publicVPC routes the VPC's main route table to an internet gateway, as
// an internet-facing load balancer needs.
func publicVPC(t *testing.T, s *Clients, vpc string) {
	t.Helper()
	ctx := t.Context()
	c := s.EC2.(*ec2.Client)
	igw, err := c.CreateInternetGateway(ctx, &ec2.CreateInternetGatewayInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AttachInternetGateway(ctx, &ec2.AttachInternetGatewayInput{InternetGatewayId: igw.InternetGateway.InternetGatewayId, VpcId: aws.String(vpc)}); err != nil {
		t.Fatal(err)
	}
	main, err := c.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{vpc}}, {Name: aws.String("association.main"), Values: []string{"true"}}}})
	if err != nil || len(main.RouteTables) != 1 {
		t.Fatalf("main route table: %v", err)
	}
	if _, err := c.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: main.RouteTables[0].RouteTableId,
		DestinationCidrBlock: aws.String("0.0.0.0/0"), GatewayId: igw.InternetGateway.InternetGatewayId}); err != nil {
		t.Fatal(err)
	}
}

// What an update asks before it goes on: removing the load balancer, or
// replacing it (a new scheme), changes the clients' endpoint.
func TestLBRemoval(t *testing.T) {
	web := spec.Group{Name: "web", Publish: spec.Ports{"80"}}
	more := spec.Group{Name: "web", Publish: spec.Ports{"80", "8080"}}
	internal := spec.Group{Name: "web", Publish: spec.Ports{"80"}, LoadBalancer: spec.SchemeInternal}
	none := spec.Group{Name: "web"}
	for _, tt := range []struct {
		name            string
		deployed, given spec.Group
		want            string
	}{
		{"no load balancer before", none, web, ""},
		{"a port added", web, more, ""},
		{"removed", more, none, `remove group "web"'s load balancer lb-1.elb.amazonaws.com (ports 80,8080) and the endpoint its clients use`},
		{"scheme changed", web, internal, `replace group "web"'s load balancer lb-1.elb.amazonaws.com with an internal one, at a new endpoint`},
		{"still none", none, none, ""},
	} {
		if got := lbRemoval(tt.deployed, tt.given, "lb-1.elb.amazonaws.com"); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// apply asks before a file removes a group's load balancer, as
// update-group does: off a terminal it needs --yes, and nothing changes
// without it.
func TestApplyRemovingLoadBalancerAsks(t *testing.T) {
	s := motoService(t)
	ctx := t.Context()
	newMotoWorld(t, s)
	c := spec.New("lbapply")
	c.Groups = []spec.Group{{Name: "web", InstanceType: spec.InstanceTypes{"t3.small"}, Publish: spec.Ports{"80"}, LoadBalancer: spec.SchemeInternal}}
	if _, err := NewApplier(s).Apply(ctx, ApplyOptions{Spec: c}); err != nil {
		t.Fatal(err)
	}
	obs, err := NewObserver(s).Observe(ctx, "lbapply")
	if err != nil {
		t.Fatal(err)
	}
	if g := obs.Groups["web"]; g == nil || !g.Spec.Published() || g.Stack.Outputs[names.OutputLoadBalancerDNSName] == "" {
		t.Fatalf("group web as deployed: %+v", g)
	}
	// The VPC's CIDR, asked of EC2, is who may connect by default.
	if got := strings.Join(spec.SplitList(obs.Groups["web"].Stack.Parameters[names.ParamLoadBalancerAllowFrom]), ","); got != "172.31.0.0/16" {
		t.Errorf("internal load balancer allows %q, want the default VPC's CIDR", got)
	}
	c.Groups = []spec.Group{{Name: "web", InstanceType: spec.InstanceTypes{"t3.small"}}}
	_, err = NewApplier(s).Apply(ctx, ApplyOptions{Spec: c})
	if err == nil || errs.ExitCode(err) != 2 || !strings.Contains(err.Error(), `refusing to remove group "web"'s load balancer`) || !strings.Contains(err.Error(), "pass --yes") {
		t.Fatalf("removal without --yes: %v", err)
	}
	if obs, err := NewObserver(s).Observe(ctx, "lbapply"); err != nil || !obs.Groups["web"].Spec.Published() {
		t.Fatalf("the load balancer changed without --yes: %v", err)
	}
	if _, err := NewApplier(s).Apply(ctx, ApplyOptions{Spec: c, Yes: true}); err != nil {
		t.Fatal(err)
	}
	if obs, err := NewObserver(s).Observe(ctx, "lbapply"); err != nil || obs.Groups["web"].Spec.Published() {
		t.Fatalf("after apply --yes: %+v, %v", obs.Groups["web"].Spec, err)
	}
	lbs, err := s.ELB.(*elasticloadbalancingv2.Client).DescribeLoadBalancers(ctx, &elasticloadbalancingv2.DescribeLoadBalancersInput{})
	if err != nil || len(lbs.LoadBalancers) != 0 {
		t.Errorf("load balancers after apply --yes: %v, %v", lbs, err)
	}
}
