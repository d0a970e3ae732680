// Package spec is clusterctl's model of a cluster: one Cluster (its core
// and its agent groups) that the flag commands and cluster files fill alike
// and that a deployed cluster is read back into.
//
// A setting is a field of Core or Group. Its tags say everything the rest
// of clusterctl needs to know about it:
//
//   - json/yaml: its key in a cluster file and its path in errors and plans
//     (groups[1].rollingUpdate.maxBatch);
//   - name/short/help (kong): its flag on create-core, add-agents,
//     update-group and render;
//   - file: its description in a cluster file's schema, where the
//     flag's help does not fit;
//   - cfn: the template parameter that carries its value; a setting without
//     one is intent, recorded in the template's metadata (internal/render);
//     cfn:"-" is neither (a group's name is its stack's).
//
// Default fills in what was left out, Check checks every rule; both live
// here and nowhere else, and Complete does both. (Not "Validate": kong
// calls a Validate method of a flag struct before the defaults are in.)
// Zero values mean "not given": nil for numbers, "" for text, nil for
// lists and labels.
package spec

import (
	"slices"
)

// File format identifiers of a cluster file.
const (
	APIVersion = "clusterctl/v1"
	Kind       = "Cluster"
)

// Defaults of the settings that have one. The image and the subnets have
// defaults too, resolved at render time: the region's Amazon Linux 2023 for
// the instance type's architecture, and the core's subnets.
const (
	DefaultCoreInstanceType = "t3.medium"
	DefaultCoreVolumeSize   = 20 // GiB
	DefaultManagers         = 1
	DefaultCount            = 1
	DefaultMin              = 0
	DefaultVolumeSize       = 30 // GiB
	DefaultMaxBatch         = 1
	DefaultLogRetentionDays = 30
	DefaultLogDriver        = "awslogs"
	// DefaultEngineVersion is the Docker Engine version this clusterctl is
	// tested with: Amazon Linux 2023's docker package.
	DefaultEngineVersion = "25.0.8"
	DefaultAlarms        = "on"
	DefaultBackupKeep    = 8
	MaxBackupKeep        = 100
	// A spot group's defaults; without spot, every node is on-demand.
	DefaultSpotOnDemandBase    = 0
	DefaultSpotOnDemandPercent = 0
	DefaultSpotAllocation      = SpotPriceCapacityOptimized
	onDemandOnlyPercent        = 100
)

// Spot allocation strategies: how an Auto Scaling group picks the spot
// pools (instance type and zone) it launches in.
const (
	SpotPriceCapacityOptimized = "price-capacity-optimized"
	SpotCapacityOptimized      = "capacity-optimized"
	SpotLowestPrice            = "lowest-price"
)

// SpotAllocations are the spot allocation strategies a group may take.
func SpotAllocations() []string {
	return []string{SpotPriceCapacityOptimized, SpotCapacityOptimized, SpotLowestPrice}
}

// Cluster is a whole cluster: its core and its groups. The core stack is
// named after the cluster, a group's stack <cluster>-<group>.
type Cluster struct {
	APIVersion string `json:"apiVersion" yaml:"apiVersion" help:"File format: clusterctl/v1."`
	Kind       string `json:"kind" yaml:"kind" help:"Cluster."`
	Name       string `json:"name" yaml:"name" help:"Cluster name: the core stack's name."`
	// Network is the network the core joins, declared whole: apply
	// creates it first when it does not exist, and refuses a file that
	// says otherwise of an existing one. Left out, core.network names an
	// existing network, or the core runs in a VPC it is given.
	Network *Network `json:"network,omitempty" yaml:"network,omitempty" help:"The network the cluster runs in, as create-network makes it: apply creates it first when it does not exist (core.network is then its name)."`
	Core    Core     `json:"core" yaml:"core" help:"The control plane's settings; left out, every default."`
	// Secrets is the file's top-level secrets: list. The model keeps them
	// in Core.Secrets (they are a setting of the core stack): Complete
	// moves them there, and a file is written with them here (FileForm).
	Secrets Secrets `json:"secrets,omitempty" yaml:"secrets,omitempty" help:"Swarm secrets the managers keep in step with AWS: each {name, from: a Secrets Manager ARN or ssm:/path, key: a field of a JSON secret}."`
	Groups  []Group `json:"groups,omitempty" yaml:"groups,omitempty" help:"Agent groups; one deployed but not listed here is kept, or deleted by apply --prune."`
}

