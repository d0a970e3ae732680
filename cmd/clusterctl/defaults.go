package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/alecthomas/kong"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/userconfig"
)

// noDefaultCluster are the commands with a cluster flag that the default
// cluster does not fill: create-core makes a new cluster, and a render
// without -j is offline, which the default would turn into reading AWS.
var noDefaultCluster = []string{"create-core", "render core", "render group"}

// defaultCluster fills the cluster flag of a command given none from the
// default (CLUSTERCTL_CLUSTER, else `clusterctl use`'s file), as a kong
// resolver: kong asks it only for flags the command line did not set,
// before it checks the required ones. It remembers whether it did, so
// that the command says which cluster it acts on.
type defaultCluster struct {
	d   userconfig.Default
	err error // reading the file
	// used: a command's cluster came from d; broken: a command would
	// have used the file, which could not be read.
	used, broken bool
}

// newDefaultCluster reads the default; lookup is os.LookupEnv.
func newDefaultCluster(lookup func(string) (string, bool)) *defaultCluster {
	d, err := userconfig.Resolve(lookup)
	return &defaultCluster{d: d, err: err}
}

func (dc *defaultCluster) Validate(*kong.Application) error { return nil }

func (dc *defaultCluster) Resolve(kctx *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
	cmd := kctx.Selected()
	if flag.Name != "cluster" || cmd == nil || slices.Contains(noDefaultCluster, commandPath(cmd)) {
		return nil, nil
	}
	// The cluster given as the command's argument (describe prod).
	for _, p := range kctx.Path {
		if p.Positional != nil && p.Positional.Tag.Get("predictor") == "cluster" {
			return nil, nil
		}
	}
	if dc.err != nil && !dc.d.FromEnv {
		dc.broken = true
		return nil, nil
	}
	if dc.d.Cluster == "" {
		return nil, nil
	}
	dc.used = true
	return dc.d.Cluster, nil
}

// problem is the error of a default that could not be read when a
// command needed it; nil otherwise.
func (dc *defaultCluster) problem() error {
	if dc.broken {
		return errs.AsUsage(dc.err)
	}
	return nil
}

// note is the line a command says when the default chose its cluster;
// "" when it did not.
func (dc *defaultCluster) note() string {
	if !dc.used {
		return ""
	}
	if dc.d.FromEnv {
		return fmt.Sprintf("Note: using cluster %s (from %s)", dc.d.Cluster, userconfig.EnvCluster)
	}
	return fmt.Sprintf("Note: using cluster %s (the default: clusterctl use)", dc.d.Cluster)
}

// region is the default region for the AWS configuration: the file's.
// A file that could not be read is an error only when it was to give
// the region: neither --region nor the environment names one.
func (dc *defaultCluster) region(flag string) (string, error) {
	if dc == nil {
		return "", nil
	}
	if dc.err != nil {
		if explicitRegion(flag) != "" {
			return "", nil
		}
		return "", errs.AsUsage(dc.err)
	}
	return dc.d.Region, nil
}

// explicitRegion is the region a run is given before any default: the
// flag, then the environment as the SDK reads it; "" when neither names
// one.
func explicitRegion(flag string) string {
	for _, r := range []string{flag, os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION")} {
		if r != "" {
			return r
		}
	}
	return ""
}
