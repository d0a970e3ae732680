// Package names owns every name clusterctl shares with CloudFormation, EC2,
// S3 and the nodes: stack tags and their values, template parameters,
// join-contract and group outputs, logical resource ids referred to from
// outside their template, bucket keys, engine labels and the template
// metadata key. Go code uses the constants; the templates get them as
// Template() in their data, so no name is spelled twice.
//
// These names are deployed: renaming one makes existing stacks
// unrecognisable (tags), breaks updates (parameters) or breaks the join
// contract operators and hand-deployed groups read (outputs). They never
// change.
package names

// Ownership tags of every stack; the templates put the first four on the
// instances too.
const (
	TagCluster = "clusterctl:cluster"
	TagRole    = "clusterctl:role"
	TagGroup   = "clusterctl:group"
	TagVersion = "clusterctl:version"
	// TagLabels, TagImage and TagSubnets are on group stacks only: the
	// labels ("k=v,k=v" sorted, or NoLabels), the image as given (or
	// ImageDefault) and whose subnets (SubnetsCore or SubnetsOwn), so that
	// inventory reads them without fetching templates.
	TagLabels  = "clusterctl:labels"
	TagImage   = "clusterctl:image"
	TagSubnets = "clusterctl:subnets"
	// TagInstanceType, TagLifecycle and TagZone are on agent instances
	// only, put there by the node itself: what it really is, from its
	// instance metadata (the same as its engine labels below).
	TagInstanceType = "clusterctl:instance-type"
	TagLifecycle    = "clusterctl:lifecycle"
	TagZone         = "clusterctl:zone"
	// TagLabelPrefix prefixes one instance tag per label: clusterctl:label:<key>.
	TagLabelPrefix = "clusterctl:label:"
	// TagName is EC2's display name.
	TagName = "Name"
)

// Values of the ownership tags.
const (
	RoleCore     = "core"
	RoleAgents   = "agents"
	GroupControl = "control" // clusterctl:group of the core and its control node
	NoLabels     = "-"       // CloudFormation tag values cannot be empty
	ImageDefault = "default"
	SubnetsCore  = "core"
	SubnetsOwn   = "own"
)

// Template parameters. Core and group templates share the names of the
// settings they both take.
const (
	ParamInstanceType          = "InstanceType"
	ParamVolumeSize            = "VolumeSize"
	ParamImageParameter        = "ImageParameter" // SSM path; CloudFormation resolves it to an AMI on every deploy
	ParamImageID               = "ImageId"        // AMI id or empty; wins over ImageParameter
	ParamKeyName               = "KeyName"
	ParamSSHCIDR               = "SshCidr"
	ParamVpcID                 = "VpcId"     // core only; a group's is the join output of that name
	ParamSubnetIDs             = "SubnetIds" // the core's own; a group's own or the core's
	ParamDesiredCapacity       = "DesiredCapacity"
	ParamMinSize               = "MinSize"
	ParamMaxSize               = "MaxSize"
	ParamMaxBatchSize          = "MaxBatchSize"
	ParamMinInstancesInService = "MinInstancesInService"
	// A spot group's purchase mix; the template of a group without spot
	// declares none of them.
	ParamOnDemandBaseCapacity   = "OnDemandBaseCapacity"
	ParamOnDemandPercentage     = "OnDemandPercentageAboveBaseCapacity"
	ParamSpotAllocationStrategy = "SpotAllocationStrategy"
)

// Outputs of the core stack. The join contract is public: a group stack
// receives these as parameters of the same names.
const (
	OutputClusterName            = "ClusterName"
	OutputBucketName             = "BucketName"
	OutputControlPrivateIP       = "ControlPrivateIp"
	OutputControlSecurityGroupID = "ControlSecurityGroupId"
	OutputAgentSecurityGroupID   = "AgentSecurityGroupId"
	OutputAgentInstanceProfile   = "AgentInstanceProfile"
	OutputVpcID                  = "VpcId"
	OutputSubnetIDs              = "SubnetIds"
	OutputContractVersion        = "ContractVersion"
	// OutputControlInstanceID is informative, not part of the contract.
	OutputControlInstanceID = "ControlInstanceId"
)

