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

import "time"

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
	// TagPrefix begins every tag key of clusterctl's: the operator's own
	// tags (spec.Tags) may not.
	TagPrefix = "clusterctl:"
)

// TagNodeBucket is on every instance (managers and agents), from its Auto
// Scaling group: the cluster's bucket, so that list-nodes reads the swarm's
// status without asking CloudFormation for the core's bucket. It is a hint,
// not proof: the snapshot read there must name the cluster, and commands
// that act on the bucket find it through the core stack.
const TagNodeBucket = "clusterctl:bucket"

// Autoscaling: tags on a group's Auto Scaling group (not propagated to
// the instances) by which the leader's autoscaler knows the group. An
// autoscaled group carries TagAutoscale with its scaleDownAfter as a Go
// duration ("10m0s"); a group without it is never changed by the
// autoscaler. TagInstanceTypes lists the types a new node may be
// ("m5.large,m5a.large"), so that the leader needs no launch template to
// know them.
const (
	TagAutoscale     = "clusterctl:autoscale"
	TagInstanceTypes = "clusterctl:instance-types"
)

// LeasePrefix is where clusterctl's leases live in the cluster bucket
// (internal/lease); the managers read them so that the autoscaler leaves a
// group alone while a command holds it.
const LeasePrefix = "locks"

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
	ParamManagers              = "Managers" // core only: 1, 3 or 5
	// A spot group's purchase mix; the template of a group without spot
	// declares none of them.
	ParamOnDemandBaseCapacity   = "OnDemandBaseCapacity"
	ParamOnDemandPercentage     = "OnDemandPercentageAboveBaseCapacity"
	ParamSpotAllocationStrategy = "SpotAllocationStrategy"
	// The core's logs: how long its log group keeps events, the KMS key
	// that encrypts them (empty: CloudWatch's own), and the engines' log
	// driver (LogDriverAWSLogs or LogDriverNone).
	ParamLogRetentionDays = "LogRetentionDays"
	ParamLogKMSKey        = "LogKmsKey"
	ParamLogDriver        = "LogDriver"
	// ParamBackupKeep is how many backups of the swarm the managers keep.
	ParamBackupKeep = "BackupKeep"
	// ParamOperators lists the operators, comma-separated: the IAM roles
	// and users that may send requests to the managers' queue and use
	// the bucket's commands/ (a core without it predates operators).
	ParamOperators = "Operators"
	// ParamNodeAgentAmd64 and ParamNodeAgentArm64 pin the node agent:
	// the SHA-256 (hex) of the linux/amd64 and linux/arm64 binaries that
	// the nodes' loader fetches (AgentKey) and checks before running.
	ParamNodeAgentAmd64 = "NodeAgentAmd64"
	ParamNodeAgentArm64 = "NodeAgentArm64"
	// ParamEngineVersion is the Docker Engine version every node's loader
	// installs exactly (docker-<version>); a core without it predates the
	// setting, and its nodes install the distribution's current docker.
	ParamEngineVersion = "EngineVersion"
)

// Log drivers of a cluster's engines: awslogs ships every container's
// output to the cluster's log group; none leaves the engines' default
// (json-file), for operators who ship logs their own way.
const (
	LogDriverAWSLogs = "awslogs"
	LogDriverNone    = "none"
)

// LogGroup is the name of cluster's CloudWatch log group.
func LogGroup(cluster string) string { return "/clusterctl/" + cluster }

// Log streams of the cluster's log group. A swarm task's container logs
// to service/<service>/<task>@<instance-id>, so that a service's tasks are
// found by prefix and each line says where it ran, as docker service logs
// does; any other container to container/<name>@<instance-id>; the node's
// own programs (housekeeping, agent) to node/<instance-id>. Each name
// starts with its node's role (LogStreamPrefix): each role's policy lets
// it write its own streams only. Streams of older nodes have no role.
const (
	LogStreamService   = "service/"
	LogStreamContainer = "container/"
	LogStreamNode      = "node/"
	LogStreamManagers  = "managers/"
	LogStreamAgents    = "agents/"
)

// LogStreamPrefix is where the streams of a manager's (or an agent's)
// containers and programs start.
func LogStreamPrefix(manager bool) string {
	if manager {
		return LogStreamManagers
	}
	return LogStreamAgents
}

