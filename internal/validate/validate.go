// Package validate checks operator input before any AWS call. Every error is
// one line that names the flag or value at fault.
package validate

import (
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strings"
)

// MaxStackName is CloudFormation's limit on stack names.
const MaxStackName = 128

var (
	nameRe  = regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]*$`)
	typeRe  = regexp.MustCompile(`^[a-z][a-z0-9-]*[0-9][a-z0-9-]*\.[a-z0-9]+$`)
	labelRe = regexp.MustCompile(`^[a-zA-Z0-9._/-]+$`)
	amiRe   = regexp.MustCompile(`^ami-[0-9a-f]{8}([0-9a-f]{9})?$`)
	ssmRe   = regexp.MustCompile(`^/[a-zA-Z0-9_.\-/]+$`)
	subnRe  = regexp.MustCompile(`^subnet-[0-9a-f]{8,17}$`)
	vpcRe   = regexp.MustCompile(`^vpc-[0-9a-f]{8,17}$`)
)

// ClusterName checks a cluster (= core stack) name.
func ClusterName(name string) error {
	if err := stackName("cluster name", name); err != nil {
		return err
	}
	return nil
}

// GroupName checks a group name and the resulting stack name <cluster>-<group>.
func GroupName(cluster, group string) error {
	if !nameRe.MatchString(group) {
		return fmt.Errorf("invalid group name %q: must start with a letter and contain only letters, digits and hyphens", group)
	}
	if n := len(cluster) + 1 + len(group); n > MaxStackName {
		return fmt.Errorf("invalid group name %q: stack name %s-%s would be %d characters, over the %d allowed", group, cluster, group, n, MaxStackName)
	}
	return nil
}

func stackName(what, name string) error {
	if !nameRe.MatchString(name) {
		return fmt.Errorf("invalid %s %q: must start with a letter and contain only letters, digits and hyphens", what, name)
	}
	if len(name) > MaxStackName {
		return fmt.Errorf("invalid %s %q: %d characters, over the %d allowed", what, name, len(name), MaxStackName)
	}
	return nil
}

// InstanceType checks that t is shaped like an EC2 instance type (family.size).
func InstanceType(t string) error {
	if !typeRe.MatchString(t) {
		return fmt.Errorf("invalid instance type %q: expected family.size, e.g. r5.large", t)
	}
	return nil
}

// ImageID accepts "", an AMI id or an SSM parameter path.
func ImageID(id string) error {
	if id == "" || amiRe.MatchString(id) || ssmRe.MatchString(id) {
		return nil
	}
	return fmt.Errorf("invalid image id %q: expected an AMI id (ami-...) or an SSM parameter path (/...)", id)
}

// CIDR parses an IPv4 or IPv6 CIDR strictly: the address must be the network
// address (10.0.0.1/8 is refused, it probably hides a typo).
func CIDR(s string) error {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return fmt.Errorf("invalid CIDR %q: expected address/prefix, e.g. 203.0.113.0/24", s)
	}
	if p.Masked() != p {
		return fmt.Errorf("invalid CIDR %q: host bits set, did you mean %s?", s, p.Masked())
	}
	return nil
}

// SubnetIDs checks a list of subnet ids.
func SubnetIDs(ids []string) error {
	for _, id := range ids {
		if !subnRe.MatchString(id) {
			return fmt.Errorf("invalid subnet id %q: expected subnet-...", id)
		}
	}
	return nil
}

// VpcID checks a VPC id.
func VpcID(id string) error {
	if !vpcRe.MatchString(id) {
		return fmt.Errorf("invalid VPC id %q: expected vpc-...", id)
	}
	return nil
}

// Capacity checks min ≤ desired ≤ max, all non-negative.
func Capacity(desired, min, max int) error {
	switch {
	case desired < 0 || min < 0 || max < 0:
		return fmt.Errorf("invalid capacity: counts must not be negative (count %d, min %d, max %d)", desired, min, max)
	case min > desired:
		return fmt.Errorf("invalid capacity: min %d is above count %d", min, desired)
	case desired > max:
		return fmt.Errorf("invalid capacity: count %d is above max %d", desired, max)
	}
	return nil
}

// VolumeSize checks an EBS root volume size in GiB.
func VolumeSize(gb int) error {
	if gb < 8 || gb > 16384 {
		return fmt.Errorf("invalid volume size %d: expected 8 to 16384 GiB", gb)
	}
	return nil
}

// Label is one key=value pair.
type Label struct{ Key, Value string }

// MaxLabels bounds labels so that, with the ownership tags, instances stay
// under EC2's 50 tags and the recorded label string fits a 256-character tag.
const MaxLabels = 20

// Labels parses "k=v,k=v" (several -m flags may be given, so it takes a
// slice). Keys and values may only hold letters, digits, '.', '_', '-', '/':
// they end up in shell scripts on the nodes. The result is sorted by key.
func Labels(specs []string) ([]Label, error) {
	seen := map[string]bool{}
	var out []Label
	for _, spec := range specs {
		for _, pair := range strings.Split(spec, ",") {
			if pair == "" {
				return nil, fmt.Errorf("invalid label list %q: empty entry", spec)
			}
			k, v, ok := strings.Cut(pair, "=")
			if !ok {
				return nil, fmt.Errorf("invalid label %q: expected key=value", pair)
			}
			if !labelRe.MatchString(k) {
				return nil, fmt.Errorf("invalid label key %q: only letters, digits, '.', '_', '-' and '/' are allowed", k)
			}
			if !labelRe.MatchString(v) {
				return nil, fmt.Errorf("invalid label value %q for key %q: only letters, digits, '.', '_', '-' and '/' are allowed", v, k)
			}
			if len(k) > 63 || len(v) > 63 {
				return nil, fmt.Errorf("invalid label %q: keys and values are limited to 63 characters", pair)
			}
			if seen[k] {
				return nil, fmt.Errorf("invalid labels: key %q given twice", k)
			}
			seen[k] = true
			out = append(out, Label{Key: k, Value: v})
		}
	}
	if len(out) > MaxLabels {
		return nil, fmt.Errorf("invalid labels: %d given, at most %d allowed", len(out), MaxLabels)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	if s := FormatLabels(out); len(s) > 256 {
		return nil, fmt.Errorf("invalid labels: %d characters in all, at most 256 allowed", len(s))
	}
	return out, nil
}

// FormatLabels is the canonical "k=v,k=v" form (sorted input assumed).
func FormatLabels(ls []Label) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.Key + "=" + l.Value
	}
	return strings.Join(parts, ",")
}

// OutputFormat checks -o.
func OutputFormat(f string) error {
	switch f {
	case "table", "wide", "json", "yaml":
		return nil
	}
	return fmt.Errorf("invalid output format %q: expected table, wide, json or yaml", f)
}
