package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v4"
)

// A group's load balancer: a Network Load Balancer in the group's stack
// with one listener and one target group per published port. The group's
// Auto Scaling group is attached to the target groups, so Auto Scaling
// registers every node it launches and deregisters every node it
// terminates (before the termination lifecycle hook, after the
// deregistration delay).

// Load balancer schemes.
const (
	SchemeInternetFacing = "internet-facing"
	SchemeInternal       = "internal"
)

// Protocols of a published port: tcp and udp pass through; tls ends at the
// load balancer with the group's certificate, and the nodes see TCP.
const (
	ProtocolTCP = "tcp"
	ProtocolUDP = "udp"
	ProtocolTLS = "tls"
)

// Limits and defaults of the load balancer.
const (
	// MaxListeners is a Network Load Balancer's quota of listeners.
	MaxListeners = 50
	// MaxAllowRules is a security group's default quota of inbound rules:
	// the load balancer's has one per published port and allowed CIDR.
	MaxAllowRules = 60
	// DefaultDeregistrationDelay is how long, in seconds, a target
	// group lets a node that leaves it finish its connections.
	DefaultDeregistrationDelay = 30
	MaxDeregistrationDelay     = 3600
	// AnywhereCIDR is who may connect to an internet-facing load balancer
	// by default: the point of a public load balancer.
	AnywhereCIDR = "0.0.0.0/0"
)

// hostPorts are the node ports the host itself uses, by why: a load
// balancer forwarding to one would open the host (the swarm's own ports,
// the engine's API, sshd past --ssh-cidr's guard) to its clients.
var hostPorts = map[int]string{
	22:   "the nodes' sshd (SSH is closed; open it with --ssh-cidr)",
	2375: "the engine's API (plain)",
	2376: "the engine's API (TLS)",
	2377: "the swarm's own (managers)",
	7946: "the swarm's own (gossip)",
	4789: "the swarm's own (overlay traffic)",
}

// Schemes are the load balancer schemes a group may take.
func Schemes() []string { return []string{SchemeInternetFacing, SchemeInternal} }

// Port is one published port: the load balancer listens on Port and
// forwards to NodePort on the nodes.
type Port struct {
	Port, NodePort int
	Protocol       string // tcp, udp or tls
}

// String is the entry's short form: PORT[:NODEPORT][/PROTOCOL], the node
// port left out when it is the port and the protocol when it is tcp.
func (p Port) String() string {
	s := strconv.Itoa(p.Port)
	if p.NodePort != p.Port {
		s += ":" + strconv.Itoa(p.NodePort)
	}
	if p.Protocol != ProtocolTCP {
		s += "/" + p.Protocol
	}
	return s
}

// NodeProtocol is the protocol the load balancer speaks to the nodes (and
// its target group's): TLS ends at the load balancer.
func (p Port) NodeProtocol() string {
	if p.Protocol == ProtocolUDP {
		return ProtocolUDP
	}
	return ProtocolTCP
}

var portRE = regexp.MustCompile(`^([0-9]+)(?::([0-9]+))?(?:/([a-z]+))?$`)

// ParsePort reads PORT[:NODEPORT][/tcp|udp|tls]; the node port defaults to
// the port, the protocol to tcp.
func ParsePort(s string) (Port, error) {
	m := portRE.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return Port{}, fmt.Errorf("invalid port %q: expected PORT[:NODEPORT][/tcp|udp|tls], e.g. 443/tls or 80:30080", s)
	}
	p := Port{Protocol: ProtocolTCP}
	p.Port, _ = strconv.Atoi(m[1])
	p.NodePort = p.Port
	if m[2] != "" {
		p.NodePort, _ = strconv.Atoi(m[2])
	}
	if m[3] != "" {
		p.Protocol = m[3]
	}
	for _, n := range []int{p.Port, p.NodePort} {
		if n < 1 || n > 65535 {
			return Port{}, fmt.Errorf("invalid port %q: %d is out of 1-65535", s, n)
		}
	}
	if !slices.Contains([]string{ProtocolTCP, ProtocolUDP, ProtocolTLS}, p.Protocol) {
		return Port{}, fmt.Errorf("invalid port %q: protocol %s, expected tcp, udp or tls", s, p.Protocol)
	}
	return p, nil
}

