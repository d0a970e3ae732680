package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"maps"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// testCertificateARN has the shape of an ACM certificate's ARN, for what
// is rendered offline.
const testCertificateARN = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-0000-1111-2222-333344445555"

// lbClients reach moto's ACM and Elastic Load Balancing.
func lbClients(t *testing.T) (*acm.Client, *elbv2.Client) {
	t.Helper()
	cfg := motoConfig(t)
	return acm.NewFromConfig(cfg), elbv2.NewFromConfig(cfg)
}

// issuedCertificate imports a self-signed certificate into ACM (imported
// certificates are issued) and returns its ARN.
func issuedCertificate(t *testing.T, c *acm.Client) string {
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

// routeToInternet gives the VPC's main route table a route to an internet
// gateway: its subnets become public.
func routeToInternet(t *testing.T, c clients, vpc string) {
	t.Helper()
	ctx := context.Background()
	igw, err := c.ec2.CreateInternetGateway(ctx, &ec2.CreateInternetGatewayInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ec2.AttachInternetGateway(ctx, &ec2.AttachInternetGatewayInput{InternetGatewayId: igw.InternetGateway.InternetGatewayId, VpcId: aws.String(vpc)}); err != nil {
		t.Fatal(err)
	}
	main, err := c.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{vpc}}, {Name: aws.String("association.main"), Values: []string{"true"}}}})
	if err != nil || len(main.RouteTables) != 1 {
		t.Fatalf("main route table of %s: %v", vpc, err)
	}
	if _, err := c.ec2.CreateRoute(ctx, &ec2.CreateRouteInput{RouteTableId: main.RouteTables[0].RouteTableId,
		DestinationCidrBlock: aws.String("0.0.0.0/0"), GatewayId: igw.InternetGateway.InternetGatewayId}); err != nil {
		t.Fatal(err)
	}
}

// groupLB is what Elastic Load Balancing has of a group's load balancer.
type groupLB struct {
	arn, scheme, typ string
	sgs              []string
	listeners        map[int32]string // port → protocol
	listenerARNs     map[int32]string
	certs            map[int32][]string
	forwards         map[int32]string // port → target group ARN
	tgPorts          map[string]int32 // target group ARN → its (node) port
}

func readGroupLB(t *testing.T, elb *elbv2.Client, arn string) groupLB {
	t.Helper()
	ctx := context.Background()
	lbs, err := elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{arn}})
	if err != nil || len(lbs.LoadBalancers) != 1 {
		t.Fatalf("load balancer %s: %v", arn, err)
	}
	lb := lbs.LoadBalancers[0]
	g := groupLB{arn: arn, scheme: string(lb.Scheme), typ: string(lb.Type), sgs: lb.SecurityGroups,
		listeners: map[int32]string{}, listenerARNs: map[int32]string{}, certs: map[int32][]string{}, forwards: map[int32]string{}, tgPorts: map[string]int32{}}
	ls, err := elb.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls.Listeners {
		p := aws.ToInt32(l.Port)
		g.listeners[p] = string(l.Protocol)
		g.listenerARNs[p] = aws.ToString(l.ListenerArn)
		for _, c := range l.Certificates {
			g.certs[p] = append(g.certs[p], aws.ToString(c.CertificateArn))
		}
		for _, a := range l.DefaultActions {
			g.forwards[p] = aws.ToString(a.TargetGroupArn)
		}
	}
	tgs, err := elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range tgs.TargetGroups {
		g.tgPorts[aws.ToString(tg.TargetGroupArn)] = aws.ToInt32(tg.Port)
	}
	return g
}

// ingress lists a security group's inbound rules as "proto/port from X".
func ingress(t *testing.T, c clients, sg string) []string {
	t.Helper()
	out, err := c.ec2.DescribeSecurityGroups(context.Background(), &ec2.DescribeSecurityGroupsInput{GroupIds: []string{sg}})
	if err != nil || len(out.SecurityGroups) != 1 {
		t.Fatalf("security group %s: %v", sg, err)
	}
	var rules []string
	for _, p := range out.SecurityGroups[0].IpPermissions {
		for _, r := range p.IpRanges {
			rules = append(rules, aws.ToString(p.IpProtocol)+"/"+itoa(aws.ToInt32(p.FromPort))+" from "+aws.ToString(r.CidrIp))
		}
		for _, u := range p.UserIdGroupPairs {
			rules = append(rules, aws.ToString(p.IpProtocol)+"/"+itoa(aws.ToInt32(p.FromPort))+" from "+aws.ToString(u.GroupId))
		}
	}
	sort.Strings(rules)
	return rules
}