// New returns the spec of cluster name with a default core and no groups.
func New(name string) Cluster {
	return Cluster{APIVersion: APIVersion, Kind: Kind, Name: name}
}

// Group returns the group of that name, or nil.
func (c *Cluster) Group(name string) *Group {
	for i := range c.Groups {
		if c.Groups[i].Name == name {
			return &c.Groups[i]
		}
	}
	return nil
}

// Core is the control plane: the managers (an Auto Scaling group), the
// cluster's network, and (not settings) its bucket, security groups and
// roles.
type Core struct {
	InstanceType string `json:"instanceType,omitempty" yaml:"instanceType,omitempty" name:"instance-type" placeholder:"TYPE" help:"Managers' instance type (default t3.medium)." cfn:"InstanceType"`
	ImageID      string `json:"imageId,omitempty" yaml:"imageId,omitempty" name:"image-id" placeholder:"AMI|PATH" help:"AMI id or SSM parameter path (default: the region's Amazon Linux 2023 for the type's architecture)." unset:"default"`
	KeyName      string `json:"keyName,omitempty" yaml:"keyName,omitempty" name:"key-name" placeholder:"NAME" help:"EC2 key pair of the managers." cfn:"KeyName" unset:"none"`
	SSHCIDR      string `json:"sshCidr,omitempty" yaml:"sshCidr,omitempty" name:"ssh-cidr" placeholder:"CIDR" help:"Open SSH to the managers from this IPv4 CIDR (closed by default)." cfn:"SshCidr" unset:"closed"`
	// AllowSSHFromAnywhere is intent: no parameter carries it, but the
	// check of SSHCIDR reads it, so it is recorded with the stack.
	AllowSSHFromAnywhere bool     `json:"allowSshFromAnywhere,omitempty" yaml:"allowSshFromAnywhere,omitempty" name:"allow-ssh-from-anywhere" help:"Allow --ssh-cidr 0.0.0.0/0: SSH open to the whole internet." unset:"no"`
	VpcID                string   `json:"vpcId,omitempty" yaml:"vpcId,omitempty" name:"vpc-id" placeholder:"VPC" help:"VPC (default: the account's default VPC)." cfn:"VpcId" unset:"default"`
	SubnetIDs            []string `json:"subnetIds,omitempty" yaml:"subnetIds,omitempty" name:"subnet-ids" placeholder:"SUBNET" help:"Subnets, comma-separated; the managers are spread over their zones (default: the VPC's default subnets)." file:"Subnets; the managers are spread over their zones (default: the VPC's default subnets)." cfn:"SubnetIds" unset:"default"`
	// Network is the network (create-network) the core joined: its VPC,
	// its private subnets for the nodes, its public ones for
	// internet-facing load balancers, read from its outputs at creation.
	Network string `json:"network,omitempty" yaml:"network,omitempty" name:"network" placeholder:"NAME" help:"Join the network of this name (clusterctl create-network): nodes in its private subnets, internet-facing load balancers in its public ones (instead of --vpc-id and --subnet-ids)." file:"The network (clusterctl create-network) the cluster runs in: nodes in its private subnets, internet-facing load balancers in its public ones." cfn:"Network" unset:"none"`
	// PublicSubnetIDs are where the groups' internet-facing load balancers
	// go; without them, in the groups' own subnets.
	PublicSubnetIDs []string `json:"publicSubnetIds,omitempty" yaml:"publicSubnetIds,omitempty" name:"public-subnet-ids" placeholder:"SUBNET" help:"Public subnets (a route to an internet gateway), comma-separated, one per zone, for the groups' internet-facing load balancers (default: the network's; without a network, the groups' own subnets)." file:"Public subnets, one per zone, for the groups' internet-facing load balancers (default: the network's; without a network, the groups' own subnets)." cfn:"PublicSubnetIds" unset:"the groups'"`
	VolumeSize      *int     `json:"volumeSize,omitempty" yaml:"volumeSize,omitempty" name:"volume-size" placeholder:"GIB" help:"Root volume size of each manager in GiB (default 20)." cfn:"VolumeSize"`
	// PublicIPs: a node has a public IP only when asked (nodes in public
	// subnets need one to reach AWS and registries); pre-flight refuses
	// public subnets without it.
	PublicIPs bool `json:"publicIps,omitempty" yaml:"publicIps,omitempty" name:"public-ips" negatable:"" help:"Give the managers public IPv4 addresses: needed in public subnets (a default VPC), where nodes reach AWS through an internet gateway (--no-public-ips: none, the default)." file:"Give the managers public IPv4 addresses: needed in public subnets (a default VPC), where nodes reach AWS through an internet gateway (default: none)." cfn:"PublicIps" unset:"none"`
	Managers  *int `json:"managers,omitempty" yaml:"managers,omitempty" name:"managers" placeholder:"N" help:"Number of swarm managers: 1, 3 or 5 (default 1; 3 keeps the swarm through the loss of one)." cfn:"Managers"`
	// Tags are intent: recorded with the template, put on the stack and
	// written into the launch template, so they reach every resource.
	Tags Tags `json:"tags,omitempty" yaml:"tags,omitempty" name:"tags" placeholder:"KEY=VALUE,..." help:"AWS tags key=value[,key=value] on the stack and every resource it makes, instances and volumes included (repeatable; on update-core they replace the previous set)." file:"AWS tags, key: value: on the stack and every resource it makes, instances and volumes included." unset:"none"`
	// The cluster's CloudWatch log group and what ships to it.
	LogRetentionDays *int   `json:"logRetentionDays,omitempty" yaml:"logRetentionDays,omitempty" name:"log-retention-days" placeholder:"DAYS" help:"Days the cluster's log group keeps events: a value CloudWatch allows (1, 3, 5, 7, 14, 30, ... 3653; default 30)." cfn:"LogRetentionDays"`
	LogKMSKey        string `json:"logKmsKey,omitempty" yaml:"logKmsKey,omitempty" name:"log-kms-key" placeholder:"ARN" help:"ARN of a KMS key that encrypts the log group (default: CloudWatch's own encryption)." cfn:"LogKmsKey" unset:"CloudWatch's"`
	LogDriver        string `json:"logDriver,omitempty" yaml:"logDriver,omitempty" name:"log-driver" placeholder:"DRIVER" help:"Log driver of every node's engine: awslogs (default: containers log to the cluster's log group) or none (the engine's own json-file)." cfn:"LogDriver"`
	// EngineVersion pins the Docker Engine of every node, the managers'
	// and the groups' alike: the loader installs exactly that version of
	// the distribution's docker package, so nodes launched months apart
	// run the same engine. Changing it replaces the nodes (upgrade).
	EngineVersion string `json:"engineVersion,omitempty" yaml:"engineVersion,omitempty" name:"engine-version" placeholder:"VERSION" help:"Docker Engine version every node installs, exactly (default 25.0.8, the version this clusterctl is tested with); changing it replaces the nodes (clusterctl upgrade)." file:"Docker Engine version every node installs, exactly (default 25.0.8, the version this clusterctl is tested with)." cfn:"EngineVersion"`
	// Secrets are intent rendered into the template (secrets.go): the
	// managers' permission to read exactly these sources, and the
	// declaration the leader syncs. No flag: `clusterctl secrets` edits
	// them.
	// In a cluster file they are the top-level secrets: list
	// (Cluster.Secrets), not a key of core.
	Secrets Secrets `json:"secrets,omitempty" yaml:"-" jsonschema:"-" kong:"-" help:"Swarm secrets kept in step with AWS (clusterctl secrets add|remove)." unset:"none"`
	// The swarm's health: the core's CloudWatch alarms, and where they
	// notify (render makes it the parameter of its kind).
	Alarms string `json:"alarms,omitempty" yaml:"alarms,omitempty" name:"alarms" placeholder:"on|off" help:"CloudWatch alarms on the swarm's health in the core: on (default) or off." cfn:"Alarms"`
	Notify string `json:"notify,omitempty" yaml:"notify,omitempty" name:"notify" placeholder:"EMAIL|SNS_ARN" help:"Where the alarms send ALARM and OK: an e-mail address (subscribed to an encrypted topic of the core; the recipient confirms) or an existing SNS topic's ARN (default: nowhere; --notify \"\" on update-core stops notifying)." file:"Where the alarms send ALARM and OK: an e-mail address (subscribed to an encrypted topic of the core; the recipient confirms) or an existing SNS topic's ARN." unset:"none"`
	// BackupKeep is how many backups of the swarm the managers keep.
	BackupKeep *int `json:"backupKeep,omitempty" yaml:"backupKeep,omitempty" name:"backup-keep" placeholder:"N" help:"Backups of the swarm the managers keep in the cluster bucket, the newest (1 to 100, default 8)." cfn:"BackupKeep"`
	// Operators may act on the swarm: send requests to the managers'
	// queue, use commands/ in the bucket (docker, shell). Unset, they
	// are the deployed core's, or the principal that creates the core.
	Operators []string `json:"operators,omitempty" yaml:"operators,omitempty" name:"operators" placeholder:"ARN,..." help:"IAM roles and users (ARNs, comma-separated) that may act on the swarm: requests to the managers, docker, shell (default: the role or user creating the core; on update-core the list replaces the previous one)." file:"IAM roles and users (ARNs) that may act on the swarm: requests to the managers, docker, shell (default: the deployed core's, else the role or user creating it)." cfn:"Operators" unset:"none"`
}