// JoinOutputs are the join-contract outputs, in the order the contract
// lists them.
func JoinOutputs() []string {
	return []string{
		OutputClusterName, OutputBucketName, OutputControlPrivateIP, OutputControlSecurityGroupID,
		OutputAgentSecurityGroupID, OutputAgentInstanceProfile, OutputVpcID, OutputSubnetIDs, OutputContractVersion,
	}
}

// Outputs of a group stack.
const (
	OutputAutoScalingGroupName  = "AutoScalingGroupName"
	OutputLaunchTemplateID      = "LaunchTemplateId"
	OutputLaunchTemplateVersion = "LaunchTemplateVersion"
)

// Logical ids of resources named outside their own template: by the node
// scripts (cfn-signal, the bucket) and by plans.
const (
	ResourceBucket           = "Bucket"
	ResourceControlInstance  = "ControlInstance"
	ResourceAutoScalingGroup = "AutoScalingGroup"
	ResourceLaunchTemplate   = "LaunchTemplate"
)

// Keys of the cluster bucket. The core's IAM policies follow them: the
// control role writes SwarmPrefix, the agent role reads JoinPrefix only.
const (
	JoinPrefix       = "join"         // all the agents may read
	SwarmPrefix      = "join/swarm"   // the control node's join material
	SwarmToken       = "worker-token" // under SwarmPrefix
	SwarmCA          = "ca.pem"       // under SwarmPrefix
	NodeConfigPrefix = "join/groups"  // <group>/node-<sha256>.sh, uploaded by clusterctl
)

// NodeConfigKey is the bucket key of a group's node configuration with the
// given SHA-256 (hex). Keys are content-addressed, so the configuration of
// a previous launch template version stays available to a rollback.
func NodeConfigKey(group, sha256Hex string) string {
	return GroupConfigPrefix(group) + "node-" + sha256Hex + ".sh"
}

// GroupConfigPrefix is the bucket prefix of every node configuration of a
// group (with the trailing slash, so group "a" does not cover "ab").
func GroupConfigPrefix(group string) string { return NodeConfigPrefix + "/" + group + "/" }

// Engine labels clusterctl sets on every agent, for placement constraints
// such as engine.labels.clusterctl.group==r3-agents.
const (
	EngineLabelGroup        = "clusterctl.group"
	EngineLabelInstanceType = "clusterctl.instance-type"
	// EngineLabelLifecycle is spot or on-demand, EngineLabelZone the
	// availability zone: what the node really is, from its instance
	// metadata (in a mixed group, the instance type is too).
	EngineLabelLifecycle = "clusterctl.lifecycle"
	EngineLabelZone      = "clusterctl.zone"
	// EngineLabelReserved prefixes the engine labels clusterctl sets; an
	// operator's label may not start with it.
	EngineLabelReserved = "clusterctl."
)

// MetadataKey is the key under the template's Metadata where clusterctl
// records what a group or core was asked to be (see internal/render).
const MetadataKey = "clusterctl"

// GroupStack is the stack name of group in cluster.
func GroupStack(cluster, group string) string { return cluster + "-" + group }

