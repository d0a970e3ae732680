package spec

import (
	"encoding/json"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v4"
)

// InstanceTypes are a group's instance types: one, or several for a mixed
// group, in order of preference (the first is what the launch template
// names, and on-demand capacity takes them in this order). A flag gives
// them comma-separated (-t m5.large,m5a.large); a file as one string or a
// list. One type is written as a plain string, as before groups could
// have several.
type InstanceTypes []string

// UnmarshalText reads a -t flag. A later -t replaces an earlier one, as
// for any flag of one value: the types are one value, comma-separated.
// Their shape is checked by Check, which applies to files too.
func (t *InstanceTypes) UnmarshalText(b []byte) error {
	*t = splitTypes(string(b))
	return nil
}

// UnmarshalJSON reads a string (one type, or several comma-separated) or a
// list.
func (t *InstanceTypes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = splitTypes(s)
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("instance types: expected a string or a list of strings")
	}
	*t = l
	return nil
}

// UnmarshalYAML reads a scalar or a sequence, as UnmarshalJSON.
func (t *InstanceTypes) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*t = splitTypes(n.Value)
		return nil
	}
	var l []string
	if err := n.Decode(&l); err != nil {
		return fmt.Errorf("instance types: expected a string or a list of strings")
	}
	*t = l
	return nil
}

// MarshalJSON writes one type as a string, several as a list.
func (t InstanceTypes) MarshalJSON() ([]byte, error) {
	if len(t) == 1 {
		return json.Marshal(t[0])
	}
	return json.Marshal([]string(t))
}

// MarshalYAML writes one type as a string, several as a list.
func (t InstanceTypes) MarshalYAML() (any, error) {
	if len(t) == 1 {
		return t[0], nil
	}
	return []string(t), nil
}

// String is the comma-separated form, as the flag and the InstanceType
// parameter take it.
func (t InstanceTypes) String() string { return strings.Join(t, ",") }

// First is the preferred type ("" for none): the one the launch template
// names, and whose architecture picks the default image.
func (t InstanceTypes) First() string {
	if len(t) == 0 {
		return ""
	}
	return t[0]
}

// splitTypes splits a comma-separated list around spaces, keeping empty
// entries for Check to refuse ("m5.large,,m5a.large" is a typo, not two
// types).
func splitTypes(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	out := strings.Split(s, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}