// Group is one agent group: an Auto Scaling group of one instance type,
// or of several and of spot instances (a mixed group).
type Group struct {
	Name         string        `json:"name" yaml:"name" short:"n" name:"name" predictor:"group" required:"" placeholder:"GROUP" help:"Group name; the stack is <cluster>-<group>." cfn:"-"`
	InstanceType InstanceTypes `json:"instanceType" yaml:"instanceType" short:"t" name:"instance-type" placeholder:"TYPE,..." help:"Instance type of the nodes; several (comma-separated, in order of preference, one architecture) make a mixed group." file:"Instance type of the nodes, or a list of types (in order of preference, one architecture): a mixed group." cfn:"InstanceType"`

	// Spot and the three settings after it are the group's purchase mix.
	// Without Spot every node is on-demand (the base is 0, the percentage
	// 100, there is no spot allocation) and the three stay unset.
	Spot            bool   `json:"spot,omitempty" yaml:"spot,omitempty" name:"spot" negatable:"" help:"Spot instances, but for the on-demand share below (--no-spot: all on-demand)." file:"Spot instances, but for the on-demand share below (default: all on-demand)." unset:"off"`
	OnDemandBase    *int   `json:"onDemandBase,omitempty" yaml:"onDemandBase,omitempty" name:"on-demand-base" placeholder:"N" help:"With --spot: the first N nodes are on-demand (default 0)." file:"With spot: the first N nodes are on-demand (default 0)." cfn:"OnDemandBaseCapacity" unset:"all on-demand"`
	OnDemandPercent *int   `json:"onDemandPercent,omitempty" yaml:"onDemandPercent,omitempty" name:"on-demand-percent" placeholder:"P" help:"With --spot: percent of the nodes above the base that are on-demand (default 0; 100 without --spot)." file:"With spot: percent of the nodes above the base that are on-demand (default 0; 100 without spot)." cfn:"OnDemandPercentageAboveBaseCapacity" unset:"all on-demand"`
	SpotAllocation  string `json:"spotAllocation,omitempty" yaml:"spotAllocation,omitempty" name:"spot-allocation" placeholder:"STRATEGY" predictor:"spot-allocation" help:"With --spot: how spot capacity is picked: price-capacity-optimized (default), capacity-optimized or lowest-price." file:"With spot: how spot capacity is picked: price-capacity-optimized (default), capacity-optimized or lowest-price." cfn:"SpotAllocationStrategy" unset:"all on-demand"`

	Count      *int     `json:"count,omitempty" yaml:"count,omitempty" short:"c" name:"count" placeholder:"N" help:"Number of nodes, the desired capacity (default 1)." cfn:"DesiredCapacity"`
	Min        *int     `json:"min,omitempty" yaml:"min,omitempty" name:"min" placeholder:"N" help:"Minimum size (default 0)." cfn:"MinSize"`
	Max        *int     `json:"max,omitempty" yaml:"max,omitempty" name:"max" placeholder:"N" help:"Maximum size (default: the count + 1, room for a rolling update to keep capacity)." cfn:"MaxSize"`
	Labels     Labels   `json:"labels,omitempty" yaml:"labels,omitempty" short:"m" name:"labels" placeholder:"KEY=VALUE,..." help:"Labels key=value[,key=value] (repeatable; on update-group they replace the previous set)." file:"Labels, key: value: engine labels on the nodes and tags on their instances." unset:"none"`
	ImageID    string   `json:"imageId,omitempty" yaml:"imageId,omitempty" name:"image-id" placeholder:"AMI|PATH" help:"AMI id or SSM parameter path (default: Amazon Linux 2023 for the type's architecture)." unset:"default"`
	VolumeSize *int     `json:"volumeSize,omitempty" yaml:"volumeSize,omitempty" name:"volume-size" placeholder:"GIB" help:"Root volume size in GiB (default 30)." cfn:"VolumeSize"`
	SubnetIDs  []string `json:"subnetIds,omitempty" yaml:"subnetIds,omitempty" name:"subnet-ids" placeholder:"SUBNET" help:"Subnets, comma-separated (default: the core's)." file:"Subnets (default: the core's)." unset:"the core's"`
	SSHCIDR    string   `json:"sshCidr,omitempty" yaml:"sshCidr,omitempty" name:"ssh-cidr" placeholder:"CIDR" help:"Open SSH to the group's nodes from this IPv4 CIDR (closed by default)." cfn:"SshCidr" unset:"closed"`
	KeyName    string   `json:"keyName,omitempty" yaml:"keyName,omitempty" name:"key-name" placeholder:"NAME" help:"EC2 key pair of the group's nodes." cfn:"KeyName" unset:"none"`
	// PublicIPs: see Core.
	PublicIPs bool `json:"publicIps,omitempty" yaml:"publicIps,omitempty" name:"public-ips" negatable:"" help:"Give the group's nodes public IPv4 addresses: needed in public subnets (a default VPC), where nodes reach AWS through an internet gateway (--no-public-ips: none, the default)." file:"Give the group's nodes public IPv4 addresses: needed in public subnets (a default VPC), where nodes reach AWS through an internet gateway (default: none)." cfn:"PublicIps" unset:"none"`
	// AllowSSHFromAnywhere: see Core.
	AllowSSHFromAnywhere bool `json:"allowSshFromAnywhere,omitempty" yaml:"allowSshFromAnywhere,omitempty" name:"allow-ssh-from-anywhere" help:"Allow --ssh-cidr 0.0.0.0/0: SSH open to the whole internet." unset:"no"`

	// The group's load balancer (publish.go): present when ports are
	// published; the other settings mean nothing without them.
	Publish             Ports    `json:"publish,omitempty" yaml:"publish,omitempty" name:"publish" placeholder:"PORT[:NODEPORT][/tcp|udp|tls],..." help:"Put a Network Load Balancer in front of the group with a listener per port, forwarding to the node port (default: the port); tls ends TLS at the load balancer (--publish \"\" on update-group removes it)." file:"Ports a Network Load Balancer in front of the group listens on, each PORT[:NODEPORT][/tcp|udp|tls], forwarded to the node port (default: the port); tls ends TLS at the load balancer." unset:"none"`
	LoadBalancer        string   `json:"loadBalancer,omitempty" yaml:"loadBalancer,omitempty" name:"load-balancer" placeholder:"SCHEME" help:"With --publish: internet-facing (default) or internal." file:"With publish: internet-facing (default) or internal." cfn:"LoadBalancerScheme" unset:"none"`
	AllowFrom           []string `json:"allowFrom,omitempty" yaml:"allowFrom,omitempty" name:"allow-from" placeholder:"CIDR" help:"With --publish: IPv4 CIDRs allowed to connect, comma-separated (default: anywhere for internet-facing, the VPC's CIDR for internal)." file:"With publish: IPv4 CIDRs allowed to connect (default: anywhere for internet-facing, the VPC's CIDR for internal)." unset:"default"`
	Certificate         string   `json:"certificate,omitempty" yaml:"certificate,omitempty" name:"certificate" placeholder:"ACM_ARN" help:"With tls ports: the ACM certificate the load balancer ends TLS with." file:"With tls ports: the ACM certificate the load balancer ends TLS with." cfn:"CertificateArn" unset:"none"`
	DeregistrationDelay *int     `json:"deregistrationDelay,omitempty" yaml:"deregistrationDelay,omitempty" name:"deregistration-delay" placeholder:"SECONDS" help:"With --publish: seconds a node leaving the load balancer keeps its connections before its drain starts (default 30)." file:"With publish: seconds a node leaving the load balancer keeps its connections before its drain starts (default 30)." cfn:"DeregistrationDelay" unset:"none"`
	AccessLogs          string   `json:"accessLogs,omitempty" yaml:"accessLogs,omitempty" name:"access-logs" placeholder:"BUCKET" help:"With --publish: S3 bucket the load balancer writes its access logs to (off by default)." file:"With publish: S3 bucket the load balancer writes its access logs to (off by default)." cfn:"AccessLogsBucket" unset:"off"`

	RollingUpdate RollingUpdate `json:"rollingUpdate,omitzero" yaml:"rollingUpdate,omitempty" embed:"" file:"How an update that changes the nodes replaces them."`
	// Autoscale: see autoscale.go.
	Autoscale Autoscale `json:"autoscale,omitzero" yaml:"autoscale,omitempty" embed:"" file:"The managers grow and shrink the group with the swarm's work, between min and max."`
	// Tags: see Core.
	Tags Tags `json:"tags,omitempty" yaml:"tags,omitempty" name:"tags" placeholder:"KEY=VALUE,..." help:"AWS tags key=value[,key=value] on the group's stack and every resource it makes, instances and volumes included (repeatable; on update-group they replace the previous set)." file:"AWS tags, key: value: on the group's stack and every resource it makes, instances and volumes included." unset:"none"`
}

