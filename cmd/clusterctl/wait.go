package main

import (
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/internal/stacks"
)

// nothingInProgress is wait's line when every stack it looked at was
// already settled: what each is, rather than a result "after 0s" of an
// operation that never was; "" when one was in progress.
func nothingInProgress(sts []*stacks.Stack, clusterName, group string) string {
	var states []string
	for _, st := range sts {
		if st == nil || !st.Settled {
			return ""
		}
		states = append(states, st.Name+" is "+st.Status)
	}
	what := "cluster " + clusterName
	if group != "" {
		what = "group " + group + " of cluster " + clusterName
	}
	return fmt.Sprintf("Nothing in progress on %s: %s", what, strings.Join(states, ", "))
}
