package render

import (
	"fmt"
	"net/netip"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// Endpoint is an interface VPC endpoint of a network without NAT: ID its
// logical id's stem, Service the endpoint service's last part
// (com.amazonaws.<region>.<Service>), Why which caller on the nodes needs
// it.
type Endpoint struct{ ID, Service, Why string }

// NodeEndpoints are the AWS services the nodes call, each an interface
// endpoint of a network without NAT (S3, a gateway endpoint, is in every
// network). The list follows the node agent's clients (internal/node/awsn),
// the loader's cfn-signal, the SSM agent and the engines' awslogs driver;
// ECR is the one registry a node without internet can pull from.
func NodeEndpoints() []Endpoint {
	return []Endpoint{
		{"Sqs", "sqs", "the managers' housekeeping queue"},
		{"Ssm", "ssm", "the SSM agent; Parameter Store secrets"},
		{"SsmMessages", "ssmmessages", "Session Manager shells, docker through Systems Manager"},
		{"Ec2Messages", "ec2messages", "Run Command"},
		{"Ec2", "ec2", "the node agent: instances, tags"},
		{"AutoScaling", "autoscaling", "the node agent: lifecycle actions, capacity"},
		{"CloudFormation", "cloudformation", "readiness signals (cfn-signal), stack reads"},
		{"Monitoring", "monitoring", "the swarm's health metrics"},
		{"Logs", "logs", "container and node logs (awslogs)"},
		{"SecretsManager", "secretsmanager", "swarm secrets from Secrets Manager"},
		{"EcrApi", "ecr.api", "pulling images from ECR"},
		{"EcrDkr", "ecr.dkr", "pulling images from ECR"},
	}
}

// networkData is what network.json.tmpl sees.
type networkData struct {
	N          names.Set
	Name, Nat  string
	Zones      int
	ZoneList   []int // 0 .. Zones-1
	NatList    []int // the zones with a NAT gateway
	Endpoints  []Endpoint
	Prefix     int // the VPC range's prefix length
	SubnetBits int // host bits of each of the 8 blocks
}

// Network renders the stack of network n.
func Network(n spec.Network, b Build) (*Rendered, error) {
	r, err := renderNetwork(n, b)
	if err != nil {
		return nil, fmt.Errorf("rendering network template: %w", err)
	}
	return r, nil
}

func renderNetwork(n spec.Network, b Build) (*Rendered, error) {
	if b.Version == "" {
		return nil, fmt.Errorf("clusterctl version is empty")
	}
	n.Default()
	p, err := netip.ParsePrefix(n.Cidr)
	if err != nil {
		return nil, fmt.Errorf("network range %q: %w", n.Cidr, err)
	}
	data := networkData{N: names.Template(), Name: n.Name, Nat: n.Nat, Zones: n.ZoneCount(),
		Prefix: p.Bits(), SubnetBits: 32 - p.Bits() - 3}
	for i := range data.Zones {
		data.ZoneList = append(data.ZoneList, i)
	}
	switch n.Nat {
	case names.NatSingle:
		data.NatList = []int{0}
	case names.NatPerZone:
		data.NatList = data.ZoneList
	case names.NatNone:
		data.Endpoints = NodeEndpoints()
	}
	body, err := execute("network/*.tmpl", "network.json.tmpl", data)
	if err != nil {
		return nil, err
	}
	r := &Rendered{
		StackName:  names.NetworkStack(n.Name),
		Template:   body,
		Parameters: map[string]string{names.ParamNetworkCidr: n.Cidr},
		Tags: withTags(map[string]string{
			names.TagRole:    names.RoleNetwork,
			names.TagNetwork: n.Name,
			names.TagVersion: b.Version,
		}, n.Tags),
		Capabilities: []string{},
	}
	if err := check(r); err != nil {
		return nil, err
	}
	return r, nil
}