// RollingUpdate shapes how an update that changes the nodes replaces them.
// Left unset it keeps the group's capacity: one node at a time, every node
// in service (as far as CloudFormation allows: fewer than the max size).
type RollingUpdate struct {
	MaxBatch     *int `json:"maxBatch,omitempty" yaml:"maxBatch,omitempty" name:"max-batch" placeholder:"N" help:"Rolling update: nodes replaced at a time (default 1)." unset:"default"`
	MinInService *int `json:"minInService,omitempty" yaml:"minInService,omitempty" name:"min-in-service" placeholder:"N" help:"Rolling update: nodes kept in service while replacing (default: all, up to max - 1)." unset:"default"`
}

// Default fills in every setting left out that has a fixed default, in the
// core and in every group.
func (c *Cluster) Default() {
	if c.Network != nil {
		c.Network.Default()
		if c.Core.Network == "" {
			c.Core.Network = c.Network.Name
		}
	}
	c.Core.Default()
	for i := range c.Groups {
		c.Groups[i].Default()
	}
}

// Default fills in the core's defaults.
func (c *Core) Default() {
	c.InstanceType = c.Type()
	c.VolumeSize = ptr(c.Volume())
	c.Managers = ptr(c.ManagerCount())
	c.SubnetIDs = nilIfEmpty(c.SubnetIDs)
	c.PublicSubnetIDs = nilIfEmpty(c.PublicSubnetIDs)
	if len(c.Tags) == 0 {
		c.Tags = nil
	}
	c.LogRetentionDays = ptr(c.LogRetention())
	c.LogDriver = c.Logging()
	c.EngineVersion = c.Engine()
	c.BackupKeep = ptr(c.Backups())
	if len(c.Secrets) == 0 {
		c.Secrets = nil
	}
	c.Alarms = c.AlarmsSetting()
}

