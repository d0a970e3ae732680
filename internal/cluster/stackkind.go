package cluster

import (
	"fmt"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// stackKind says what a stack is, by its name and ownership tags, for a
// refusal that names it: "the core of cluster lab-x", "group auto of
// cluster core", or why it is not clusterctl's.
func stackKind(st *stacks.Stack) string {
	role, conflict := query.Ownership(*st)
	switch {
	case conflict != nil:
		return "not clusterctl's: " + conflict.Reason
	case role == names.RoleCore:
		return fmt.Sprintf("the core of cluster %s", st.Tags[names.TagCluster])
	case role == names.RoleAgents:
		return fmt.Sprintf("group %s of cluster %s", st.Tags[names.TagGroup], st.Tags[names.TagCluster])
	}
	return "not clusterctl's (it carries no clusterctl tags)"
}

// isCoreOf tells whether st is the core stack of cluster by its tags.
func isCoreOf(st *stacks.Stack, cluster string) bool {
	role, conflict := query.Ownership(*st)
	return conflict == nil && role == names.RoleCore && st.Tags[names.TagCluster] == cluster
}

// isGroupOf tells whether st is the stack of group of cluster by its tags.
func isGroupOf(st *stacks.Stack, cluster, group string) bool {
	role, conflict := query.Ownership(*st)
	return conflict == nil && role == names.RoleAgents && st.Tags[names.TagCluster] == cluster && st.Tags[names.TagGroup] == group
}
