package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v4"
)

// Labels are a group's metadata, key → value: engine labels on its nodes
// and tags on its instances. A file writes them as a mapping; a flag as
// key=value[,key=value], repeatable.
type Labels map[string]string

// UnmarshalText reads one -m flag, adding its pairs to the labels already
// read; an empty flag (-m "") stands for no labels. The pairs' content is
// checked by Check, which applies to files too.
func (l *Labels) UnmarshalText(b []byte) error {
	if *l == nil {
		*l = Labels{}
	}
	s := string(b)
	if s == "" {
		return nil
	}
	for _, pair := range strings.Split(s, ",") {
		if pair == "" {
			return fmt.Errorf("invalid label list %q: empty entry", s)
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			return fmt.Errorf("invalid label %q: expected key=value", pair)
		}
		if _, dup := (*l)[k]; dup {
			return fmt.Errorf("invalid labels: key %q given twice", k)
		}
		(*l)[k] = v
	}
	return nil
}

// UnmarshalJSON reads the mapping form. (Without it encoding/json would
// refuse an object for a type that reads text.)
func (l *Labels) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*l = m
	return nil
}

// UnmarshalYAML reads the mapping form.
func (l *Labels) UnmarshalYAML(n *yaml.Node) error {
	var m map[string]string
	if err := n.Decode(&m); err != nil {
		return err
	}
	*l = m
	return nil
}

// Keys returns the keys in order.
func (l Labels) Keys() []string { return slices.Sorted(maps.Keys(l)) }

// String is the canonical k=v,k=v form, sorted by key ("" for none): the
// value of the clusterctl:labels stack tag.
func (l Labels) String() string {
	parts := make([]string, 0, len(l))
	for _, k := range l.Keys() {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

// ParseLabels reads the canonical form back.
func ParseLabels(s string) (Labels, error) {
	var l Labels
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return nil, err
	}
	if len(l) == 0 {
		return nil, nil
	}
	return l, nil
}

func cloneLabels(l Labels) Labels {
	if l == nil {
		return nil
	}
	return maps.Clone(l)
}
