package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/internal/fuzzy"
	"github.com/clusterctl/clusterctl/internal/query"
)

// clusterNotFound refuses a cluster without a core stack; advice (how to
// create it) is said only when no cluster has a close name.
func clusterNotFound(cause error, cluster, advice string) error {
	return &refusal{
		msg:     fmt.Sprintf("cluster %q not found: no core stack of that name", cluster),
		cause:   cause,
		missing: &missingName{cluster: cluster, advice: advice},
	}
}

// groupNotFound refuses a group the cluster does not have; why says what
// was found instead.
func groupNotFound(cause error, cluster, group, why string) error {
	return &refusal{
		msg:     fmt.Sprintf("group %q not found in cluster %q %s", group, cluster, why),
		cause:   cause,
		missing: &missingName{cluster: cluster, group: group},
	}
}

// Suggest adds to a refusal of a cluster or group that does not exist the
// closest name that does ("did you mean core?"), read with one listing of
// the account's stacks. Any other error, or a failed listing, comes back
// as it was.
func (s *Finder) Suggest(ctx context.Context, err error) error {
	var r *refusal
	if !errors.As(err, &r) || r.missing == nil || ctx.Err() != nil {
		return err
	}
	m := r.missing
	m.region = s.Region
	live, lerr := s.listNames(ctx)
	if lerr != nil {
		return err
	}
	if m.group == "" {
		m.closest = Closest(m.cluster, live.Clusters)
	} else {
		m.closest = Closest(m.group, live.Groups[m.cluster])
	}
	return err
}

// Closest returns the name of candidates nearest to typed, when it is
// near enough to be a slip of the keyboard: at most one edit away (two for
// names of five characters or more), a transposition counting as one and
// case not counting; "" otherwise, or when typed is one of them.
func Closest(typed string, candidates []string) string {
	limit := 1
	if len(typed) >= 5 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if c == typed {
			return ""
		}
		if d := fuzzy.Distance(strings.ToLower(typed), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// listNames lists the account's clusters and groups by their tags.
func (s *Finder) listNames(ctx context.Context) (query.Names, error) {
	if s.CFN == nil {
		return query.Names{}, errors.New("no CloudFormation client")
	}
	return query.ListNames(ctx, s.CFN)
}
