package spec

import (
	"encoding/json"
	"fmt"
	"time"

	yaml "go.yaml.in/yaml/v4"
)

// Autoscale opts a group into the managers' autoscaler: the leader raises
// the group's desired capacity (never above max) for tasks the swarm
// cannot place, and removes a node idle for ScaleDownAfter (never below
// min). The template then leaves DesiredCapacity out, so that
// CloudFormation never sets it back; the count follows the min.
type Autoscale struct {
	Enabled        bool     `json:"enabled,omitempty" yaml:"enabled,omitempty" name:"autoscale" negatable:"" help:"Let the managers grow the group for tasks the swarm cannot place and shrink it by idle nodes, between --min and --max (--no-autoscale: a fixed count again, -c required)." file:"Let the managers grow the group for tasks the swarm cannot place and shrink it by idle nodes, between min and max." unset:"off"`
	ScaleDownAfter Duration `json:"scaleDownAfter,omitempty" yaml:"scaleDownAfter,omitempty" name:"scale-down-after" placeholder:"DURATION" help:"With --autoscale: how long a node runs no task (global services aside) before it is drained and removed (default 10m)." file:"With autoscale: how long a node runs no task (global services aside) before it is drained and removed, e.g. 10m (default 10m)." unset:"10m"`
}

// DefaultScaleDownAfter is how long a node of an autoscaled group is idle
// before it is removed, as the Kubernetes cluster autoscaler's default.
const DefaultScaleDownAfter = 10 * time.Minute

// MinScaleDownAfter bounds it from below: two of the leader's rounds.
const MinScaleDownAfter = 10 * time.Second

// IdleFor is ScaleDownAfter, defaulted.
func (a Autoscale) IdleFor() time.Duration {
	if a.ScaleDownAfter == 0 {
		return DefaultScaleDownAfter
	}
	return time.Duration(a.ScaleDownAfter)
}

// Size says how many nodes of which types a group is, for a line of
// output: "3 x c5.large", or for an autoscaled group "1–4 x c5.large,
// autoscaled".
func (g Group) Size() string {
	size := fmt.Sprintf("%d x %s", g.Desired(), g.InstanceType)
	if g.Autoscale.Enabled {
		size = fmt.Sprintf("%d–%d x %s, autoscaled", g.MinSize(), g.MaxSize(), g.InstanceType)
	}
	// What is bought is said where the group is created: spot is news.
	switch {
	case g.Spot && (g.OnDemandBaseCapacity() > 0 || g.OnDemandPercentage() > 0):
		size += fmt.Sprintf(", spot with on-demand %d + %d%%", g.OnDemandBaseCapacity(), g.OnDemandPercentage())
	case g.Spot:
		size += ", spot"
	}
	return size
}

// Duration is a length of time written as Go writes it: 10m, 90s, 1h30m.
type Duration time.Duration

// String is the duration as Go writes it, shortened: 10m rather than
// 10m0s.
func (d Duration) String() string {
	s := time.Duration(d).String()
	for _, z := range []struct{ long, short string }{{"m0s", "m"}, {"h0m", "h"}} {
		if len(s) > len(z.long) && s[len(s)-len(z.long):] == z.long {
			s = s[:len(s)-len(z.long)] + z.short
		}
	}
	return s
}

func parseDuration(s string) (Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: expected e.g. 10m, 90s or 1h30m", s)
	}
	return Duration(d), nil
}

// UnmarshalText reads a flag.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	*d = v
	return err
}

// MarshalText writes it as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalJSON reads a string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: expected a string such as 10m")
	}
	return d.UnmarshalText([]byte(s))
}

// MarshalJSON writes a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalYAML reads a scalar.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("duration: expected a value such as 10m")
	}
	return d.UnmarshalText([]byte(n.Value))
}

// MarshalYAML writes a string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

func (g Group) autoscaleRules() []rule {
	var rules []rule
	a := g.Autoscale
	if a.ScaleDownAfter != 0 && time.Duration(a.ScaleDownAfter) < MinScaleDownAfter {
		rules = append(rules, one("autoscale.scaleDownAfter", invalid("autoscale.scaleDownAfter", "invalid scale-down delay %s: at least %s", a.ScaleDownAfter, Duration(MinScaleDownAfter))))
	}
	if a.ScaleDownAfter != 0 && !a.Enabled {
		rules = append(rules, rule{[]string{"autoscale.scaleDownAfter", "autoscale.enabled"}, invalid("autoscale.scaleDownAfter", "applies to autoscaled groups only")})
	}
	if a.Enabled && g.Count != nil && *g.Count != g.MinSize() {
		rules = append(rules, rule{[]string{"count", "autoscale.enabled"}, invalid("count", "an autoscaled group has no fixed count: the autoscaler sets its capacity between min and max (--min, --max); change those instead")})
	}
	if a.Enabled && g.MaxSize() < 1 {
		rules = append(rules, rule{[]string{"max", "autoscale.enabled"}, invalid("max", "an autoscaled group needs a max of at least 1")})
	}
	return rules
}
