package stacks

import (
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// FromSDK converts the SDK's description of a stack, for callers that
// describe stacks themselves (inventory reads them all in one call).
func FromSDK(s types.Stack) Stack {
	out := Stack{
		Name:         aws.ToString(s.StackName),
		ID:           aws.ToString(s.StackId),
		Status:       string(s.StackStatus),
		StatusReason: aws.ToString(s.StackStatusReason),
		Parameters:   map[string]string{},
		Outputs:      map[string]string{},
		Tags:         map[string]string{},
		Resolved:     map[string]string{},
		Created:      aws.ToTime(s.CreationTime),
	}
	out.Updated = out.Created
	if s.LastUpdatedTime != nil {
		out.Updated = *s.LastUpdatedTime
	}
	for _, p := range s.Parameters {
		out.Parameters[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
		if p.ResolvedValue != nil {
			out.Resolved[aws.ToString(p.ParameterKey)] = *p.ResolvedValue
		}
	}
	for _, o := range s.Outputs {
		out.Outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	for _, t := range s.Tags {
		out.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

func eventFrom(e types.StackEvent) Event {
	return Event{
		ID:           aws.ToString(e.EventId),
		StackID:      aws.ToString(e.StackId),
		StackName:    aws.ToString(e.StackName),
		LogicalID:    aws.ToString(e.LogicalResourceId),
		PhysicalID:   aws.ToString(e.PhysicalResourceId),
		ResourceType: aws.ToString(e.ResourceType),
		Status:       string(e.ResourceStatus),
		Reason:       aws.ToString(e.ResourceStatusReason),
		Token:        aws.ToString(e.ClientRequestToken),
		Time:         aws.ToTime(e.Timestamp),
	}
}

func changeFrom(c types.Change) (Change, bool) {
	rc := c.ResourceChange
	if rc == nil {
		return Change{}, false
	}
	ch := Change{
		LogicalID:    aws.ToString(rc.LogicalResourceId),
		ResourceType: aws.ToString(rc.ResourceType),
		Action:       string(rc.Action),
		Replacement:  string(rc.Replacement),
		PhysicalID:   aws.ToString(rc.PhysicalResourceId),
	}
	for _, s := range rc.Scope {
		ch.Scope = append(ch.Scope, string(s))
	}
	return ch, true
}

func paramsIn(ps []Param) []types.Parameter {
	out := make([]types.Parameter, 0, len(ps))
	for _, p := range ps {
		if p.UsePrevious {
			out = append(out, types.Parameter{ParameterKey: aws.String(p.Key), UsePreviousValue: aws.Bool(true)})
			continue
		}
		out = append(out, types.Parameter{ParameterKey: aws.String(p.Key), ParameterValue: aws.String(p.Value)})
	}
	return out
}

// tagsIn sorts by key so requests are deterministic.
func tagsIn(tags map[string]string) []types.Tag {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]types.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

func capsIn(caps []string) []types.Capability {
	out := make([]types.Capability, 0, len(caps))
	for _, c := range caps {
		out = append(out, types.Capability(c))
	}
	return out
}

func resourceFrom(r types.StackResourceSummary) Resource {
	return Resource{
		LogicalID:    aws.ToString(r.LogicalResourceId),
		PhysicalID:   aws.ToString(r.PhysicalResourceId),
		ResourceType: aws.ToString(r.ResourceType),
		Status:       string(r.ResourceStatus),
		Reason:       aws.ToString(r.ResourceStatusReason),
	}
}
