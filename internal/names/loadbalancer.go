package names

import "strconv"

// Names of a group's load balancer (a Network Load Balancer in the group's
// stack, present when the group publishes ports).

// Template parameters of a group with a load balancer; the template of a
// group without one declares none of them.
const (
	ParamLoadBalancerScheme    = "LoadBalancerScheme"
	ParamLoadBalancerAllowFrom = "LoadBalancerAllowFrom" // CIDRs, comma-separated
	ParamCertificateArn        = "CertificateArn"        // only with a tls port
	ParamDeregistrationDelay   = "DeregistrationDelay"
	ParamAccessLogsBucket      = "AccessLogsBucket" // empty: no access logs
)

// Outputs of a group stack with a load balancer.
const (
	OutputLoadBalancerArn     = "LoadBalancerArn"
	OutputLoadBalancerDNSName = "LoadBalancerDnsName"
)

// Logical ids of the load balancer's resources.
const (
	ResourceLoadBalancer              = "LoadBalancer"
	ResourceLoadBalancerSecurityGroup = "LoadBalancerSecurityGroup"
)

// ResourceListener is the logical id of the listener on port.
func ResourceListener(port int) string { return "Listener" + strconv.Itoa(port) }

// ResourceTargetGroup is the logical id of the target group of the
// listener on port.
func ResourceTargetGroup(port int) string { return "TargetGroup" + strconv.Itoa(port) }

// ResourceNodePortIngress is the logical id of the rule that admits the
// load balancer to the nodes on a node port (protocol tcp or udp).
func ResourceNodePortIngress(protocol string, nodePort int) string {
	return "NodePortIngress" + map[string]string{"tcp": "Tcp", "udp": "Udp"}[protocol] + strconv.Itoa(nodePort)
}

// LoadBalancerSet is the load balancer's names, for the group template:
// {{.LB.ParamLoadBalancerScheme}}.
type LoadBalancerSet struct {
	ParamLoadBalancerScheme, ParamLoadBalancerAllowFrom, ParamCertificateArn string
	ParamDeregistrationDelay, ParamAccessLogsBucket                          string
	OutputLoadBalancerArn, OutputLoadBalancerDNSName                         string
	ResourceLoadBalancer, ResourceLoadBalancerSecurityGroup                  string
}

// LoadBalancerTemplate returns the load balancer's names for the templates'
// data.
func LoadBalancerTemplate() LoadBalancerSet {
	return LoadBalancerSet{
		ParamLoadBalancerScheme: ParamLoadBalancerScheme, ParamLoadBalancerAllowFrom: ParamLoadBalancerAllowFrom,
		ParamCertificateArn: ParamCertificateArn, ParamDeregistrationDelay: ParamDeregistrationDelay,
		ParamAccessLogsBucket: ParamAccessLogsBucket,
		OutputLoadBalancerArn: OutputLoadBalancerArn, OutputLoadBalancerDNSName: OutputLoadBalancerDNSName,
		ResourceLoadBalancer: ResourceLoadBalancer, ResourceLoadBalancerSecurityGroup: ResourceLoadBalancerSecurityGroup,
	}
}
