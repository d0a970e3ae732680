package awsx

import (
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/fuzzy"
)

// CheckRegion refuses, as bad input, a region that is not one of any AWS
// partition's: without it a typo (us-east-9) costs the SDK's retries on a
// host that does not exist and ends in an endpoint error. The regions are
// the SDK's own partition data (regions_sdk.go, generated from it and
// checked against it by a test), so they move with the SDK.
func CheckRegion(region string) error {
	if slices.Contains(sdkRegions, region) {
		return nil
	}
	msg := "unknown AWS region " + region
	best, bestD := "", 3
	for _, r := range sdkRegions {
		if d := fuzzy.Distance(strings.ToLower(region), r); d < bestD {
			best, bestD = r, d
		}
	}
	if best != "" {
		return errs.Usage("%s: did you mean %s?", msg, best)
	}
	return errs.Usage("%s: not a region of any AWS partition (e.g. us-east-1, eu-west-1)", msg)
}