// AlarmsSetting is on or off, defaulted.
func (c Core) AlarmsSetting() string {
	if c.Alarms == "" {
		return DefaultAlarms
	}
	return c.Alarms
}

// Backups is how many backups of the swarm the managers keep, defaulted.
func (c Core) Backups() int { return orDefault(c.BackupKeep, DefaultBackupKeep) }

// LogRetention is how many days the log group keeps events, defaulted.
func (c Core) LogRetention() int { return orDefault(c.LogRetentionDays, DefaultLogRetentionDays) }

// Logging is the engines' log driver, defaulted.
func (c Core) Logging() string {
	if c.LogDriver == "" {
		return DefaultLogDriver
	}
	return c.LogDriver
}

// Engine is the nodes' Docker Engine version, defaulted.
func (c Core) Engine() string {
	if c.EngineVersion == "" {
		return DefaultEngineVersion
	}
	return c.EngineVersion
}

// ManagerCount is the number of swarm managers, defaulted.
func (c Core) ManagerCount() int { return orDefault(c.Managers, DefaultManagers) }

// Type is the managers' instance type, defaulted.
func (c Core) Type() string {
	if c.InstanceType == "" {
		return DefaultCoreInstanceType
	}
	return c.InstanceType
}

// Volume is each manager's root volume size in GiB, defaulted.
func (c Core) Volume() int { return orDefault(c.VolumeSize, DefaultCoreVolumeSize) }