// Outputs of the core stack. The join contract is public: a group stack
// receives these as parameters of the same names.
const (
	OutputClusterName            = "ClusterName"
	OutputBucketName             = "BucketName"
	OutputControlSecurityGroupID = "ControlSecurityGroupId"
	OutputAgentSecurityGroupID   = "AgentSecurityGroupId"
	OutputAgentInstanceProfile   = "AgentInstanceProfile"
	OutputVpcID                  = "VpcId"
	OutputSubnetIDs              = "SubnetIds"
	// OutputManagersKey is how agents find the managers: the key, in the
	// bucket, of the list of live managers' addresses.
	OutputManagersKey     = "ManagersKey"
	OutputContractVersion = "ContractVersion"
	// OutputManagerGroupName is informative, not part of the contract: the
	// managers' Auto Scaling group.
	OutputManagerGroupName = "ManagerGroupName"
	// OutputLogGroupName and OutputLogDriver are the cluster's log group
	// and its engines' log driver; not part of the contract (a core
	// without them has no log group), clusterctl reads them for the
	// groups' node configuration and for clusterctl logs.
	OutputLogGroupName = "LogGroupName"
	OutputLogDriver    = "LogDriver"
	// OutputEngineVersion is the Docker Engine version of the cluster's
	// nodes: the groups' node configuration takes it from the core, as it
	// does the log driver (a core without it predates the setting).
	OutputEngineVersion = "EngineVersion"
)

// Outputs of a core of join contract 1, which pinned its one control node.
// clusterctl reads them from the cores and groups it upgrades, and renders
// them no more.
const (
	OutputControlPrivateIP  = "ControlPrivateIp"
	OutputControlInstanceID = "ControlInstanceId"
)

// JoinOutputs are the join-contract outputs, in the order the contract
// lists them.
func JoinOutputs() []string {
	return []string{
		OutputClusterName, OutputBucketName, OutputControlSecurityGroupID, OutputAgentSecurityGroupID,
		OutputAgentInstanceProfile, OutputVpcID, OutputSubnetIDs, OutputManagersKey, OutputContractVersion,
	}
}

// LegacyJoinOutputs are the outputs earlier join contracts had and the
// current one has not: a group of such a contract still carries them as
// parameters until update-group brings it to the current contract.
func LegacyJoinOutputs() []string { return []string{OutputControlPrivateIP} }

// Outputs of a group stack.
const (
	OutputAutoScalingGroupName  = "AutoScalingGroupName"
	OutputLaunchTemplateID      = "LaunchTemplateId"
	OutputLaunchTemplateVersion = "LaunchTemplateVersion"
)

// Logical ids of resources named outside their own template: by the node
// scripts (cfn-signal, the bucket) and by plans.
const (
	ResourceBucket                = "Bucket"
	ResourceManagerGroup          = "ManagerGroup" // the managers' Auto Scaling group
	ResourceControlLaunchTemplate = "ControlLaunchTemplate"
	ResourceAutoScalingGroup      = "AutoScalingGroup"
	ResourceLaunchTemplate        = "LaunchTemplate"
	// ResourceLifecycleQueue is the core's queue, which brings the
	// managers' housekeeping its notices and clusterctl's requests.
	ResourceLifecycleQueue = "LifecycleQueue"
	// ResourceControlInstance is the one control node of a core of join
	// contract 1.
	ResourceControlInstance = "ControlInstance"
	// ResourceLogGroup is the cluster's CloudWatch log group.
	ResourceLogGroup = "LogGroup"
)

