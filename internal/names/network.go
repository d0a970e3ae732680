package names

// ParamPublicIPs is the core's and a group's parameter that gives their
// nodes public IPv4 addresses ("true") or none ("false", the default).
const ParamPublicIPs = "PublicIps"

// The network stack: a VPC with public and private subnets that
// create-network makes and a core joins by reading its outputs, as a group
// joins the core. Its stack is <network>-network (NetworkStack), tagged
// TagRole=RoleNetwork and TagNetwork=<network>; a core that joined one
// carries TagNetwork=<network> too, and its Network parameter says the
// same, so delete-network finds the cores that use it by their tags.
const (
	RoleNetwork = "network"
	TagNetwork  = "clusterctl:network"
	// NetworkStackSuffix ends a network stack's name.
	NetworkStackSuffix = "-network"
)

// NetworkStack is the stack name of network name.
func NetworkStack(name string) string { return name + NetworkStackSuffix }

// Parameters of the network stack.
const (
	ParamNetworkCidr = "VpcCidr"
	ParamZones       = "Zones"
	ParamNat         = "Nat"
)

// Outputs of the network stack: its join contract with cores. Public:
// documented, read by create-core --network and by operators.
const (
	OutputNetworkName      = "NetworkName"
	OutputNetworkVpcID     = "VpcId"
	OutputVpcCidr          = "VpcCidr"
	OutputPublicSubnetIDs  = "PublicSubnetIds"
	OutputPrivateSubnetIDs = "PrivateSubnetIds"
	OutputZones            = "AvailabilityZones"
	OutputNat              = "Nat"
)

// NetworkOutputs are the network stack's outputs, in contract order.
func NetworkOutputs() []string {
	return []string{OutputNetworkName, OutputNetworkVpcID, OutputVpcCidr, OutputPublicSubnetIDs, OutputPrivateSubnetIDs, OutputZones, OutputNat}
}

// Parameters and outputs of a core joined to a network: the network's
// name (empty for a core in a VPC of the operator's) and its public
// subnets, where the groups' internet-facing load balancers go. The
// core's own SubnetIds are then the network's private subnets.
const (
	ParamNetwork           = "Network"
	ParamPublicSubnetIDs   = "PublicSubnetIds"
	OutputCoreNetwork      = "Network"
	OutputCorePublicSubnet = "PublicSubnetIds"
	// ParamLoadBalancerSubnetIDs is a group's parameter of its load
	// balancer's subnets: the core's public subnets for an internet-facing
	// one when the core has them, the group's own otherwise.
	ParamLoadBalancerSubnetIDs = "LoadBalancerSubnetIds"
)

// NAT modes of a network: one NAT gateway for all zones, one per zone, or
// none (the nodes reach AWS through VPC endpoints only).
const (
	NatSingle  = "single"
	NatPerZone = "per-zone"
	NatNone    = "none"
)

// NetworkNames are the network's names for the templates: {{.N.Net.TagNetwork}}.
type NetworkNames struct {
	ParamPublicIPs, RoleNetwork, TagNetwork                                       string
	ParamNetworkCidr, ParamZones, ParamNat                                        string
	OutputNetworkName, OutputNetworkVpcID, OutputVpcCidr                          string
	OutputPublicSubnetIDs, OutputPrivateSubnetIDs, OutputZones, OutputNat         string
	ParamNetwork, ParamPublicSubnetIDs, OutputCoreNetwork, OutputCorePublicSubnet string
	NatSingle, NatPerZone, NatNone                                                string
	ParamLoadBalancerSubnetIDs                                                    string
}

func networkNames() NetworkNames {
	return NetworkNames{
		ParamPublicIPs: ParamPublicIPs, RoleNetwork: RoleNetwork, TagNetwork: TagNetwork,
		ParamNetworkCidr: ParamNetworkCidr, ParamZones: ParamZones, ParamNat: ParamNat,
		OutputNetworkName: OutputNetworkName, OutputNetworkVpcID: OutputNetworkVpcID, OutputVpcCidr: OutputVpcCidr,
		OutputPublicSubnetIDs: OutputPublicSubnetIDs, OutputPrivateSubnetIDs: OutputPrivateSubnetIDs,
		OutputZones: OutputZones, OutputNat: OutputNat,
		ParamNetwork: ParamNetwork, ParamPublicSubnetIDs: ParamPublicSubnetIDs,
		OutputCoreNetwork: OutputCoreNetwork, OutputCorePublicSubnet: OutputCorePublicSubnet,
		NatSingle: NatSingle, NatPerZone: NatPerZone, NatNone: NatNone,
		ParamLoadBalancerSubnetIDs: ParamLoadBalancerSubnetIDs,
	}
}