// stackResource is the physical id of a stack's resource.
func stackResource(t *testing.T, c clients, stack, logicalID string) string {
	t.Helper()
	out, err := c.cfn.ListStackResources(context.Background(), &cloudformation.ListStackResourcesInput{StackName: aws.String(stack)})
	if err != nil {
		t.Fatalf("resources of %s: %v", stack, err)
	}
	for _, r := range out.StackResourceSummaries {
		if aws.ToString(r.LogicalResourceId) == logicalID {
			return aws.ToString(r.PhysicalResourceId)
		}
	}
	t.Fatalf("stack %s has no resource %s", stack, logicalID)
	return ""
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// A group with --publish 80,443/tls --certificate has a Network Load
// Balancer: listeners, target groups attached to its Auto Scaling group,
// and the security group rules, as Elastic Load Balancing and EC2 report
// them. An update that adds a port adds only that listener; removing the
// load balancer needs --yes off a terminal; removing the group removes
// all of it.
func TestLoadBalancer(t *testing.T) {
	parallel(t)
	c, _ := newCluster(t)
	acmc, elb := lbClients(t)
	ctx := context.Background()
	cert := issuedCertificate(t, acmc)
	core := outputs(describeStack(t, c, "core"))
	agentSG, vpc := core["AgentSecurityGroupId"], core["VpcId"]

	// The default VPC's subnets have no route to an internet gateway yet.
	args := []string{"add-agents", "-n", "web", "-t", "t3.small", "-j", "core", "-c", "2", "--publish", "80,443/tls", "--certificate", cert, "-q"}
	r := clusterctl(t, args...)
	if r.code != 2 || !strings.Contains(r.stderr, "an internet-facing load balancer needs subnets with a route to an internet gateway, and subnet-") ||
		slices.Contains(c.stackNames(t), "core-web") {
		t.Fatalf("internet-facing in private subnets: %s", r)
	}
	routeToInternet(t, c, vpc)
	// Public subnets now: nodes there without a public IP could reach
	// nothing, so they need --public-ips, and clusterctl says so.
	r = clusterctl(t, args...)
	if r.code != 2 || !strings.Contains(r.stderr, "pass --public-ips") || !strings.Contains(r.stderr, "clusterctl create-network") ||
		slices.Contains(c.stackNames(t), "core-web") {
		t.Fatalf("nodes in public subnets without public IPs: %s", r)
	}
	args = append(args, "--public-ips")
	if r := must(t, args...); strings.Count(r.stderr, "get public IPs in public subnets") != 1 {
		t.Errorf("add-agents --public-ips in public subnets does not say so once:\n%s", r)
	}

	st := describeStack(t, c, "core-web")
	lbARN, dns := outputs(st)["LoadBalancerArn"], outputs(st)["LoadBalancerDnsName"]
	if lbARN == "" || dns == "" {
		t.Fatalf("group stack outputs %v", outputs(st))
	}
	lb := readGroupLB(t, elb, lbARN)
	if lb.typ != "network" || lb.scheme != "internet-facing" || len(lb.sgs) != 1 {
		t.Errorf("load balancer: %+v", lb)
	}
	if !maps.Equal(lb.listeners, map[int32]string{80: "TCP", 443: "TLS"}) || !slices.Equal(lb.certs[443], []string{cert}) || len(lb.certs[80]) != 0 {
		t.Errorf("listeners %v, certificates %v", lb.listeners, lb.certs)
	}
	asg := groupASG(t, c, "core", "web")
	attached := slices.Clone(asg.TargetGroupARNs)
	sort.Strings(attached)
	var forwarded []string
	for p, tg := range lb.forwards {
		forwarded = append(forwarded, tg)
		if lb.tgPorts[tg] != p {
			t.Errorf("listener %d forwards to a target group on port %d", p, lb.tgPorts[tg])
		}
	}
	sort.Strings(forwarded)
	if len(forwarded) != 2 || !slices.Equal(attached, forwarded) {
		t.Errorf("Auto Scaling group attached to %v, listeners forward to %v", attached, forwarded)
	}
	lbSG := lb.sgs[0]
	if got := stackResource(t, c, "core-web", "LoadBalancerSecurityGroup"); got != lbSG {
		t.Errorf("load balancer in security group %s, the stack's is %s", lbSG, got)
	}
	if got := ingress(t, c, lbSG); !slices.Equal(got, []string{"tcp/443 from 0.0.0.0/0", "tcp/80 from 0.0.0.0/0"}) {
		t.Errorf("load balancer admits %v", got)
	}
	var fromLB []string
	for _, rule := range ingress(t, c, agentSG) {
		if strings.HasSuffix(rule, " from "+lbSG) {
			fromLB = append(fromLB, rule)
		}
	}
	if want := []string{"tcp/443 from " + lbSG, "tcp/80 from " + lbSG}; !slices.Equal(fromLB, want) {
		t.Errorf("the nodes admit the load balancer on %v, want %v", fromLB, want)
	}

	// list-groups -o json carries the endpoint and the ports.
	var groups []struct {
		Group        string `json:"group"`
		LoadBalancer *struct {
			DNSName string `json:"dnsName"`
			Scheme  string `json:"scheme"`
			Ports   []struct {
				Port     int    `json:"port"`
				NodePort int    `json:"nodePort"`
				Protocol string `json:"protocol"`
				Healthy  int    `json:"healthy"`
				Targets  int    `json:"targets"`
			} `json:"ports"`
		} `json:"loadBalancer"`
	}
	if err := json.Unmarshal([]byte(must(t, "list-groups", "-j", "core", "-o", "json").stdout), &groups); err != nil || len(groups) != 1 || groups[0].LoadBalancer == nil {
		t.Fatalf("list-groups -o json: %v %+v", err, groups)
	}
	glb := groups[0].LoadBalancer
	if glb.DNSName != dns || glb.Scheme != "internet-facing" || len(glb.Ports) != 2 || glb.Ports[0].Port != 80 || glb.Ports[1].Protocol != "tls" ||
		glb.Ports[1].NodePort != 443 || glb.Ports[0].Targets != 2 {
		t.Errorf("list-groups load balancer %+v", glb)
	}
	if wide := must(t, "list-groups", "-j", "core", "-o", "wide").stdout; !strings.Contains(wide, dns) || !strings.Contains(wide, "443/tls (") {
		t.Errorf("list-groups -o wide:\n%s", wide)
	}
	if d := must(t, "describe", "core").stdout; !strings.Contains(d, "web: load balancer "+dns+" (internet-facing): 80 (") {
		t.Errorf("describe:\n%s", d)
	}

	// Adding a port adds its listener and target group, and nothing else
	// changes.
	r = must(t, "update-group", "-n", "web", "-j", "core", "--publish", "80,443/tls,8080")
	if !strings.Contains(r.stdout, "80,443/tls") || !strings.Contains(r.stdout, "80,443/tls,8080") {
		t.Errorf("plan does not show the ports old → new:\n%s", r.stdout)
	}
	after := readGroupLB(t, elb, lbARN)
	if !maps.Equal(after.listeners, map[int32]string{80: "TCP", 443: "TLS", 8080: "TCP"}) ||
		after.listenerARNs[80] != lb.listenerARNs[80] || after.listenerARNs[443] != lb.listenerARNs[443] ||
		after.forwards[80] != lb.forwards[80] || after.forwards[443] != lb.forwards[443] {
		t.Errorf("after adding 8080: listeners %v (was %v), forwards %v (was %v)", after.listenerARNs, lb.listenerARNs, after.forwards, lb.forwards)
	}
	if got := groupASG(t, c, "core", "web").TargetGroupARNs; len(got) != 3 || !slices.Contains(got, after.forwards[8080]) {
		t.Errorf("Auto Scaling group attached to %v after adding 8080", got)
	}
	// (moto replaces a security group whose inline rules change; AWS
	// changes it in place: read it again.)
	lbSG = stackResource(t, c, "core-web", "LoadBalancerSecurityGroup")
	if got := ingress(t, c, lbSG); !slices.Equal(got, []string{"tcp/443 from 0.0.0.0/0", "tcp/80 from 0.0.0.0/0", "tcp/8080 from 0.0.0.0/0"}) {
		t.Errorf("load balancer admits %v after adding 8080", got)
	}

	// Removing the load balancer changes the clients' endpoint: off a
	// terminal it needs --yes, and nothing changes without it.
	r = clusterctl(t, "update-group", "-n", "web", "-j", "core", "--publish", "")
	if r.code != 2 || !strings.Contains(r.stderr, "refusing to remove group \"web\"'s load balancer "+dns+" (ports 80,443/tls,8080) and the endpoint its clients use without confirmation") || !strings.Contains(r.stderr, "pass --yes") {
		t.Errorf("removal without --yes: %s", r)
	}
	if len(readGroupLB(t, elb, lbARN).listeners) != 3 {
		t.Error("the load balancer changed without --yes")
	}

	// With --yes it goes: an internal load balancer of another group, so
	// that the group removed below still has its own.
	r = must(t, "add-agents", "-n", "api", "-t", "t3.small", "-j", "core", "--publish", "8080", "--load-balancer", "internal", "--public-ips", "-q")
	if dns := outputs(describeStack(t, c, "core-api"))["LoadBalancerDnsName"]; dns == "" || !strings.Contains(r.stderr, "Endpoint of group api: "+dns+" (ports 8080)\n") {
		t.Errorf("add-agents --publish does not say its endpoint %q:\n%s", dns, r)
	}
	apiLB := outputs(describeStack(t, c, "core-api"))["LoadBalancerArn"]
	if got := readGroupLB(t, elb, apiLB); got.scheme != "internal" || !maps.Equal(got.listeners, map[int32]string{8080: "TCP"}) {
		t.Errorf("internal load balancer %+v", got)
	}
	must(t, "update-group", "-n", "api", "-j", "core", "--publish", "", "--yes", "-q")
	if out, err := elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{}); err != nil || len(out.LoadBalancers) != 1 || aws.ToString(out.LoadBalancers[0].LoadBalancerArn) != lbARN {
		t.Errorf("load balancers after removing api's: %v, %v", out, err)
	}
	if err := json.Unmarshal([]byte(must(t, "list-groups", "-j", "core", "-o", "json").stdout), &groups); err != nil || len(groups) != 2 || groups[0].Group != "api" || groups[0].LoadBalancer != nil {
		t.Errorf("list-groups after removing api's load balancer: %v %+v", err, groups)
	}
	must(t, "remove-group", "-n", "api", "-j", "core", "--yes", "-q")

	// Removing the group removes all of it.
	must(t, "remove-group", "-n", "web", "-j", "core", "--yes", "-q")
	if out, err := elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{}); err != nil || len(out.LoadBalancers) != 0 {
		t.Errorf("load balancers left: %v, %v", out, err)
	}
	if out, err := elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{}); err != nil || len(out.TargetGroups) != 0 {
		t.Errorf("target groups left: %v, %v", out, err)
	}
	if out, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{lbSG}}); err == nil && len(out.SecurityGroups) > 0 {
		t.Errorf("load balancer security group %s left", lbSG)
	}
	for _, rule := range ingress(t, c, agentSG) {
		if strings.Contains(rule, lbSG) {
			t.Errorf("the nodes still admit %s", rule)
		}
	}
}

