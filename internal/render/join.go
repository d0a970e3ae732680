package render

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// Join is the core's join contract: the outputs an agent group consumes, as
// parameters of the same names.
type Join struct {
	ClusterName, BucketName, ControlSecurityGroupId, AgentSecurityGroupId string
	// AgentInstanceProfile is the ARN of the agents' instance profile; the
	// group's launch template passes it as IamInstanceProfile.Arn.
	AgentInstanceProfile string
	VpcId                string
	SubnetIds            []string
	// ManagersKey is the bucket key of the live managers' addresses.
	ManagersKey     string
	ContractVersion string
	// VpcCidr is no core output: the VPC's CIDR as EC2 says it, who may
	// connect to a group's internal load balancer by default. Only a
	// group with such a load balancer needs it.
	VpcCidr string
	// LogGroupName and LogDriver are the cluster's log group and its
	// engines' log driver: not part of the contract (no group parameter
	// carries them), they reach the node configuration. Empty for a core
	// that has no log group yet: its nodes keep the engine's own logs.
	LogGroupName, LogDriver string
	// EngineVersion is the Docker Engine version of the cluster's nodes:
	// not part of the contract either, it reaches the node configuration;
	// empty for a core that predates the setting (its nodes install the
	// distribution's current docker).
	EngineVersion string
	// PublicSubnetIds are the core's public subnets (its network's, or
	// given): where an internet-facing load balancer goes. Not part of the
	// contract (no group parameter of that name): empty for a core
	// without them, whose groups' load balancers take the groups' subnets.
	PublicSubnetIds []string
}

// Outputs returns j as the core's outputs (and so the group's join
// parameters), SubnetIds comma-separated. It is the inverse of
// JoinFromOutputs, which lets callers compare a group's parameters with the
// core's current outputs.
func (j Join) Outputs() map[string]string {
	return map[string]string{
		names.OutputClusterName:            j.ClusterName,
		names.OutputBucketName:             j.BucketName,
		names.OutputControlSecurityGroupID: j.ControlSecurityGroupId,
		names.OutputAgentSecurityGroupID:   j.AgentSecurityGroupId,
		names.OutputAgentInstanceProfile:   j.AgentInstanceProfile,
		names.OutputVpcID:                  j.VpcId,
		names.OutputSubnetIDs:              strings.Join(j.SubnetIds, ","),
		names.OutputManagersKey:            j.ManagersKey,
		names.OutputContractVersion:        j.ContractVersion,
	}
}

// ContractError is a core whose join contract is not the one this
// clusterctl renders groups for.
type ContractError struct{ Core, Want string }

func (e *ContractError) Error() string {
	return fmt.Sprintf("core has join contract version %s, this clusterctl needs %s", e.Core, e.Want)
}

// Older reports whether the core's contract is older than this
// clusterctl's (and so can be upgraded by it).
func (e *ContractError) Older() bool { return ContractOlder(e.Core, e.Want) }

// ContractOlder reports whether contract version a is older than b.
func ContractOlder(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	return errA == nil && errB == nil && x < y
}

// JoinFromOutputs reads the join contract from a core stack's outputs; the
// error is a *ContractError for a core of another contract version, and
// otherwise names every missing (or empty) output, or the first whose value
// does not have the shape of what it names. Other outputs are ignored.
//
// The values reach the groups' parameters and every node: the bucket's
// name its loader (root shell code), the others its settings. Anyone
// allowed to update the core stack could put shell code in an output.
// Checking each value's shape here is what keeps that out; the template's
// patterns and the node agent check again.
func JoinFromOutputs(outputs map[string]string) (Join, error) {
	if v := strings.TrimSpace(outputs[names.OutputContractVersion]); v != "" && v != ContractVersion {
		return Join{}, &ContractError{Core: v, Want: ContractVersion}
	}
	var missing []string
	for _, name := range names.JoinOutputs() {
		if strings.TrimSpace(outputs[name]) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return Join{}, fmt.Errorf("core outputs missing: %s", strings.Join(missing, ", "))
	}
	get := func(name string) string { return strings.TrimSpace(outputs[name]) }
	j := Join{
		ClusterName:            get(names.OutputClusterName),
		BucketName:             get(names.OutputBucketName),
		ControlSecurityGroupId: get(names.OutputControlSecurityGroupID),
		AgentSecurityGroupId:   get(names.OutputAgentSecurityGroupID),
		AgentInstanceProfile:   get(names.OutputAgentInstanceProfile),
		VpcId:                  get(names.OutputVpcID),
		ManagersKey:            get(names.OutputManagersKey),
		ContractVersion:        get(names.OutputContractVersion),
	}
	// Both or neither: a log group without a driver says nothing of what
	// the engines should do with it.
	if g, d := get(names.OutputLogGroupName), get(names.OutputLogDriver); g != "" && d != "" {
		j.LogGroupName, j.LogDriver = g, d
	}
	j.EngineVersion = get(names.OutputEngineVersion)
	for _, s := range strings.Split(get(names.OutputSubnetIDs), ",") {
		if s = strings.TrimSpace(s); s != "" {
			j.SubnetIds = append(j.SubnetIds, s)
		}
	}
	// An empty list may read back in CloudFormation's list form ([''] on
	// moto): no public subnet, not a malformed one.
	j.PublicSubnetIds = spec.SplitList(get(names.OutputCorePublicSubnet))
	return j, j.check()
}

