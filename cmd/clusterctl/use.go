package main

import (
	"fmt"
	"os"

	"github.com/clusterctl/clusterctl/internal/awsx"
	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/userconfig"
)

// UseCmd is `clusterctl use [CLUSTER]`: the default cluster (and its
// region) of the commands given no -j, kept in the user's configuration
// directory.
type UseCmd struct {
	Cluster string `arg:"" optional:"" predictor:"cluster" help:"The cluster commands act on when no -j names one (without it: print the default)."`
	Clear   bool   `name:"clear" aliases:"none" help:"Forget the default cluster and region."`
	NoCheck bool   `name:"no-check" help:"Do not check that the cluster exists (no AWS call); the region is then --region's alone."`
}

// defaultView is the JSON form of the default: what `use` prints.
type defaultView struct {
	Cluster string `json:"cluster"`
	Region  string `json:"region"`
	// Source: "file" (clusterctl use), "environment" (CLUSTERCTL_CLUSTER)
	// or "" when there is no default.
	Source string `json:"source"`
	Path   string `json:"path"`
}

func (c *UseCmd) Run(app *App) error {
	out, err := app.Output()
	if err != nil {
		return err
	}
	path, err := userconfig.Path()
	if err != nil {
		return err
	}
	switch {
	case c.Clear && c.Cluster != "":
		return errs.Usage("use takes a cluster or --clear, not both: clusterctl use --clear")
	case c.Clear && c.NoCheck:
		return errs.Usage("--no-check is for setting a default: clusterctl use CLUSTER --no-check")
	case c.Clear:
		return c.clear(app, path)
	case c.Cluster == "" && c.NoCheck:
		return errs.Usage("--no-check needs the cluster: clusterctl use CLUSTER --no-check")
	case c.Cluster == "":
		return c.show(app, path)
	}
	check := checkCluster(c.Cluster, "")
	if check == nil && app.Globals.Region != "" {
		check = awsx.CheckRegion(app.Globals.Region)
	}
	region := app.Globals.Region
	if c.NoCheck {
		if check != nil {
			return check
		}
	} else {
		_, svc, err := app.prepare(check)
		if err != nil {
			return err
		}
		if err := cluster.NewFinder(svc).CheckCluster(app.Context(), c.Cluster); err != nil {
			return err
		}
		// Where it was found: commands find it there from now on.
		region = svc.Region
	}
	if err := userconfig.Save(path, userconfig.Config{Cluster: c.Cluster, Region: region}); err != nil {
		return err
	}
	v := defaultView{Cluster: c.Cluster, Region: region, Source: "file", Path: path}
	line := "Default cluster: " + c.Cluster
	if region != "" {
		line += " in " + region
	}
	line += " (commands given no -j act on it; clusterctl use --clear forgets it)"
	if env, ok := os.LookupEnv(userconfig.EnvCluster); ok && env != c.Cluster {
		fmt.Fprintf(app.IO.ErrOut, "Note: %s=%s overrides it where it is set\n", userconfig.EnvCluster, env)
	}
	return writeResult(app, out, v, line)
}

// show prints the default in force: CLUSTERCTL_CLUSTER's, else the file's.
func (c *UseCmd) show(app *App, path string) error {
	out, err := app.Output()
	if err != nil {
		return err
	}
	d, err := userconfig.Resolve(os.LookupEnv)
	if err != nil {
		return errs.AsUsage(err)
	}
	v := defaultView{Cluster: d.Cluster, Region: d.Region, Path: path}
	var line string
	switch {
	case d.Cluster == "" && d.FromEnv:
		v.Source = "environment"
		line = fmt.Sprintf("No default cluster: %s is set empty, which ignores the default of clusterctl use", userconfig.EnvCluster)
	case d.Cluster == "":
		line = "No default cluster (clusterctl use CLUSTER sets one)"
	case d.FromEnv:
		v.Source = "environment"
		line = fmt.Sprintf("Default cluster: %s (from %s)", d.Cluster, userconfig.EnvCluster)
	default:
		v.Source = "file"
		line = "Default cluster: " + d.Cluster
		if d.Region != "" {
			line += " in " + d.Region
		}
		line += " (set by clusterctl use, in " + path + ")"
	}
	return writeResult(app, out, v, line)
}

// clear removes the file.
func (c *UseCmd) clear(app *App, path string) error {
	out, err := app.Output()
	if err != nil {
		return err
	}
	// A file that cannot be read is removed all the same: --clear is
	// what its error advises.
	was, _ := userconfig.Load(path)
	if err := userconfig.Remove(path); err != nil {
		return err
	}
	line := "No default cluster to clear"
	if was.Cluster != "" {
		line = "Cleared the default cluster (was " + was.Cluster + ")"
	}
	if env, ok := os.LookupEnv(userconfig.EnvCluster); ok && env != "" {
		fmt.Fprintf(app.IO.ErrOut, "Note: %s=%s still sets a default where it is set\n", userconfig.EnvCluster, env)
	}
	return writeResult(app, out, defaultView{Path: path}, line)
}