// Keys of the cluster bucket. The core's IAM policies follow them: the
// control role writes SwarmPrefix and ControlPrefix and is the only one
// that reads ControlPrefix; the agent role reads JoinPrefix only.
const (
	JoinPrefix       = "join"         // all the agents may read
	SwarmPrefix      = "join/swarm"   // the managers' join material
	SwarmToken       = "worker-token" // under SwarmPrefix
	SwarmCA          = "ca.pem"       // under SwarmPrefix
	Managers         = "managers"     // under SwarmPrefix: the live managers' addresses, ip:port, one a line
	NodeConfigPrefix = "join/groups"  // <group>/node-<sha256>.env, uploaded by clusterctl
	// ControlPrefix holds what only managers may read.
	ControlPrefix = "control"
	// InitMarker (under ControlPrefix) names the manager that initialised
	// the swarm; written only if absent, so exactly one manager does.
	InitMarker = "swarm-init"
	// ManagerToken (under ControlPrefix) is the swarm's manager join token.
	ManagerToken = "manager-token"
	// ManagerAliases (under ControlPrefix) pairs the address by which the
	// swarm knows a manager with the one it has, where they differ (a swarm
	// restored onto another host): "known real", one a line.
	ManagerAliases = "manager-aliases"
	// Backup (under ControlPrefix) is where a lone manager kept its one
	// backup before every swarm kept several (BackupsPrefix): still
	// restored when it is the newest, and removed once a newer one exists.
	Backup = "swarm-backup.tar.gz"
	// BackupsPrefix (under ControlPrefix) holds the swarm's backups, one
	// object each (BackupKey), the newest BackupKeep kept.
	BackupsPrefix = "backups"
	// QuorumRecovery (under ControlPrefix) is the claim of the survivor
	// that forces a new cluster after the swarm lost its quorum
	// (wire.RecoveryClaim); written only if absent, or only if still the
	// claim of an earlier loss, so exactly one survivor does.
	QuorumRecovery = "quorum-recovery"
	// BackupOrder (under ControlPrefix) is the leader's order to one
	// follower to take a backup (wire.BackupOrder).
	BackupOrder = "backup-order"
	// Restore (under ControlPrefix) is the leader's word on a restore of
	// the live swarm (wire.RestoreMarker): the managers it demoted leave
	// and join the restored swarm once it is done.
	Restore = "restore"
	// ManagersChanged (under ControlPrefix) is "COUNT SINCE": the swarm's
	// number of managers and when it last changed (Unix seconds, 0: not
	// since it was first recorded), kept by the leader; a restore refuses a
	// backup taken before then.
	ManagersChanged = "managers-changed"
)

// StatusKey is the bucket key of the swarm's status snapshot, which the
// managers publish and list-nodes, list-groups and describe read (agents
// may read it too: it tells them whether the swarm sees them).
const StatusKey = StatusPrefix + "/swarm.json"

// StatusPrefix holds what the managers publish about the swarm.
const StatusPrefix = "status"

// ManagerWrittenPrefixes are the bucket prefixes (with their trailing
// slash) that only the managers' role may write or delete in: the join
// material the agents trust, what only the managers read (backups, the
// manager token) and the status the agents and clusterctl act on. The
// bucket policy denies every other principal, so that broad S3 rights
// elsewhere in the account do not steer the nodes.
func ManagerWrittenPrefixes() []string {
	return []string{SwarmPrefix + "/", ControlPrefix + "/", StatusPrefix + "/"}
}

// OperatorWrittenPrefixes are the bucket prefixes (with their trailing
// slash) that clusterctl writes from the operator's side and the nodes
// only read: the node configurations, the node agents and the leases.
// The bucket policy denies writes and deletes there to the nodes' roles.
func OperatorWrittenPrefixes() []string {
	return []string{NodeConfigPrefix + "/", AgentPrefix + "/", LeasePrefix + "/"}
}

// CommandPrefix is where Run Command writes the output of the docker
// commands clusterctl runs on the managers (OutputS3KeyPrefix
// CommandPrefix/<run>), and where a standard input too large to send
// inline waits for them (CommandInputKey). Only operators and the managers
// may use it; a lifecycle rule expires what it holds after a day.
const CommandPrefix = "commands"

// CommandOutputPrefix is the OutputS3KeyPrefix of one run's command.
func CommandOutputPrefix(run string) string { return CommandPrefix + "/" + run }

// CommandInputKey is the bucket key of one run's standard input.
func CommandInputKey(run string) string { return CommandPrefix + "/" + run + "/stdin" }

// ManagersKey is the bucket key of the managers' addresses: the value of
// the core's OutputManagersKey.
const ManagersKey = SwarmPrefix + "/" + Managers

// Requests clusterctl puts on the core's queue for the managers'
// housekeeping, in the envelope of the events EventBridge puts there:
// "source" RequestSource, "detail-type" RequestNodeAvailability (set the
// availability of the swarm nodes of an instance: drain-node).
const (
	RequestSource           = "clusterctl"
	RequestNodeAvailability = "NodeAvailabilityRequest"
	// RequestBackup asks the managers to back the swarm up now.
	RequestBackup = "BackupRequest"
	// RequestRestore asks the managers to restore the swarm from one of
	// its backups.
	RequestRestore = "RestoreRequest"
)

