package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// Launch is what a group's nodes are launched with, as CloudFormation
// would see it: its launch template's data and its Auto Scaling group's
// subnets and mixed instances policy (the properties whose change makes a
// rolling update replace the nodes), with the stack's parameters and
// conditions filled in. When an
// update changes it, the rolling update replaces the nodes; when it does
// not, the nodes stay. Comparing the Launch of the deployed template and
// parameters with that of the rendered ones decides it without asking
// CloudFormation (whose change sets do not always say), and without a
// list of the settings that matter: whatever the template makes of them
// counts.
//
// params should hold an SSM-typed parameter's resolved value (the AMI, not
// its path), so that a new AMI behind the same path counts as a change.
func Launch(template []byte, params map[string]string) (string, error) {
	return launchOf(template, params, names.ResourceLaunchTemplate, names.ResourceAutoScalingGroup)
}

// CoreLaunch is Launch for a core: what its managers are launched with.
// A core of join contract 1 has no managers' group: an error.
func CoreLaunch(template []byte, params map[string]string) (string, error) {
	return launchOf(template, params, names.ResourceControlLaunchTemplate, names.ResourceManagerGroup)
}

func launchOf(template []byte, params map[string]string, ltID, asgID string) (string, error) {
	var doc struct {
		Parameters map[string]struct{ Type string }
		Conditions map[string]any
		Resources  map[string]struct{ Properties map[string]any }
	}
	if err := json.Unmarshal(template, &doc); err != nil {
		return "", fmt.Errorf("reading template: %w", err)
	}
	lt, ok := doc.Resources[ltID]
	asg, ok2 := doc.Resources[asgID]
	if !ok || !ok2 {
		return "", fmt.Errorf("template has no %s or %s", ltID, asgID)
	}
	r := resolver{params: map[string]any{}, conditions: doc.Conditions}
	for name, p := range doc.Parameters {
		v := params[name]
		if strings.HasPrefix(p.Type, "List<") || p.Type == "CommaDelimitedList" {
			r.params[name] = stringsToAny(spec.SplitList(v))
		} else {
			r.params[name] = v
		}
	}
	out, err := json.Marshal(map[string]any{
		"LaunchTemplateData": r.resolve(lt.Properties["LaunchTemplateData"]),
		"VPCZoneIdentifier":  r.resolve(asg.Properties["VPCZoneIdentifier"]),
		// Absent (null) for a group of one instance type.
		"MixedInstancesPolicy": r.resolve(asg.Properties["MixedInstancesPolicy"]),
	})
	if err != nil {
		return "", fmt.Errorf("encoding launch data: %w", err)
	}
	return string(out), nil
}

// noValue is what Ref AWS::NoValue resolves to: the property is left out.
type noValue struct{}

// resolver evaluates the intrinsic functions the templates use. What it
// cannot know (resource ids, attributes) stays as written, which is the
// same on both sides of a comparison.
type resolver struct {
	params     map[string]any
	conditions map[string]any
}

func (r resolver) resolve(v any) any {
	switch v := v.(type) {
	case []any:
		out := []any{}
		for _, x := range v {
			if y := r.resolve(x); y != (noValue{}) {
				out = append(out, y)
			}
		}
		return out
	case map[string]any:
		if len(v) == 1 {
			for fn, arg := range v {
				if y, ok := r.intrinsic(fn, arg); ok {
					return y
				}
			}
		}
		out := map[string]any{}
		for k, x := range v {
			if y := r.resolve(x); y != (noValue{}) {
				out[k] = y
			}
		}
		return out
	}
	return v
}

func (r resolver) intrinsic(fn string, arg any) (any, bool) {
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		if name == "AWS::NoValue" {
			return noValue{}, true
		}
		if p, ok := r.params[name]; ok {
			return p, true
		}
		return map[string]any{"Ref": name}, true
	case "Fn::If":
		a, _ := arg.([]any)
		if len(a) != 3 {
			return nil, false
		}
		name, _ := a[0].(string)
		if r.condition(r.conditions[name]) {
			return r.resolve(a[1]), true
		}
		return r.resolve(a[2]), true
	case "Fn::Base64":
		return r.resolve(arg), true
	case "Fn::Select":
		a, _ := arg.([]any)
		if len(a) != 2 {
			return nil, false
		}
		i, ok := a[0].(float64)
		l, isList := r.resolve(a[1]).([]any)
		if !ok || !isList || int(i) < 0 || int(i) >= len(l) {
			return nil, false
		}
		return l[int(i)], true
	case "Fn::Sub":
		s, ok := arg.(string)
		if !ok {
			return nil, false
		}
		out, err := ResolveSub(s, func(name string) (string, bool) {
			if p, ok := r.params[name].(string); ok {
				return p, true
			}
			return "${" + name + "}", true // a resource or pseudo parameter: the same on both sides
		})
		if err != nil {
			return s, true
		}
		return out, true
	}
	return nil, false
}

// condition evaluates a condition of the forms the templates use.
func (r resolver) condition(c any) bool {
	m, ok := c.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	for fn, arg := range m {
		a, _ := arg.([]any)
		switch fn {
		case "Fn::Not":
			return len(a) == 1 && !r.condition(a[0])
		case "Fn::And", "Fn::Or":
			all, any := true, false
			for _, x := range a {
				v := r.condition(x)
				all, any = all && v, any || v
			}
			if fn == "Fn::And" {
				return all
			}
			return any
		case "Fn::Equals":
			if len(a) != 2 {
				return false
			}
			x, _ := json.Marshal(r.resolve(a[0]))
			y, _ := json.Marshal(r.resolve(a[1]))
			return string(x) == string(y)
		case "Condition":
			name, _ := arg.(string)
			return r.condition(r.conditions[name])
		}
	}
	return false
}

func stringsToAny(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}