// Default fills in the group's defaults. What is resolved at render time
// (image, subnets, rolling update) stays unset, so that it follows what it
// depends on: the default image the instance type, the subnets the core.
func (g *Group) Default() {
	g.Count = ptr(g.Desired())
	g.Min = ptr(g.MinSize())
	g.Max = ptr(g.MaxSize())
	g.VolumeSize = ptr(g.Volume())
	if g.Spot {
		// Without spot the mix is fixed (all on-demand) and stays unset.
		g.OnDemandBase = ptr(g.OnDemandBaseCapacity())
		g.OnDemandPercent = ptr(g.OnDemandPercentage())
		g.SpotAllocation = g.SpotAllocationStrategy()
	}
	if len(g.InstanceType) == 0 {
		g.InstanceType = nil
	}
	if len(g.Labels) == 0 {
		g.Labels = nil
	}
	if len(g.Tags) == 0 {
		g.Tags = nil
	}
	g.SubnetIDs = nilIfEmpty(g.SubnetIDs)
	g.Publish = g.Publish.canonical()
	g.AllowFrom = nilIfEmpty(g.AllowFrom)
	if g.Published() {
		// Without a load balancer its settings stay unset.
		g.LoadBalancer = g.Scheme()
		g.DeregistrationDelay = ptr(g.Deregistration())
	}
}