// RequestMaxAge bounds a request's age when housekeeping takes it (by the
// queue's own clock): an older one is dropped, so a request that waited
// on the queue never changes the swarm long after it was made; clusterctl
// stops waiting for a request not acted on within it.
const RequestMaxAge = 10 * time.Minute

// AgentPrefix holds the node agents clusterctl uploads, under the join
// prefix: managers and agents alike may read it.
const AgentPrefix = JoinPrefix + "/agent"

// AgentKey is the bucket key of the node agent for arch (amd64, arm64)
// whose binary has the given SHA-256 (hex): content-addressed, so that
// every launch template version finds the agent it pins. The object is
// the binary gzip-compressed; the hash is the binary's.
func AgentKey(arch, sha256Hex string) string {
	return AgentPrefix + "/clusterctl-node-linux-" + arch + "-" + sha256Hex + ".gz"
}

// BackupKey is the bucket key of the backup taken at t by instance: the
// time first, so that the keys sort as the backups were taken.
func BackupKey(t time.Time, instance string) string {
	return ControlPrefix + "/" + BackupsPrefix + "/" + t.UTC().Format(BackupTimeFormat) + "-" + instance + ".tar.gz"
}

// BackupTimeFormat is the time in a backup's key.
const BackupTimeFormat = "20060102T150405Z"

// ControlKey is the bucket key of a control-only object (InitMarker,
// ManagerToken, Backup).
func ControlKey(name string) string { return ControlPrefix + "/" + name }

// LifecycleHook is the name of the termination lifecycle hook of every
// Auto Scaling group of cluster (its managers' and its groups'): what
// brings a terminating node to the housekeeping that drains it.
func LifecycleHook(cluster string) string { return "clusterctl-drain-" + cluster }

// NodeConfigKey is the bucket key of a group's node settings (the node
// agent's settings file) with the given SHA-256 (hex). Keys are
// content-addressed, so the settings of a previous launch template version
// stay available to a rollback.
func NodeConfigKey(group, sha256Hex string) string {
	return GroupConfigPrefix(group) + "node-" + sha256Hex + ".env"
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
	// EngineLabelInstanceID is the engine label by which the managers find
	// the swarm node of an instance; every node sets it at boot.
	EngineLabelInstanceID = "clusterctl.instance-id"
	// EngineLabelAgent is the SHA-256 (hex) of the node agent the node
	// runs, and EngineLabelEngineVersion the Docker Engine version its
	// stack asked the loader to install: what a node says it runs, shown
	// by list-nodes and compared by upgrade's plan (never proof of
	// anything).
	EngineLabelAgent         = "clusterctl.agent"
	EngineLabelEngineVersion = "clusterctl.engine-version"
	// EngineLabelReserved prefixes the engine labels clusterctl sets; an
	// operator's label may not start with it.
	EngineLabelReserved = "clusterctl."
)

