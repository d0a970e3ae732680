package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
)

// ssmAgentSid is the statement of each node role that the Systems Manager
// agent uses.
const ssmAgentSid = "RunCommandAndSessionManager"

// What the Systems Manager agent needs for Run Command (ec2messages) and
// Session Manager (ssmmessages), and to register the node; nothing more.
var ssmAgentActions = []string{
	"ssm:UpdateInstanceInformation",
	"ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel", "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel",
	"ec2messages:AcknowledgeMessage", "ec2messages:DeleteMessage", "ec2messages:FailMessage", "ec2messages:GetEndpoint", "ec2messages:GetMessages", "ec2messages:SendReply",
}

// TestNodeRolesSystemsManager checks that both node roles get the Systems
// Manager agent's channels from a policy of their own, and no managed
// policy: AmazonSSMManagedInstanceCore allows ssm:GetParameter(s) on every
// parameter of the account. No node role may read Parameter Store or use
// a wildcard action.
func TestNodeRolesSystemsManager(t *testing.T) {
	for _, v := range variants() {
		if v.core == nil {
			continue
		}
		r, err := v.render()
		if err != nil {
			t.Fatal(err)
		}
		res := obj(decode(t, r.Template)["Resources"])
		for _, role := range []string{"ControlRole", "AgentRole"} {
			if arns := dig(res, role, "Properties", "ManagedPolicyArns"); arns != nil {
				t.Errorf("%s: %s carries managed policies %v", v.name, role, arns)
			}
			found := 0
			for _, st := range append(roleStatements(res, role), policyStatements(res, role)...) {
				var acts []string
				for _, a := range strs(t, st["Action"]) {
					acts = append(acts, a)
					if strings.Contains(a, "*") || strings.HasPrefix(a, "ssm:Describe") {
						t.Errorf("%s: %s may %s", v.name, role, a)
					}
					// Parameter Store only for named parameters (the
					// secrets declaration and the declared secrets).
					if strings.HasPrefix(a, "ssm:GetParameter") && !namedParameters(st["Resource"]) {
						t.Errorf("%s: %s may %s on %v", v.name, role, a, st["Resource"])
					}
				}
				if st["Sid"] != ssmAgentSid {
					continue
				}
				found++
				if !slices.Equal(acts, ssmAgentActions) || st["Effect"] != "Allow" || st["Condition"] != nil {
					t.Errorf("%s: %s Systems Manager statement %v", v.name, role, st)
				}
			}
			if found != 1 {
				t.Errorf("%s: %s has %d Systems Manager statements, want 1", v.name, role, found)
			}
		}
		// The managers describe their own cluster's group stacks only: a
		// name prefix alone also covers another cluster named
		// <cluster>-<something> and its groups.
		described := false
		for _, st := range roleStatements(res, "ControlRole") {
			if st["Action"] != "cloudformation:DescribeStacks" {
				continue
			}
			described = true
			want := map[string]any{"StringEquals": map[string]any{"aws:ResourceTag/" + names.TagCluster: v.cluster, "aws:ResourceTag/" + names.TagRole: names.RoleAgents}}
			if !jsonEqual(st["Condition"], want) {
				t.Errorf("%s: the managers describe stacks %v under %v", v.name, st["Resource"], st["Condition"])
			}
		}
		if !described {
			t.Errorf("%s: the managers may not read their group stacks", v.name)
		}
	}
}

// policyStatements returns the statements of the AWS::IAM::Policy
// resources attached to role.
func policyStatements(res map[string]any, role string) []map[string]any {
	var out []map[string]any
	for _, p := range resourcesOfType(res, "AWS::IAM::Policy") {
		attached := false
		for _, r := range list(dig(p, "Properties", "Roles")) {
			attached = attached || fmt.Sprint(dig(r, "Ref")) == role
		}
		if !attached {
			continue
		}
		for _, s := range list(dig(p, "Properties", "PolicyDocument", "Statement")) {
			out = append(out, obj(s))
		}
	}
	return out
}

// namedParameters says whether a statement's resources are all named
// Parameter Store parameters: no wildcard, no path of parameters.
func namedParameters(res any) bool {
	var l []any
	switch r := res.(type) {
	case []any:
		l = r
	default:
		l = []any{r}
	}
	if len(l) == 0 {
		return false
	}
	for _, r := range l {
		b, _ := json.Marshal(r)
		s := string(b)
		if strings.Contains(s, "*") || !strings.Contains(s, ":parameter/") {
			return false
		}
	}
	return true
}