// On a terminal, update-group shows the plan and asks before it removes a
// group's load balancer: "n" changes nothing (exit 1), "y" removes it.
func TestLoadBalancerRemovalPrompt(t *testing.T) {
	parallel(t)
	resetMoto(t)
	must(t, "create-core", "core", "-q")
	_, elb := lbClients(t)
	must(t, "add-agents", "-n", "web", "-t", "t3.small", "-j", "core", "--publish", "8080", "--load-balancer", "internal", "-q")
	ask := func(answer string) (int, string) {
		t.Helper()
		term := startTerminal(t, envOf(t), binary, "update-group", "-n", "web", "-j", "core", "--publish", "")
		term.expect("[y/N]: ")
		term.typeText(answer)
		return term.exit(), term.screen()
	}
	code, screen := ask("n\n")
	if code != 1 || !strings.Contains(screen, "publish") || !strings.Contains(screen, "8080 → (none)") ||
		!strings.Contains(screen, "Really remove group \"web\"'s load balancer ") {
		t.Errorf("answer n: exit %d\n%s", code, screen)
	}
	if out, err := elb.DescribeLoadBalancers(context.Background(), &elbv2.DescribeLoadBalancersInput{}); err != nil || len(out.LoadBalancers) != 1 {
		t.Fatalf("after answering n: %v, %v", out, err)
	}
	if code, screen := ask("y\n"); code != 0 {
		t.Errorf("answer y: exit %d\n%s", code, screen)
	}
	if out, err := elb.DescribeLoadBalancers(context.Background(), &elbv2.DescribeLoadBalancersInput{}); err != nil || len(out.LoadBalancers) != 0 {
		t.Errorf("after answering y: %v, %v", out, err)
	}
}