// Ports are a group's published ports, each PORT[:NODEPORT][/PROTOCOL]. A
// flag gives them comma-separated (--publish 80,443/tls); a file as a
// list (numbers or strings) or one string. Each entry is checked by Check,
// which applies to files too.
type Ports []string

// UnmarshalText reads a --publish flag; "" publishes nothing (update-group
// --publish "" removes the load balancer).
func (p *Ports) UnmarshalText(b []byte) error {
	*p = splitTypes(string(b))
	return nil
}

// UnmarshalJSON reads a string, a number or a list of them.
func (p *Ports) UnmarshalJSON(b []byte) error {
	var one any
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	l, ok := one.([]any)
	if !ok {
		l = []any{one}
	}
	var out Ports
	for _, x := range l {
		switch x := x.(type) {
		case string:
			out = append(out, splitTypes(x)...)
		case float64:
			out = append(out, strconv.FormatFloat(x, 'f', -1, 64))
		default:
			return fmt.Errorf("publish: expected a port, a string or a list of them")
		}
	}
	*p = out
	return nil
}

// UnmarshalYAML reads a scalar or a sequence of scalars.
func (p *Ports) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*p = splitTypes(n.Value)
		return nil
	}
	var l []string
	if err := n.Decode(&l); err != nil {
		return fmt.Errorf("publish: expected a port, a string or a list of them")
	}
	*p = l
	return nil
}

// String is the comma-separated form, as --publish takes it.
func (p Ports) String() string { return strings.Join(p, ",") }

// Parsed returns the entries that parse, in order: after Check, all.
func (p Ports) Parsed() []Port {
	var out []Port
	for _, s := range p {
		if x, err := ParsePort(s); err == nil {
			out = append(out, x)
		}
	}
	return out
}

// canonical rewrites every entry that parses in its short form, so that
// 80:80/tcp and 80 are the same setting.
func (p Ports) canonical() Ports {
	if len(p) == 0 {
		return nil
	}
	out := slices.Clone(p)
	for i, s := range out {
		if x, err := ParsePort(s); err == nil {
			out[i] = x.String()
		}
	}
	return out
}

// Published tells whether the group has a load balancer.
func (g Group) Published() bool { return len(g.Publish) > 0 }

// TLS tells whether a published port ends TLS at the load balancer.
func (g Group) TLS() bool {
	return slices.ContainsFunc(g.Publish.Parsed(), func(p Port) bool { return p.Protocol == ProtocolTLS })
}

// Scheme is the load balancer's scheme, defaulted: internet-facing when
// ports are published, "" when not.
func (g Group) Scheme() string {
	if g.LoadBalancer == "" && g.Published() {
		return SchemeInternetFacing
	}
	return g.LoadBalancer
}

// Deregistration is the target groups' deregistration delay in seconds,
// defaulted.
func (g Group) Deregistration() int {
	return orDefault(g.DeregistrationDelay, DefaultDeregistrationDelay)
}

// AllowFromOr is who may connect to the load balancer: the CIDRs given,
// or by default anywhere for an internet-facing load balancer and vpcCIDR
// (the VPC's, asked of EC2 when deploying) for an internal one.
func (g Group) AllowFromOr(vpcCIDR string) []string {
	switch {
	case len(g.AllowFrom) > 0:
		return g.AllowFrom
	case g.Scheme() == SchemeInternal:
		return []string{vpcCIDR}
	}
	return []string{AnywhereCIDR}
}

// lbSettings are the paths of the settings that belong to the load
// balancer and mean nothing without a published port.
var lbSettings = []string{"loadBalancer", "allowFrom", "certificate", "deregistrationDelay", "accessLogs"}

var bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// acmARNRE is an ACM certificate's ARN, in any partition.
var acmARNRE = regexp.MustCompile(`^arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/[0-9a-f-]+$`)