// Mixed tells whether the group needs a mixed instances policy: several
// instance types, or spot.
func (g Group) Mixed() bool { return len(g.InstanceType) > 1 || g.Spot }

// OnDemandBaseCapacity is how many nodes are on-demand before any is spot,
// defaulted.
func (g Group) OnDemandBaseCapacity() int { return orDefault(g.OnDemandBase, DefaultSpotOnDemandBase) }

// OnDemandPercentage is the percent of the nodes above the base that are
// on-demand, defaulted: all of them without spot.
func (g Group) OnDemandPercentage() int {
	return orDefault(g.OnDemandPercent, g.defaultOnDemandPercent())
}

func (g Group) defaultOnDemandPercent() int {
	if g.Spot {
		return DefaultSpotOnDemandPercent
	}
	return onDemandOnlyPercent
}

// SpotAllocationStrategy is how spot capacity is picked, defaulted; ""
// without spot.
func (g Group) SpotAllocationStrategy() string {
	if g.Spot && g.SpotAllocation == "" {
		return DefaultSpotAllocation
	}
	return g.SpotAllocation
}

// Trim leaves out what Default would fill in again, in the core and in
// every group: a spec read from a deployed cluster then says only what was
// chosen (export writes it so), and a count edited in it moves the default
// max along as on the command line. Default after Trim gives the same spec.
func (c *Cluster) Trim() {
	c.Core.Trim()
	for i := range c.Groups {
		c.Groups[i].Trim()
	}
}

// Trim leaves out the core's settings at their default. The instance type
// stays: it is the first thing a reader of the file asks.
func (c *Core) Trim() {
	if c.Volume() == DefaultCoreVolumeSize {
		c.VolumeSize = nil
	}
	if c.ManagerCount() == DefaultManagers {
		c.Managers = nil
	}
	if c.LogRetention() == DefaultLogRetentionDays {
		c.LogRetentionDays = nil
	}
	if c.Logging() == DefaultLogDriver {
		c.LogDriver = ""
	}
	if c.Engine() == DefaultEngineVersion {
		c.EngineVersion = ""
	}
	if c.AlarmsSetting() == DefaultAlarms {
		c.Alarms = ""
	}
	if c.Backups() == DefaultBackupKeep {
		c.BackupKeep = nil
	}
}

// Trim leaves out the group's settings at their default. The count stays:
// it is the first thing a reader of the file asks, and the max's default
// follows it.
func (g *Group) Trim() {
	if g.Autoscale.Enabled {
		g.Count = nil // it follows the min
	} else if g.Count == nil {
		g.Count = ptr(g.Desired())
	}
	if g.MaxSize() == g.Desired()+1 {
		g.Max = nil
	}
	if g.MinSize() == DefaultMin {
		g.Min = nil
	}
	if g.Volume() == DefaultVolumeSize {
		g.VolumeSize = nil
	}
	// The purchase mix at the defaults of its kind (spot or not).
	if g.OnDemandBaseCapacity() == DefaultSpotOnDemandBase {
		g.OnDemandBase = nil
	}
	if g.OnDemandPercentage() == g.defaultOnDemandPercent() {
		g.OnDemandPercent = nil
	}
	if g.SpotAllocationStrategy() == DefaultSpotAllocation {
		g.SpotAllocation = ""
	}
	if g.LoadBalancer == SchemeInternetFacing {
		g.LoadBalancer = ""
	}
	if g.Deregistration() == DefaultDeregistrationDelay {
		g.DeregistrationDelay = nil
	}
}

// Desired is the group's desired capacity, defaulted.
func (g Group) Desired() int {
	if g.Count == nil && g.Autoscale.Enabled {
		// The autoscaler sets the live capacity; the stack's follows the min.
		return g.MinSize()
	}
	return orDefault(g.Count, DefaultCount)
}

