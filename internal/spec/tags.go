package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v4"

	"github.com/clusterctl/clusterctl/internal/names"
)

// Tags are the operator's own AWS tags, key → value (cost allocation,
// policy): put on the stacks and, through them and the launch templates,
// on every resource they make, instances and volumes included. A file
// writes them as a mapping; a flag as key=value[,key=value], repeatable.
type Tags map[string]string

// Limits of AWS tags, and the share of them clusterctl keeps.
const (
	// MaxTagKey and MaxTagValue are AWS's limits, in characters.
	MaxTagKey   = 128
	MaxTagValue = 256
	// MaxTagsPerResource is EC2's (and CloudFormation's) limit.
	MaxTagsPerResource = 50
	// OwnInstanceTags are the tags clusterctl puts on an instance itself:
	// Name, the 4 ownership tags, the 3 other group stack tags
	// CloudFormation propagates and the 3 an agent's node sets (type,
	// lifecycle, zone). The operator's tags and a group's labels (one tag
	// each) share what is left.
	OwnInstanceTags = 11
)

// tagRE is what AWS accepts across its services in tag keys and values:
// letters, digits and spaces, and + - = . _ : / @.
var tagRE = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}+\-=._:/@]*$`)

// UnmarshalText reads one --tags flag, adding its pairs to the tags
// already read; an empty flag (--tags "") stands for no tags. A value may
// hold '=' (the first one ends the key); AWS allows no ',' in tags.
func (t *Tags) UnmarshalText(b []byte) error {
	if *t == nil {
		*t = Tags{}
	}
	s := string(b)
	if s == "" {
		return nil
	}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		switch {
		case pair == "":
			return fmt.Errorf("invalid tag list %q: empty entry", s)
		case !ok:
			return fmt.Errorf("invalid tag %q: expected key=value", pair)
		}
		if _, dup := (*t)[k]; dup {
			return fmt.Errorf("invalid tags: key %q given twice", k)
		}
		(*t)[k] = v
	}
	return nil
}

// UnmarshalJSON reads the mapping form.
func (t *Tags) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*t = m
	return nil
}

// UnmarshalYAML reads the mapping form.
func (t *Tags) UnmarshalYAML(n *yaml.Node) error {
	var m map[string]string
	if err := n.Decode(&m); err != nil {
		return err
	}
	*t = m
	return nil
}

// Keys returns the keys in order.
func (t Tags) Keys() []string { return slices.Sorted(maps.Keys(t)) }

// String is the k=v,k=v form, sorted by key ("" for none).
func (t Tags) String() string { return Labels(t).String() }

func cloneTags(t Tags) Tags {
	if t == nil {
		return nil
	}
	return maps.Clone(t)
}

// checkTags checks the operator's tags against AWS's rules and
// clusterctl's own: labels is how many labels take a tag each beside them.
func checkTags(path string, t Tags, labels int) error {
	if room := MaxTagsPerResource - OwnInstanceTags - labels; len(t) > room {
		if labels > 0 {
			return invalid(path, "invalid tags: %d given, at most %d beside the %d labels (AWS allows %d tags per resource; clusterctl's own and one per label take the rest)", len(t), room, labels, MaxTagsPerResource)
		}
		return invalid(path, "invalid tags: %d given, at most %d (AWS allows %d tags per resource; clusterctl's own take %d)", len(t), room, MaxTagsPerResource, OwnInstanceTags)
	}
	for _, k := range t.Keys() {
		v := t[k]
		lower := strings.ToLower(k)
		switch {
		case k == "":
			return invalid(path, "invalid tag key \"\": empty")
		case utf8.RuneCountInString(k) > MaxTagKey:
			return invalid(path, "invalid tag key %q: %d characters, at most %d allowed", k, utf8.RuneCountInString(k), MaxTagKey)
		case v == "":
			return invalid(path, "invalid tag value for key %q: empty (CloudFormation takes no empty tag value)", k)
		case utf8.RuneCountInString(v) > MaxTagValue:
			return invalid(path, "invalid tag value for key %q: %d characters, at most %d allowed", k, utf8.RuneCountInString(v), MaxTagValue)
		case strings.HasPrefix(lower, "aws:"):
			return invalid(path, "invalid tag key %q: the prefix aws: is reserved for AWS", k)
		case strings.HasPrefix(lower, names.TagPrefix):
			return invalid(path, "invalid tag key %q: the prefix %s is reserved for the tags clusterctl sets", k, names.TagPrefix)
		case k == names.TagName:
			return invalid(path, "invalid tag key %q: clusterctl names the instances itself", k)
		case !tagRE.MatchString(k):
			return invalid(path, "invalid tag key %q: only letters, digits, spaces and + - = . _ : / @ are allowed", k)
		case !tagRE.MatchString(v):
			return invalid(path, "invalid tag value %q for key %q: only letters, digits, spaces and + - = . _ : / @ are allowed", v, k)
		}
	}
	return nil
}