// lbRules are the rules of the load balancer's settings.
func (g Group) lbRules() []rule {
	var rules []rule
	if !g.Published() {
		for _, path := range lbSettings {
			if f := fieldAt(&g, path); f != nil && value(f.Value) != nil {
				rules = append(rules, rule{[]string{path, "publish"}, invalid(path, "applies to a group with a load balancer only (give the ports to publish with --publish)")})
			}
		}
		return rules
	}
	rules = append(rules, one("publish", checkPorts("publish", g.Publish)))
	if g.LoadBalancer != "" && !slices.Contains(Schemes(), g.LoadBalancer) {
		rules = append(rules, one("loadBalancer", invalid("loadBalancer", "invalid load balancer %q: expected %s", g.LoadBalancer, strings.Join(Schemes(), " or "))))
	}
	rules = append(rules, one("allowFrom", checkAllowFrom("allowFrom", g.AllowFrom)))
	if n := len(g.Publish) * max(1, len(g.AllowFrom)); len(g.AllowFrom) > 0 && n > MaxAllowRules {
		rules = append(rules, rule{[]string{"allowFrom", "publish"}, invalid("allowFrom", "%d ports from %d CIDRs need %d security group rules, over the %d a security group takes", len(g.Publish), len(g.AllowFrom), n, MaxAllowRules)})
	}
	switch {
	case g.TLS() && g.Certificate == "":
		rules = append(rules, rule{[]string{"publish", "certificate"}, invalid("certificate", "a tls port ends TLS at the load balancer: give the certificate's ACM ARN with --certificate")})
	case !g.TLS() && g.Certificate != "":
		rules = append(rules, rule{[]string{"publish", "certificate"}, invalid("certificate", "applies to tls ports only (e.g. --publish 443/tls)")})
	case g.Certificate != "" && !acmARNRE.MatchString(g.Certificate):
		rules = append(rules, one("certificate", invalid("certificate", "invalid certificate %q: expected an ACM certificate ARN (arn:aws:acm:REGION:ACCOUNT:certificate/ID)", g.Certificate)))
	}
	if d := g.Deregistration(); d < 0 || d > MaxDeregistrationDelay {
		rules = append(rules, one("deregistrationDelay", invalid("deregistrationDelay", "invalid deregistration delay %d: expected 0 to %d seconds", d, MaxDeregistrationDelay)))
	}
	if b := g.AccessLogs; b != "" && !bucketRE.MatchString(b) {
		rules = append(rules, one("accessLogs", invalid("accessLogs", "invalid bucket name %q: expected an S3 bucket name", b)))
	}
	return rules
}

// checkPorts checks the published ports: each parses, no port twice, no
// node port of the swarm's own, no more than a load balancer's listeners.
func checkPorts(path string, ports Ports) error {
	if len(ports) > MaxListeners {
		return invalid(path, "%d ports published, at most %d (a load balancer's listeners)", len(ports), MaxListeners)
	}
	seen := map[int]string{}
	for _, s := range ports {
		p, err := ParsePort(s)
		if err != nil {
			return invalid(path, "%s", err.Error())
		}
		if prev, ok := seen[p.Port]; ok {
			return invalid(path, "port %d published twice (%s and %s)", p.Port, prev, s)
		}
		seen[p.Port] = s
		if why, ok := hostPorts[p.NodePort]; ok {
			return invalid(path, "node port %d is %s: the host's ports %s are refused; publish the service on another node port (PORT:NODEPORT, e.g. %d:30%03d)",
				p.NodePort, why, hostPortList(), p.Port, p.NodePort%1000)
		}
	}
	return nil
}

// hostPortList spells the host's ports: 22, 2375, ... and 7946.
func hostPortList() string {
	ports := slices.Sorted(maps.Keys(hostPorts))
	words := make([]string, len(ports))
	for i, p := range ports {
		words[i] = strconv.Itoa(p)
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// checkAllowFrom checks who may connect: IPv4 CIDRs (the security group's
// rules take CidrIp), network addresses, none twice.
func checkAllowFrom(path string, cidrs []string) error {
	seen := map[string]bool{}
	for _, s := range cidrs {
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is4() {
			return invalid(path, "invalid CIDR %q: expected an IPv4 address/prefix, e.g. 203.0.113.0/24", s)
		}
		if p.Masked() != p {
			return invalid(path, "invalid CIDR %q: host bits set, did you mean %s?", s, p.Masked())
		}
		if seen[s] {
			return invalid(path, "CIDR %s given twice", s)
		}
		seen[s] = true
	}
	return nil
}

// fieldAt is the setting at path of v, or nil.
func fieldAt(v any, path string) *Field {
	for _, f := range Fields(v) {
		if f.Path == path {
			return &f
		}
	}
	return nil
}
