package main

import (
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/errs"
)

// UpgradeCmd is `clusterctl upgrade -j CLUSTER`.
type UpgradeCmd struct {
	Cluster         string        `short:"j" name:"cluster" aliases:"join" placeholder:"NAME" predictor:"cluster" required:"" help:"Cluster to upgrade."`
	ImageID         string        `name:"image-id" placeholder:"AMI|PATH" help:"Image every stack takes: an AMI id or an SSM parameter path (default: each stack's own image setting, its parameter's current value)."`
	Parallel        int           `placeholder:"N" default:"1" help:"Groups updated at once (default 1)."`
	ValidateTimeout time.Duration `name:"validate-timeout" placeholder:"DURATION" default:"15m" help:"How long the cluster may take to validate after a stack's update before the upgrade stops (default 15m)."`
	DryRun          bool          `name:"dry-run" help:"Print the plan and change nothing."`
	Yes             bool          `short:"y" help:"Upgrade without asking (needed when not on a terminal)."`
}

func (c *UpgradeCmd) Run(app *App) error {
	check := checkNames(c.Cluster, "-j/--cluster", "")
	switch {
	case check != nil:
	case c.Parallel < 1:
		check = errs.Usage("--parallel %d: at least 1", c.Parallel)
	case c.ValidateTimeout <= 0:
		check = errs.Usage("--validate-timeout %s: more than 0", c.ValidateTimeout)
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	table := (out.Format == "table" || out.Format == "wide") && app.Globals.Query == ""
	opts := cluster.UpgradeOptions{Cluster: c.Cluster, ImageID: c.ImageID, Parallel: c.Parallel, ValidateTimeout: c.ValidateTimeout, DryRun: c.DryRun, Yes: c.Yes}
	ask := !c.Yes && !c.DryRun && app.IO.InTTY
	if table || ask {
		// The plan is the result of a dry run; before an upgrade, what the
		// question is about.
		w := app.IO.Out
		if !table || !c.DryRun {
			w = app.IO.ErrOut
		}
		opts.OnPlan = func(p *cluster.UpgradePlan) error {
			fmt.Fprintf(w, "Upgrade plan for cluster %s:\n", p.Cluster)
			return cluster.WriteUpgradePlan(w, p)
		}
	}
	res, err := cluster.NewUpgrader(svc).Upgrade(app.Context(), opts)
	if err != nil {
		return err
	}
	if c.DryRun {
		fmt.Fprintln(app.IO.ErrOut, "Dry run: nothing changed")
	}
	if table {
		return nil
	}
	return out.Write(app.IO.Out, res, nil)
}
