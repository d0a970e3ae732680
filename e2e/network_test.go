package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/clusterctl/clusterctl/internal/spec"
)

// A cluster in a network of its own, end to end: create-network makes the
// VPC (public subnets routed to an internet gateway, private ones through
// NAT), create-core --network joins it, a group's internet-facing load
// balancer lands in the public subnets while every node runs in a private
// one without a public IP; delete-network is refused while the cluster
// uses the network, and done once the cluster is gone.
func TestNetworkEndToEnd(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()

	r := must(t, "create-network", "net", "--zones", "2", "-q")
	if !strings.Contains(r.stderr, "1 NAT gateway: $0.045/hour") || !strings.Contains(r.stderr, "total: about $36.50/month") {
		t.Errorf("create-network does not say what is billed by the hour:\n%s", r)
	}
	net := outputs(describeStack(t, c, "net-network"))
	vpc := net["VpcId"]
	public, private := strings.Split(net["PublicSubnetIds"], ","), strings.Split(net["PrivateSubnetIds"], ",")
	if vpc == "" || len(public) != 2 || len(private) != 2 || net["Nat"] != "single" || net["NetworkName"] != "net" ||
		net["AvailabilityZones"] != "us-east-1a,us-east-1b" || net["VpcCidr"] != "10.0.0.0/16" {
		t.Fatalf("network outputs %v", net)
	}
	routes := routesOf(t, c, vpc)
	for _, sn := range public {
		if !strings.HasPrefix(routes[sn], "igw-") {
			t.Errorf("public subnet %s routes out through %q, want an internet gateway", sn, routes[sn])
		}
	}
	for _, sn := range private {
		if !strings.HasPrefix(routes[sn], "nat-") {
			t.Errorf("private subnet %s routes out through %q, want a NAT gateway", sn, routes[sn])
		}
	}

	must(t, "create-core", "core", "--network", "net", "-q")
	core := describeStack(t, c, "core")
	if p := strings.Join(spec.SplitList(describeStackParam(t, c, "core", "SubnetIds")), ","); p != net["PrivateSubnetIds"] {
		t.Errorf("core subnets %s, want the private ones %s", p, net["PrivateSubnetIds"])
	}
	if o := outputs(core); o["VpcId"] != vpc || o["PublicSubnetIds"] != net["PublicSubnetIds"] || o["Network"] != "net" {
		t.Errorf("core outputs %v", o)
	}
	if tg := tags(core); tg["clusterctl:network"] != "net" {
		t.Errorf("core tags %v lack clusterctl:network=net", tg)
	}

	if got := strings.TrimSpace(must(t, "list-clusters", "-o", "json", "--query", ".[0].network").stdout); got != `"net"` {
		t.Errorf("list-clusters shows network %s, want \"net\"", got)
	}
	if got := must(t, "describe", "core").stdout; !strings.Contains(got, "Network") || !strings.Contains(got, net["PublicSubnetIds"]) {
		t.Errorf("describe does not show the network and its public subnets:\n%s", got)
	}
	r = clusterctl(t, "delete-network", "net", "--yes")
	if r.code != 1 || !strings.Contains(r.stderr, `network "net" is used by cluster core`) || !slices.Contains(c.stackNames(t), "net-network") {
		t.Fatalf("delete-network while a cluster uses it: %s", r)
	}

	must(t, "add-agents", "-n", "web", "-t", "t3.small", "-j", "core", "-c", "2", "--publish", "80", "-q")
	web := outputs(describeStack(t, c, "core-web"))
	if p := strings.Join(spec.SplitList(describeStackParam(t, c, "core-web", "LoadBalancerSubnetIds")), ","); p != net["PublicSubnetIds"] {
		t.Errorf("load balancer subnets %s, want the public ones %s", p, net["PublicSubnetIds"])
	}
	_, elb := lbClients(t)
	lbs, err := elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{web["LoadBalancerArn"]}})
	if err != nil || len(lbs.LoadBalancers) != 1 {
		t.Fatalf("load balancer %s: %v", web["LoadBalancerArn"], err)
	}
	for _, az := range lbs.LoadBalancers[0].AvailabilityZones {
		if !slices.Contains(public, aws.ToString(az.SubnetId)) {
			t.Errorf("load balancer in subnet %s, not a public one %v", aws.ToString(az.SubnetId), public)
		}
	}
	if s := string(lbs.LoadBalancers[0].Scheme); s != "internet-facing" {
		t.Errorf("scheme %s", s)
	}
	out, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:clusterctl:cluster"), Values: []string{"core"}}, {Name: aws.String("instance-state-name"), Values: []string{"running", "pending"}}}})
	if err != nil {
		t.Fatal(err)
	}
	nodes := 0
	for _, res := range out.Reservations {
		for _, i := range res.Instances {
			nodes++
			if !slices.Contains(private, aws.ToString(i.SubnetId)) || aws.ToString(i.PublicIpAddress) != "" || aws.ToString(i.VpcId) != vpc {
				t.Errorf("node %s in subnet %s of %s with public IP %q: want a private subnet of %s and none",
					aws.ToString(i.InstanceId), aws.ToString(i.SubnetId), aws.ToString(i.VpcId), aws.ToString(i.PublicIpAddress), vpc)
			}
			if len(i.SecurityGroups) == 0 {
				t.Errorf("node %s has no security group", aws.ToString(i.InstanceId))
			}
		}
	}
	if nodes != 3 {
		t.Errorf("%d nodes, want the manager and 2 agents", nodes)
	}

	must(t, "delete-core", "core", "--cascade", "--yes", "-q")
	r = must(t, "delete-network", "net", "--yes", "-q")
	if !strings.Contains(r.stdout, "Deleted network net") || slices.Contains(c.stackNames(t), "net-network") {
		t.Errorf("delete-network: %s", r)
	}
	if vs, err := c.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}}}); err != nil || len(vs.Vpcs) > 0 {
		t.Errorf("VPC %s left after delete-network (%v)", vpc, err)
	}
}