// Node labels (the swarm's node.labels, which only managers may write)
// that the leader sets on a node it proves to be its instance: the same
// keys as the engine labels above, and the group's own labels, from what
// Auto Scaling and EC2 say of the instance, never from the node. Placement
// constraints name these: node.labels.clusterctl.group==r3-agents.
const (
	// NodeLabelKeys lists, comma-separated and sorted, the keys of the
	// group's own labels the leader set, so that it removes a key the
	// group no longer declares and no label an operator set.
	NodeLabelKeys = "clusterctl.labels"
	// NodeLabelUnprovenSince is when the leader first found the node
	// unproven (RFC 3339): it is removed from the swarm after a bound.
	NodeLabelUnprovenSince = "clusterctl.unproven-since"
	// NodeLabelDrainedUnproven is the availability the node had when the
	// leader drained it for being unproven: it gets it back once proven.
	// A node without it was drained by someone else, and stays so.
	NodeLabelDrainedUnproven = "clusterctl.drained-unproven"
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
	ParamMaxBatchSize, ParamMinInstancesInService, ParamManagers                                      string
	ParamOnDemandBaseCapacity, ParamOnDemandPercentage, ParamSpotAllocationStrategy                   string
	ParamLogRetentionDays, ParamLogKMSKey, ParamLogDriver                                             string
	ParamBackupKeep, ParamOperators                                                                   string
	ParamNodeAgentAmd64, ParamNodeAgentArm64, AgentPrefix                                             string
	ParamEngineVersion, OutputEngineVersion                                                           string
	OutputLogGroupName, OutputLogDriver, ResourceLogGroup, LogDriverAWSLogs, LogDriverNone            string

	OutputClusterName, OutputBucketName, OutputControlSecurityGroupID                    string
	OutputAgentSecurityGroupID, OutputAgentInstanceProfile, OutputVpcID, OutputSubnetIDs string
	OutputManagersKey, OutputContractVersion, OutputManagerGroupName                     string
	OutputAutoScalingGroupName, OutputLaunchTemplateID, OutputLaunchTemplateVersion      string

	ResourceBucket, ResourceManagerGroup, ResourceControlLaunchTemplate, ResourceAutoScalingGroup, ResourceLaunchTemplate string
	ResourceLifecycleQueue                                                                                                string

	JoinPrefix, SwarmPrefix, ManagersKey, ControlPrefix string

	StatusKey, StatusPrefix, NodeConfigPrefix string

	CommandPrefix string
	TagNodeBucket string

	InterruptionPrefix string

	MetadataKey string

	TagAutoscale, TagInstanceTypes, LeasePrefix string

	Metrics MetricNames
	Net     NetworkNames
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
		ParamManagers:             ParamManagers,
		ParamOnDemandBaseCapacity: ParamOnDemandBaseCapacity, ParamOnDemandPercentage: ParamOnDemandPercentage,
		ParamSpotAllocationStrategy: ParamSpotAllocationStrategy,
		ParamLogRetentionDays:       ParamLogRetentionDays, ParamLogKMSKey: ParamLogKMSKey, ParamLogDriver: ParamLogDriver, ParamBackupKeep: ParamBackupKeep,
		ParamOperators:      ParamOperators,
		ParamNodeAgentAmd64: ParamNodeAgentAmd64, ParamNodeAgentArm64: ParamNodeAgentArm64, AgentPrefix: AgentPrefix,
		ParamEngineVersion: ParamEngineVersion, OutputEngineVersion: OutputEngineVersion,
		OutputLogGroupName: OutputLogGroupName, OutputLogDriver: OutputLogDriver, ResourceLogGroup: ResourceLogGroup,
		LogDriverAWSLogs: LogDriverAWSLogs, LogDriverNone: LogDriverNone,

		OutputClusterName: OutputClusterName, OutputBucketName: OutputBucketName,
		OutputControlSecurityGroupID: OutputControlSecurityGroupID, OutputAgentSecurityGroupID: OutputAgentSecurityGroupID,
		OutputAgentInstanceProfile: OutputAgentInstanceProfile, OutputVpcID: OutputVpcID, OutputSubnetIDs: OutputSubnetIDs,
		OutputManagersKey: OutputManagersKey, OutputContractVersion: OutputContractVersion, OutputManagerGroupName: OutputManagerGroupName,
		OutputAutoScalingGroupName: OutputAutoScalingGroupName, OutputLaunchTemplateID: OutputLaunchTemplateID,
		OutputLaunchTemplateVersion: OutputLaunchTemplateVersion,

		ResourceBucket: ResourceBucket, ResourceManagerGroup: ResourceManagerGroup, ResourceControlLaunchTemplate: ResourceControlLaunchTemplate,
		ResourceAutoScalingGroup: ResourceAutoScalingGroup, ResourceLaunchTemplate: ResourceLaunchTemplate,
		ResourceLifecycleQueue: ResourceLifecycleQueue,

		JoinPrefix: JoinPrefix, SwarmPrefix: SwarmPrefix, ManagersKey: ManagersKey, ControlPrefix: ControlPrefix,

		StatusKey: StatusKey, StatusPrefix: StatusPrefix, NodeConfigPrefix: NodeConfigPrefix,

		CommandPrefix: CommandPrefix,
		TagNodeBucket: TagNodeBucket,

		InterruptionPrefix: InterruptionPrefix,

		MetadataKey: MetadataKey,

		TagAutoscale: TagAutoscale, TagInstanceTypes: TagInstanceTypes, LeasePrefix: LeasePrefix,
		Metrics: Metrics(),
		Net:     networkNames(),
	}
}
