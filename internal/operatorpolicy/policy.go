// Package operatorpolicy renders the IAM policy an operator needs to run
// clusterctl: the actions its commands call, and those CloudFormation
// calls with the operator's own permissions to create, update and delete
// the templates' resources (clusterctl passes no service role). Each
// statement is scoped to the cluster's resources where AWS scopes the
// action at all, by the names internal/names and CloudFormation give them,
// and says in its Sid why it is there.
package operatorpolicy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
)

// Scope is what the policy is scoped to. An empty field is any: the
// policy then names it with a wildcard.
type Scope struct {
	Cluster string // the cluster (core stack) name
	Network string // the network (create-network) the cluster's stacks may use
	Region  string
	Account string
}

// Document is an IAM policy document.
type Document struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one statement of a Document; Condition is left out when
// empty.
type Statement struct {
	Sid       string                    `json:"Sid"`
	Effect    string                    `json:"Effect"`
	Action    []string                  `json:"Action"`
	Resource  []string                  `json:"Resource"`
	Condition map[string]map[string]any `json:"Condition,omitempty"`
}

// Encode returns d as indented JSON.
func Encode(d Document) ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the operator policy: %w", err)
	}
	return append(b, '\n'), nil
}

// Build returns the policy of s. The read-only policy holds only what the
// read commands call: no command of it changes anything, and
// CloudFormation creates nothing for it.
func Build(s Scope, readOnly bool) Document {
	deploy := map[string][]string{}
	if !readOnly {
		for _, r := range resourceTypes {
			for _, g := range r.grants {
				deploy[g.sid] = append(deploy[g.sid], g.actions...)
			}
		}
	}
	doc := Document{Version: "2012-10-17"}
	for _, st := range statements {
		actions := slices.Clone(st.reads)
		if !readOnly {
			actions = append(append(actions, st.writes...), deploy[st.sid]...)
		}
		if len(actions) == 0 {
			continue
		}
		slices.Sort(actions)
		out := Statement{Sid: st.sid, Effect: "Allow", Action: slices.Compact(actions), Resource: st.resources(s)}
		if slices.Equal(out.Resource, []string{"*"}) {
			out.Action = describeAll(out.Action)
		}
		if st.condition != nil {
			out.Condition = st.condition(s)
		}
		doc.Statement = append(doc.Statement, out)
	}
	return doc
}

// describeAll replaces a service's Describe actions by Describe* where
// there are several: on resource * they grant nothing more that matters
// (reads AWS does not scope), and the policy must fit IAM's size limit.
func describeAll(actions []string) []string {
	count := map[string]int{}
	for _, a := range actions {
		if svc, op, _ := strings.Cut(a, ":"); strings.HasPrefix(op, "Describe") {
			count[svc]++
		}
	}
	var out []string
	for _, a := range actions {
		svc, op, _ := strings.Cut(a, ":")
		if strings.HasPrefix(op, "Describe") && count[svc] >= describeAllFrom {
			a = svc + ":Describe*"
		}
		out = append(out, a)
	}
	return slices.Compact(out)
}

// describeAllFrom is how many Describe actions of a service describeAll
// replaces by one.
const describeAllFrom = 3

// Calls are the actions clusterctl's commands call (not CloudFormation on
// their behalf), every command's or the read commands' only.
func Calls(readOnly bool) []string {
	var out []string
	for _, st := range statements {
		out = append(out, st.reads...)
		if !readOnly {
			out = append(out, st.writes...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TemplateActions are the actions CloudFormation calls with the
// operator's permissions for the resource types of the templates, by the
// Sid of the statement that grants them there.
func TemplateActions() map[string][]string {
	out := map[string][]string{}
	for _, r := range resourceTypes {
		for _, g := range r.grants {
			out[g.sid] = append(out[g.sid], g.actions...)
		}
	}
	for sid, actions := range out {
		slices.Sort(actions)
		out[sid] = slices.Compact(actions)
	}
	return out
}

// ResourceTypes are the resource types the policy lets CloudFormation
// create.
func ResourceTypes() []string {
	out := make([]string, 0, len(resourceTypes))
	for _, r := range resourceTypes {
		out = append(out, r.typ)
	}
	return out
}

// partition is the partition of s's region ("aws" when it is unknown: the
// commercial regions).
func (s Scope) partition() string {
	switch {
	case strings.HasPrefix(s.Region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(s.Region, "us-gov-"):
		return "aws-us-gov"
	case strings.HasPrefix(s.Region, "us-iso-"):
		return "aws-iso"
	case strings.HasPrefix(s.Region, "us-isob-"):
		return "aws-iso-b"
	}
	return "aws"
}

func orAny(v string) string {
	if v == "" {
		return "*"
	}
	return v
}

// arn is the ARN of resource of service in s's region and account.
func (s Scope) arn(service, resource string) string {
	return fmt.Sprintf("arn:%s:%s:%s:%s:%s", s.partition(), service, orAny(s.Region), orAny(s.Account), resource)
}

// global is the ARN of resource of a service without regions (IAM).
func (s Scope) global(service, resource string) string {
	return fmt.Sprintf("arn:%s:%s::%s:%s", s.partition(), service, orAny(s.Account), resource)
}

// public is the ARN of an AWS-owned resource of s's region (public SSM
// parameters, AMIs, AWS's documents): no account.
func (s Scope) public(service, resource string) string {
	return fmt.Sprintf("arn:%s:%s:%s::%s", s.partition(), service, orAny(s.Region), resource)
}

// cluster is the cluster's name, or a wildcard.
func (s Scope) cluster() string { return orAny(s.Cluster) }

// named is the pattern of the names CloudFormation generates for the
// cluster's resources without a name of their own: the stack's name
// first (the core's is the cluster's, a group's starts with it and a
// hyphen), then the logical id and a random suffix.
func (s Scope) named() string { return s.cluster() + "-*" }

// stacks are the ARNs of the cluster's stacks (its core and its groups)
// and of the networks it may use.
func (s Scope) stacks() []string {
	if s.Cluster == "" {
		return []string{s.arn("cloudformation", "stack/*/*")}
	}
	return []string{
		s.arn("cloudformation", "stack/"+s.Cluster+"/*"),
		s.arn("cloudformation", "stack/"+names.GroupStack(s.Cluster, "*")+"/*"),
		s.arn("cloudformation", "stack/"+names.NetworkStack(orAny(s.Network))+"/*"),
	}
}

// bucket is the ARN pattern of the cluster's bucket: CloudFormation names
// it from the stack and logical id, lower-cased.
func (s Scope) bucket() string {
	return fmt.Sprintf("arn:%s:s3:::%s-%s-*", s.partition(), strings.ToLower(s.cluster()), strings.ToLower(names.ResourceBucket))
}

// logGroup is the ARN of the cluster's log group and of its streams.
func (s Scope) logGroup() []string {
	g := s.arn("logs", "log-group:"+names.LogGroup(s.cluster()))
	return []string{g, g + ":*"}
}