// A network without NAT reaches AWS through an interface endpoint for every
// service the nodes call, and S3 through its gateway endpoint.
func TestNetworkWithoutNat(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	r := must(t, "create-network", "closed", "--zones", "1", "--nat", "none", "--cidr", "10.9.0.0/20", "-q")
	if !strings.Contains(r.stderr, "12 interface endpoints (12 services × 1 zones)") {
		t.Errorf("create-network --nat none does not say what is billed:\n%s", r)
	}
	vpc := outputs(describeStack(t, c, "closed-network"))["VpcId"]
	eps, err := c.ec2.DescribeVpcEndpoints(context.Background(), &ec2.DescribeVpcEndpointsInput{Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}}})
	if err != nil {
		t.Fatal(err)
	}
	services := map[string]string{}
	for _, e := range eps.VpcEndpoints {
		services[aws.ToString(e.ServiceName)] = string(e.VpcEndpointType)
	}
	for _, s := range []string{"sqs", "ssm", "ssmmessages", "ec2messages", "ec2", "autoscaling", "cloudformation", "monitoring", "logs", "secretsmanager", "ecr.api", "ecr.dkr"} {
		if services["com.amazonaws.us-east-1."+s] != "Interface" {
			t.Errorf("no interface endpoint for %s: %v", s, services)
		}
	}
	if services["com.amazonaws.us-east-1.s3"] != "Gateway" {
		t.Errorf("no S3 gateway endpoint: %v", services)
	}
	routes := routesOf(t, c, vpc)
	for sn, via := range routes {
		if strings.HasPrefix(via, "nat-") {
			t.Errorf("subnet %s routes through NAT %s", sn, via)
		}
	}
	must(t, "delete-network", "closed", "--yes", "-q")
}

// routesOf maps each subnet of vpc with a route table of its own to where
// its default route (0.0.0.0/0) goes ("" when nowhere).
func routesOf(t *testing.T, c clients, vpc string) map[string]string {
	t.Helper()
	out, err := c.ec2.DescribeRouteTables(context.Background(), &ec2.DescribeRouteTablesInput{Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}}})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, rt := range out.RouteTables {
		via := ""
		for _, r := range rt.Routes {
			if aws.ToString(r.DestinationCidrBlock) == "0.0.0.0/0" {
				via = aws.ToString(r.GatewayId) + aws.ToString(r.NatGatewayId)
			}
		}
		for _, a := range rt.Associations {
			if a.SubnetId != nil {
				m[aws.ToString(a.SubnetId)] = via
			}
		}
	}
	return m
}