// The shapes of the join values (AWS's documented formats); the cluster's
// name is spec's. The longest are bounded by length apart (maxBucketKey,
// ...): a counted repetition such as {0,1000} compiles to a state per
// count, which every start of clusterctl paid.
var (
	bucketNameRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	securityGroupRE   = regexp.MustCompile(`^sg-[0-9a-f]{8,17}$`)
	instanceProfileRE = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:instance-profile/([a-zA-Z0-9+=,.@_/-]+)$`)
	vpcIDRE           = regexp.MustCompile(`^vpc-[0-9a-f]{8,17}$`)
	subnetIDRE        = regexp.MustCompile(`^subnet-[0-9a-f]{8,17}$`)
	contractRE        = regexp.MustCompile(`^[0-9]{1,6}$`)
	bucketKeyRE       = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9/._-]*$`)
)

// The bounds of the join values' lengths, in characters (each shape is
// ASCII): an instance profile's path and name, a key.
const (
	maxProfilePathName = 512
	maxBucketKey       = 1001
)

// validProfileARN reports whether s is an instance profile's ARN.
func validProfileARN(s string) bool {
	m := instanceProfileRE.FindStringSubmatch(s)
	return m != nil && len(m[1]) <= maxProfilePathName
}

// OutputError is a join-contract output whose value does not have the
// shape of what it names.
type OutputError struct {
	Output, Value, Want string
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("core output %s is %q, not %s", e.Output, e.Value, e.Want)
}

// check checks every value of the contract by its shape.
func (j Join) check() error {
	checks := []struct {
		output, value, want string
		ok                  bool
	}{
		{names.OutputClusterName, j.ClusterName, "a cluster name", spec.CheckClusterName(j.ClusterName) == nil},
		{names.OutputBucketName, j.BucketName, "an S3 bucket name", bucketNameRE.MatchString(j.BucketName)},
		{names.OutputManagersKey, j.ManagersKey, "a bucket key", len(j.ManagersKey) <= maxBucketKey && bucketKeyRE.MatchString(j.ManagersKey)},
		{names.OutputControlSecurityGroupID, j.ControlSecurityGroupId, "a security group id", securityGroupRE.MatchString(j.ControlSecurityGroupId)},
		{names.OutputAgentSecurityGroupID, j.AgentSecurityGroupId, "a security group id", securityGroupRE.MatchString(j.AgentSecurityGroupId)},
		{names.OutputAgentInstanceProfile, j.AgentInstanceProfile, "an instance profile ARN", validProfileARN(j.AgentInstanceProfile)},
		{names.OutputVpcID, j.VpcId, "a VPC id", vpcIDRE.MatchString(j.VpcId)},
		{names.OutputContractVersion, j.ContractVersion, "a contract version number", contractRE.MatchString(j.ContractVersion)},
		{names.OutputLogGroupName, j.LogGroupName, "the cluster's log group", j.LogGroupName == "" || j.LogGroupName == names.LogGroup(j.ClusterName)},
		{names.OutputLogDriver, j.LogDriver, "a log driver", j.LogDriver == "" || j.LogDriver == names.LogDriverAWSLogs || j.LogDriver == names.LogDriverNone},
		{names.OutputEngineVersion, j.EngineVersion, "a Docker Engine version", j.EngineVersion == "" || spec.EngineVersionRE.MatchString(j.EngineVersion)},
	}
	for _, c := range checks {
		if !c.ok {
			return &OutputError{Output: c.output, Value: c.value, Want: c.want}
		}
	}
	for _, id := range j.SubnetIds {
		if !subnetIDRE.MatchString(id) {
			return &OutputError{Output: names.OutputSubnetIDs, Value: strings.Join(j.SubnetIds, ","), Want: "a list of subnet ids"}
		}
	}
	for _, id := range j.PublicSubnetIds {
		if !subnetIDRE.MatchString(id) {
			return &OutputError{Output: names.OutputCorePublicSubnet, Value: strings.Join(j.PublicSubnetIds, ","), Want: "a list of subnet ids"}
		}
	}
	return nil
}