// MinSize is the group's minimum size, defaulted.
func (g Group) MinSize() int { return orDefault(g.Min, DefaultMin) }

// MaxSize is the group's maximum size, defaulted: one node of headroom
// above the count lets a rolling update start a replacement before it
// stops a node, so the group keeps its capacity.
func (g Group) MaxSize() int { return orDefault(g.Max, g.Desired()+1) }

// Volume is the root volume size in GiB, defaulted.
func (g Group) Volume() int { return orDefault(g.VolumeSize, DefaultVolumeSize) }

// MaxBatchSize is how many nodes a rolling update replaces at a time.
func (g Group) MaxBatchSize() int { return orDefault(g.RollingUpdate.MaxBatch, DefaultMaxBatch) }

// MinInstancesInService is how many nodes a rolling update keeps in
// service: by default every node, as far as CloudFormation allows
// (MinInstancesInService must be below MaxSize). It is computed, not
// stored, so that it follows the count.
func (g Group) MinInstancesInService() int {
	return orDefault(g.RollingUpdate.MinInService, max(0, min(g.Desired(), g.MaxSize()-1)))
}

// Update returns g with the settings at the given paths (as Fields names
// them) taken from changes: what update-group does with the flags given.
// A count that grows to the max or shrinks under the min without a new
// max or min moves that bound along (keeping a node of headroom above),
// and turning spot on or off starts the purchase mix afresh from the
// defaults of the new kind but for what is given, as an operator would
// expect.
func (g Group) Update(changes Group, given []string) Group {
	out := g
	out.InstanceType = slices.Clone(g.InstanceType)
	out.Labels = cloneLabels(g.Labels)
	out.Tags = cloneTags(g.Tags)
	out.SubnetIDs = slices.Clone(g.SubnetIDs)
	out.Publish = slices.Clone(g.Publish)
	out.AllowFrom = slices.Clone(g.AllowFrom)
	overlay(&out, &changes, given)
	// Publishing nothing removes the load balancer and its settings with
	// it, but for those given.
	if slices.Contains(given, "publish") && !out.Published() {
		for _, path := range lbSettings {
			if !slices.Contains(given, path) {
				fieldAt(&out, path).Value.SetZero()
			}
		}
	}
	if slices.Contains(given, "spot") && out.Spot != g.Spot {
		for path, reset := range map[string]func(){
			"onDemandBase":    func() { out.OnDemandBase = nil },
			"onDemandPercent": func() { out.OnDemandPercent = nil },
			"spotAllocation":  func() { out.SpotAllocation = "" },
		} {
			if !slices.Contains(given, path) {
				reset()
			}
		}
	}
	// An autoscaled group's count follows its min, unless one is given
	// (which validation refuses but for the min itself).
	if out.Autoscale.Enabled && !slices.Contains(given, "count") {
		out.Count = nil
	}
	if !out.Autoscale.Enabled {
		out.Autoscale.ScaleDownAfter = 0
	}
	if slices.Contains(given, "count") {
		if !slices.Contains(given, "max") && out.Desired() >= out.MaxSize() {
			out.Max = ptr(out.Desired() + 1)
		}
		if !slices.Contains(given, "min") && out.Desired() < out.MinSize() {
			out.Min = ptr(out.Desired())
		}
	}
	return out
}

// Update returns c with the settings at the given paths (as Fields names
// them) taken from changes: what update-core does with the flags given.
func (c Core) Update(changes Core, given []string) Core {
	out := c
	out.SubnetIDs = slices.Clone(c.SubnetIDs)
	out.PublicSubnetIDs = slices.Clone(c.PublicSubnetIDs)
	out.Tags = cloneTags(c.Tags)
	out.Secrets = slices.Clone(c.Secrets)
	out.Operators = slices.Clone(c.Operators)
	overlay(&out, &changes, given)
	return out
}

func ptr(n int) *int { return &n }

func orDefault(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// FileForm is c as a cluster file states it: the core's secrets as the
// top-level secrets: list.
func (c Cluster) FileForm() Cluster {
	if len(c.Core.Secrets) > 0 {
		c.Secrets, c.Core.Secrets = c.Core.Secrets, nil
	}
	// The network declared says which the core joins.
	if c.Network != nil && c.Core.Network == c.Network.Name {
		c.Core.Network = ""
	}
	return c
}