// Set is every name, for the templates: {{.N.ParamInstanceType}}.
type Set struct {
	TagCluster, TagRole, TagGroup, TagVersion, TagLabelPrefix, TagName string
	TagInstanceType, TagLifecycle, TagZone                             string
	RoleCore, RoleAgents, GroupControl                                 string

	ParamInstanceType, ParamVolumeSize, ParamImageParameter, ParamImageID, ParamKeyName, ParamSSHCIDR string
	ParamVpcID, ParamSubnetIDs, ParamDesiredCapacity, ParamMinSize, ParamMaxSize                      string
	ParamMaxBatchSize, ParamMinInstancesInService                                                     string
	ParamOnDemandBaseCapacity, ParamOnDemandPercentage, ParamSpotAllocationStrategy                   string

	OutputClusterName, OutputBucketName, OutputControlPrivateIP, OutputControlSecurityGroupID string
	OutputAgentSecurityGroupID, OutputAgentInstanceProfile, OutputVpcID, OutputSubnetIDs      string
	OutputContractVersion, OutputControlInstanceID                                            string
	OutputAutoScalingGroupName, OutputLaunchTemplateID, OutputLaunchTemplateVersion           string

	ResourceBucket, ResourceControlInstance, ResourceAutoScalingGroup, ResourceLaunchTemplate string

	JoinPrefix, SwarmPrefix, SwarmToken, SwarmCA string

	EngineLabelGroup, EngineLabelInstanceType, EngineLabelLifecycle, EngineLabelZone string

	MetadataKey string
}

// Template returns every name for the templates' data.
func Template() Set {
	return Set{
		TagCluster: TagCluster, TagRole: TagRole, TagGroup: TagGroup, TagVersion: TagVersion,
		TagLabelPrefix: TagLabelPrefix, TagName: TagName,
		TagInstanceType: TagInstanceType, TagLifecycle: TagLifecycle, TagZone: TagZone,
		RoleCore: RoleCore, RoleAgents: RoleAgents, GroupControl: GroupControl,

		ParamInstanceType: ParamInstanceType, ParamVolumeSize: ParamVolumeSize, ParamImageParameter: ParamImageParameter,
		ParamImageID: ParamImageID, ParamKeyName: ParamKeyName, ParamSSHCIDR: ParamSSHCIDR, ParamVpcID: ParamVpcID,
		ParamSubnetIDs: ParamSubnetIDs, ParamDesiredCapacity: ParamDesiredCapacity, ParamMinSize: ParamMinSize,
		ParamMaxSize: ParamMaxSize, ParamMaxBatchSize: ParamMaxBatchSize, ParamMinInstancesInService: ParamMinInstancesInService,
		ParamOnDemandBaseCapacity: ParamOnDemandBaseCapacity, ParamOnDemandPercentage: ParamOnDemandPercentage,
		ParamSpotAllocationStrategy: ParamSpotAllocationStrategy,

		OutputClusterName: OutputClusterName, OutputBucketName: OutputBucketName, OutputControlPrivateIP: OutputControlPrivateIP,
		OutputControlSecurityGroupID: OutputControlSecurityGroupID, OutputAgentSecurityGroupID: OutputAgentSecurityGroupID,
		OutputAgentInstanceProfile: OutputAgentInstanceProfile, OutputVpcID: OutputVpcID, OutputSubnetIDs: OutputSubnetIDs,
		OutputContractVersion: OutputContractVersion, OutputControlInstanceID: OutputControlInstanceID,
		OutputAutoScalingGroupName: OutputAutoScalingGroupName, OutputLaunchTemplateID: OutputLaunchTemplateID,
		OutputLaunchTemplateVersion: OutputLaunchTemplateVersion,

		ResourceBucket: ResourceBucket, ResourceControlInstance: ResourceControlInstance,
		ResourceAutoScalingGroup: ResourceAutoScalingGroup, ResourceLaunchTemplate: ResourceLaunchTemplate,

		JoinPrefix: JoinPrefix, SwarmPrefix: SwarmPrefix, SwarmToken: SwarmToken, SwarmCA: SwarmCA,

		EngineLabelGroup: EngineLabelGroup, EngineLabelInstanceType: EngineLabelInstanceType,
		EngineLabelLifecycle: EngineLabelLifecycle, EngineLabelZone: EngineLabelZone,

		MetadataKey: MetadataKey,
	}
}
