package render

import (
	"fmt"
	"strings"
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

// JoinOutputNames returns the names of the join-contract outputs, in the
// order the contract lists them.
func JoinOutputNames() []string {
	return []string{
		"ClusterName", "BucketName", "ControlPrivateIp", "ControlSecurityGroupId",
		"AgentSecurityGroupId", "AgentInstanceProfile", "VpcId", "SubnetIds", "ContractVersion",
	}
}

// Outputs returns j as the core's outputs (and so the group's join
// parameters), SubnetIds comma-separated. It is the inverse of
// JoinFromOutputs, which lets callers compare a group's parameters with the
// core's current outputs.
func (j Join) Outputs() map[string]string {
	return map[string]string{
		"ClusterName":            j.ClusterName,
		"BucketName":             j.BucketName,
		"ControlPrivateIp":       j.ControlPrivateIp,
		"ControlSecurityGroupId": j.ControlSecurityGroupId,
		"AgentSecurityGroupId":   j.AgentSecurityGroupId,
		"AgentInstanceProfile":   j.AgentInstanceProfile,
		"VpcId":                  j.VpcId,
		"SubnetIds":              strings.Join(j.SubnetIds, ","),
		"ContractVersion":        j.ContractVersion,
	}
}

// JoinFromOutputs reads the join contract from a core stack's outputs; the
// error names every missing (or empty) output. Other outputs are ignored.
func JoinFromOutputs(outputs map[string]string) (Join, error) {
	var missing []string
	for _, name := range JoinOutputNames() {
		if strings.TrimSpace(outputs[name]) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return Join{}, fmt.Errorf("core outputs missing: %s", strings.Join(missing, ", "))
	}
	get := func(name string) string { return strings.TrimSpace(outputs[name]) }
	j := Join{
		ClusterName:            get("ClusterName"),
		BucketName:             get("BucketName"),
		ControlPrivateIp:       get("ControlPrivateIp"),
		ControlSecurityGroupId: get("ControlSecurityGroupId"),
		AgentSecurityGroupId:   get("AgentSecurityGroupId"),
		AgentInstanceProfile:   get("AgentInstanceProfile"),
		VpcId:                  get("VpcId"),
		ContractVersion:        get("ContractVersion"),
	}
	for _, s := range strings.Split(get("SubnetIds"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			j.SubnetIds = append(j.SubnetIds, s)
		}
	}
	return j, nil
}
