package render

import (
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// SslPolicy is the security policy of the load balancer's TLS listeners:
// TLS 1.3 and 1.2 with forward secrecy only.
const SslPolicy = "ELBSecurityPolicy-TLS13-1-2-2021-06"

// loadBalancerData is what workergroup.json.tmpl sees of a group's load
// balancer.
type loadBalancerData struct {
	LB        names.LoadBalancerSet
	Published bool // the group has a load balancer
	TLS       bool // a listener ends TLS (the certificate parameter exists)
	Schemes   []string
	// AllowFrom are the CIDRs allowed to connect, one security group rule
	// per port and CIDR; the template takes their values from the
	// parameter, their number from here.
	AllowFrom []string
	Ports     []lbPort
	NodeRules []nodeRule
	SslPolicy string
}

// lbPort is a published port with the logical ids of its resources.
type lbPort struct {
	Port, NodePort               int
	Protocol, NodeProtocol, Text string
	ListenerID, TargetGroupID    string
}

// nodeRule is a node port the load balancer reaches the nodes on: traffic
// on the port's protocol and, for the health checks (TCP), TCP.
type nodeRule struct {
	ID       string
	Protocol string // tcp or udp
	Port     int
}

// loadBalancerOf is the template data of g's load balancer; vpcCIDR is
// who may connect to an internal one by default.
func loadBalancerOf(g spec.Group, vpcCIDR string) loadBalancerData {
	d := loadBalancerData{LB: names.LoadBalancerTemplate(), Published: g.Published(), TLS: g.TLS(),
		Schemes: spec.Schemes(), SslPolicy: SslPolicy}
	if !d.Published {
		return d
	}
	d.AllowFrom = g.AllowFromOr(vpcCIDR)
	seen := map[string]bool{}
	add := func(protocol string, port int) {
		id := names.ResourceNodePortIngress(protocol, port)
		if !seen[id] {
			seen[id] = true
			d.NodeRules = append(d.NodeRules, nodeRule{ID: id, Protocol: protocol, Port: port})
		}
	}
	for _, p := range g.Publish.Parsed() {
		d.Ports = append(d.Ports, lbPort{Port: p.Port, NodePort: p.NodePort, Protocol: p.Protocol, NodeProtocol: p.NodeProtocol(),
			Text: p.String(), ListenerID: names.ResourceListener(p.Port), TargetGroupID: names.ResourceTargetGroup(p.Port)})
		add(p.NodeProtocol(), p.NodePort)
		add(spec.ProtocolTCP, p.NodePort) // the health check
	}
	return d
}

// loadBalancerParameters sets the parameters of g's load balancer in
// params (which holds the spec's) and drops those its template does not
// declare.
func loadBalancerParameters(params map[string]string, g spec.Group, d loadBalancerData, subnets []string) {
	if !d.Published {
		for _, k := range []string{names.ParamLoadBalancerSubnetIDs, names.ParamLoadBalancerScheme, names.ParamLoadBalancerAllowFrom, names.ParamCertificateArn,
			names.ParamDeregistrationDelay, names.ParamAccessLogsBucket} {
			delete(params, k)
		}
		return
	}
	if !d.TLS {
		delete(params, names.ParamCertificateArn)
	}
	params[names.ParamLoadBalancerAllowFrom] = strings.Join(d.AllowFrom, ",")
	params[names.ParamLoadBalancerSubnetIDs] = strings.Join(subnets, ",")
}

// LoadBalancerSubnets are the subnets of g's load balancer joined to the
// core in join: an internet-facing one goes in the core's public subnets
// when the core has them (a network's) and g takes the core's subnets;
// otherwise the load balancer is in g's subnets (its own, or the core's).
func LoadBalancerSubnets(g spec.Group, join Join) []string {
	switch {
	case len(g.SubnetIDs) > 0:
		return g.SubnetIDs
	case g.Scheme() == spec.SchemeInternetFacing && len(join.PublicSubnetIds) > 0:
		return join.PublicSubnetIds
	}
	return join.SubnetIds
}
