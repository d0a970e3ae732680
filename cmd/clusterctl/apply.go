package main

import (
	"fmt"
	"io"
	"os"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/clusterfile"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// ApplyCmd is `clusterctl apply -f FILE`.
type ApplyCmd struct {
	File     string `short:"f" required:"" placeholder:"FILE" help:"Cluster file, YAML or JSON; - reads standard input."`
	DryRun   bool   `name:"dry-run" help:"Show the plan and change nothing."`
	Prune    bool   `help:"Delete the cluster's groups that the file does not list (asks first)."`
	Yes      bool   `short:"y" help:"Do not ask before changing the core, deleting groups, replacing or terminating nodes, or removing a load balancer (needed for any of them when not on a terminal)."`
	Parallel int    `default:"4" placeholder:"N" help:"Group stacks changed at a time (default ${default})."`
}

func (c *ApplyCmd) Run(app *App) error {
	out, err := app.Output()
	if err != nil {
		return err
	}
	if c.Parallel < 1 {
		return errs.Usage("--parallel: %d: at least 1", c.Parallel)
	}
	want, name, err := readClusterFile(app, c.File)
	if err != nil {
		return err
	}
	svc, err := app.Clients()
	if err != nil {
		return err
	}
	opts := cluster.ApplyOptions{Spec: want, File: c.File, DryRun: c.DryRun, Prune: c.Prune, Yes: c.Yes, Parallel: c.Parallel}
	// The plan is shown in tables, and on stderr under -o json/yaml when
	// the run may ask about it.
	if w := planWriter(app, out, !c.Yes && !c.DryRun && app.IO.InTTY); w != nil {
		opts.OnPlan = func(p *cluster.ClusterPlan) error {
			// Kept groups are shown even when nothing changes, so the
			// file is never taken for the whole cluster.
			if p.NoChanges && len(p.Kept()) == 0 {
				return nil
			}
			fmt.Fprintf(w, "Plan for cluster %s (%s):\n", p.Cluster, name)
			return cluster.WriteClusterPlan(w, p)
		}
	}
	p, err := cluster.NewApplier(svc).Apply(app.Context(), opts)
	if p == nil {
		return err
	}
	if !out.TableForm() {
		// Also when some stack failed: scripts get every outcome.
		if werr := out.Write(app.IO.Out, p, nil); werr != nil {
			return werr
		}
		return err
	}
	if p.Applied {
		fmt.Fprintln(app.IO.Out)
		if werr := cluster.WriteApplySummary(app.IO.Out, p); werr != nil {
			return werr
		}
	}
	if err != nil {
		return err
	}
	switch {
	case p.NoChanges && len(p.Kept()) > 0:
		fmt.Fprintf(app.IO.ErrOut, "No changes to cluster %s; %s not in %s kept (--prune deletes them)\n", p.Cluster, query.Plural(len(p.Kept()), "group stack"), name)
	case p.NoChanges:
		fmt.Fprintf(app.IO.ErrOut, "No changes: cluster %s matches %s\n", p.Cluster, name)
	case p.DryRun:
		fmt.Fprintln(app.IO.ErrOut, "Dry run: nothing changed")
	default:
		fmt.Fprintf(app.IO.ErrOut, "Applied %s to cluster %s\n", name, p.Cluster)
	}
	return nil
}

// planWriter is where a plan is shown: stdout in table form, stderr when
// stdout holds JSON or YAML and the command may ask, else nowhere (nil).
func planWriter(app *App, out *query.Output, ask bool) io.Writer {
	switch {
	case out.TableForm():
		return app.IO.Out
	case ask:
		return app.IO.ErrOut
	}
	return nil
}

// readClusterFile reads and checks a cluster file ("-": standard input);
// it also returns the name errors give it.
func readClusterFile(app *App, path string) (c spec.Cluster, name string, err error) {
	var data []byte
	if path == "-" {
		name = "stdin"
		data, err = io.ReadAll(app.IO.In)
	} else {
		name = path
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return c, name, errs.Usage("-f: reading the cluster file: %v", err)
	}
	c, err = clusterfile.Read(name, data)
	return c, name, err
}

// ExportCmd is `clusterctl export CLUSTER`.
type ExportCmd struct {
	Cluster string `arg:"" optional:"" predictor:"cluster" help:"Cluster name."`
	ClusterFlag
}

func (c *ExportCmd) Run(app *App) error {
	check := c.ClusterFlag.into(&c.Cluster, "export", true)
	if check == nil {
		check = checkNames(c.Cluster, "", "")
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	live, err := cluster.NewObserver(svc).Export(app.Context(), c.Cluster)
	if err != nil {
		return err
	}
	// The file itself, keys in the spec's order, unless --query filters it.
	format := "yaml"
	switch {
	case app.Globals.Query != "":
		return out.Write(app.IO.Out, live, nil)
	case out.Format == "json":
		format = "json"
	}
	b, err := clusterfile.Marshal(live, format)
	if err != nil {
		return err
	}
	_, err = app.IO.Out.Write(b)
	return err
}

// SchemaCmd is `clusterctl schema`.
type SchemaCmd struct{}

func (c *SchemaCmd) Run(app *App) error {
	out, err := app.Output()
	if err != nil {
		return err
	}
	b, err := clusterfile.Schema()
	if err != nil {
		return err
	}
	return writeTemplate(app, out, b)
}
