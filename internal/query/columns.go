package query

import (
	"fmt"
	"strings"
	"time"
)

// Columns choose what a default table shows, so that it fits 120 columns
// for a typical cluster, as kubectl's and gh's do: the CLUSTER column only
// when the listing may span clusters, long values shortened in documented
// ways (ages for times, the first instance type and how many others), and
// -o wide for every value in full. On a narrower terminal (COLUMNS, or
// the terminal's width), Fit cuts the readable columns to fit.
type Columns struct {
	Wide bool
	// OneCluster: the command named the cluster (-j), so CLUSTER would
	// repeat it on every row; -o wide shows it all the same.
	OneCluster bool
	// Now is what ages are measured from; zero: the clock.
	Now time.Time
}

func (c Columns) withCluster(header ...string) []string {
	if c.OneCluster && !c.Wide {
		return header
	}
	return append([]string{"CLUSTER"}, header...)
}

func (c Columns) rowWithCluster(cluster string, cells ...string) []string {
	if c.OneCluster && !c.Wide {
		return cells
	}
	return append([]string{cluster}, cells...)
}

// age is how long ago t was, as kubectl says it: 45s, 12m, 5h, 3d; "-"
// for no time.
func (c Columns) age(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	return ShortAge(now.Sub(*t))
}

// ShortAge spells a duration in its largest unit: 45s, 12m, 5h, 3d.
func ShortAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// shortTypes is a group's instance types in a default table: the first
// (the preferred one) and how many others, "m5.large+2".
func shortTypes(types string) string {
	first, rest, several := strings.Cut(types, ",")
	if !several {
		return types
	}
	return fmt.Sprintf("%s+%d", first, strings.Count(rest, ",")+1)
}

// shortMix is the LIFECYCLE of a default table: on-demand, spot, or mixed
// for spot with an on-demand share (-o wide says which).
func (g Group) shortMix() string {
	if g.Spot && (g.OnDemandBase > 0 || g.OnDemandPercent > 0) {
		return "mixed"
	}
	return g.Mix()
}

// shortAutoscale is the AUTOSCALE of a default table: off, or the bounds
// ("1–4"); -o wide adds the last change.
func (g Group) shortAutoscale() string {
	if g.Autoscale == nil {
		return "off"
	}
	return fmt.Sprintf("%d–%d", g.Min, g.Max)
}
