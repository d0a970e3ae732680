package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
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
// otherwise names every missing (or empty) output. Other outputs are
// ignored.
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
	for _, s := range strings.Split(get(names.OutputSubnetIDs), ",") {
		if s = strings.TrimSpace(s); s != "" {
			j.SubnetIds = append(j.SubnetIds, s)
		}
	}
	return j, nil
}
