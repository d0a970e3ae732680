package render

import (
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
)

// Join is the core's join contract: the outputs an agent group consumes, as
// parameters of the same names.
type Join struct {
	ClusterName, BucketName, ControlPrivateIp, ControlSecurityGroupId, AgentSecurityGroupId string
	// AgentInstanceProfile is the ARN of the agents' instance profile; the
	// group's launch template passes it as IamInstanceProfile.Arn.
	AgentInstanceProfile string
	VpcId                string
	SubnetIds            []string
	ContractVersion      string
}

// Outputs returns j as the core's outputs (and so the group's join
// parameters), SubnetIds comma-separated. It is the inverse of
// JoinFromOutputs, which lets callers compare a group's parameters with the
// core's current outputs.
func (j Join) Outputs() map[string]string {
	return map[string]string{
		names.OutputClusterName:            j.ClusterName,
		names.OutputBucketName:             j.BucketName,
		names.OutputControlPrivateIP:       j.ControlPrivateIp,
		names.OutputControlSecurityGroupID: j.ControlSecurityGroupId,
		names.OutputAgentSecurityGroupID:   j.AgentSecurityGroupId,
		names.OutputAgentInstanceProfile:   j.AgentInstanceProfile,
		names.OutputVpcID:                  j.VpcId,
		names.OutputSubnetIDs:              strings.Join(j.SubnetIds, ","),
		names.OutputContractVersion:        j.ContractVersion,
	}
}

// JoinFromOutputs reads the join contract from a core stack's outputs; the
// error names every missing (or empty) output. Other outputs are ignored.
func JoinFromOutputs(outputs map[string]string) (Join, error) {
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
		ControlPrivateIp:       get(names.OutputControlPrivateIP),
		ControlSecurityGroupId: get(names.OutputControlSecurityGroupID),
		AgentSecurityGroupId:   get(names.OutputAgentSecurityGroupID),
		AgentInstanceProfile:   get(names.OutputAgentInstanceProfile),
		VpcId:                  get(names.OutputVpcID),
		ContractVersion:        get(names.OutputContractVersion),
	}
	for _, s := range strings.Split(get(names.OutputSubnetIDs), ",") {
		if s = strings.TrimSpace(s); s != "" {
			j.SubnetIds = append(j.SubnetIds, s)
		}
	}
	return j, nil
}
