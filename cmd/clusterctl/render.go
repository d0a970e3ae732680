package main

import (
	"encoding/json"
	"fmt"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// RenderCmd is `clusterctl render core|group|node-config`: what
// create-core and add-agents would deploy, printed instead.
type RenderCmd struct {
	Core       RenderCoreCmd       `cmd:"" help:"Print the core stack create-core would deploy: its template, or its parameters and tags (no AWS access)."`
	Group      RenderGroupCmd      `cmd:"" help:"Print the group stack add-agents would deploy: its template, or its parameters and tags; -j reads the live core."`
	NodeConfig RenderNodeConfigCmd `cmd:"" name:"node-config" help:"Print the node configuration (KEY=value lines) add-agents uploads for a group's agents; -j reads the live core."`
	Network    RenderNetworkCmd    `cmd:"" help:"Print the network stack create-network would deploy: its template, or its parameters and tags (no AWS access)."`
	// OperatorPolicy is in operatorpolicy.go.
	OperatorPolicy RenderOperatorPolicyCmd `cmd:"" name:"operator-policy" help:"Print the IAM policy an operator needs for every command (or the read commands only), scoped to a cluster with -j (no AWS access)."`
}

// offlineCluster is the cluster a group is rendered for when -j is not
// given.
const offlineCluster = "core"

// StackForm chooses what render core|group print of the stack: the
// template (neither flag), or what is passed along with it.
type StackForm struct {
	Parameters   bool `name:"parameters" xor:"form" help:"Print the stack name, parameters, tags, capabilities and node configuration upload instead of the template."`
	CLIInputJSON bool `name:"cli-input-json" xor:"form" help:"Print the stack as the input of aws cloudformation create-stack --cli-input-json (template, parameters, tags, capabilities)."`
}

// write prints r in the chosen form, honouring -o and --query.
func (f StackForm) write(app *App, out *query.Output, r *render.Rendered) error {
	switch {
	case f.Parameters:
		return writeDeployment(app, out, cluster.DeploymentOf(r))
	case f.CLIInputJSON:
		in := cluster.StackInputOf(r)
		if out.TableForm() || (out.Format == "json" && app.Globals.Query == "") {
			// JSON is the document's own form, in AWS's order of keys;
			// -o yaml gives it for the AWS CLI's --cli-input-yaml.
			enc := json.NewEncoder(app.IO.Out)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			return enc.Encode(in)
		}
		return out.Write(app.IO.Out, in, nil)
	}
	return writeTemplate(app, out, r.Template)
}

// writeDeployment prints what a stack deploys: tables on a terminal, the
// object under -o json/yaml or --query.
func writeDeployment(app *App, out *query.Output, d *cluster.Deployment) error {
	if out.TableForm() {
		return cluster.WriteDeployment(app.IO.Out, d)
	}
	return out.Write(app.IO.Out, d, nil)
}

// writeTemplate prints a template byte for byte (it is JSON already), or
// converted to YAML, or filtered by --query.
func writeTemplate(app *App, out *query.Output, tpl []byte) error {
	if out.TableForm() || (out.Format == "json" && app.Globals.Query == "") {
		_, err := app.IO.Out.Write(tpl)
		return err
	}
	return out.Write(app.IO.Out, json.RawMessage(tpl), nil)
}

// RenderCoreCmd is `clusterctl render core [NAME]`. It never reads AWS:
// the VPC and subnets are what is given (create-core --dry-run shows the
// ones create-core would look up).
type RenderCoreCmd struct {
	Name string `arg:"" optional:"" help:"Cluster name (default core)."`
	ClusterFlag
	spec.Core
	StackForm
}

func (c *RenderCoreCmd) Run(app *App) error {
	out, err := app.Output()
	if err != nil {
		return err
	}
	if err := c.ClusterFlag.into(&c.Name, "render core", false); err != nil {
		return err
	}
	if c.Name == "" {
		c.Name = offlineCluster
	}
	if err := coreInput(c.Name, &c.Core); err != nil {
		return err
	}
	b, err := app.build()
	if err != nil {
		return err
	}
	r, err := render.Core(c.Name, c.Core, b)
	if err != nil {
		return errs.AsUsage(err)
	}
	return c.StackForm.write(app, out, r)
}

// GroupSource says which core a group is rendered against: the live core
// of -j, or none (offline).
type GroupSource struct {
	Cluster string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" help:"Render joined to this cluster's live core, reading its outputs (needs AWS access), as add-agents would. Without -j: offline, for cluster core."`
	Offline bool   `name:"offline" help:"Render without AWS access, the core's values left empty, for the cluster -j names."`
}

// render checks the output flags, then renders group g (given by flags):
// joined to the live core when -j is given without --offline, else
// offline with empty join values.
func (src GroupSource) render(app *App, g *spec.Group) (*query.Output, *render.Rendered, error) {
	out, err := app.Output()
	if err != nil {
		return nil, nil, err
	}
	name, live := src.Cluster, src.Cluster != "" && !src.Offline
	if name == "" {
		name = offlineCluster
	}
	if err := groupInput(name, "-j/--cluster", g); err != nil {
		return nil, nil, err
	}
	if !live {
		b, err := app.build()
		if err != nil {
			return nil, nil, err
		}
		r, err := render.Group(name, *g, render.Join{}, b)
		return out, r, errs.AsUsage(err)
	}
	svc, err := app.Clients()
	if err != nil {
		return nil, nil, err
	}
	r, err := cluster.NewGroups(svc).RenderGroup(app.Context(), name, *g)
	return out, r, flagError(err, g)
}

// RenderGroupCmd is `clusterctl render group -n GROUP -t TYPE [-j CLUSTER]`.
type RenderGroupCmd struct {
	spec.Group
	GroupSource
	StackForm
}

func (c *RenderGroupCmd) Run(app *App) error {
	out, r, err := c.GroupSource.render(app, &c.Group)
	if err != nil {
		return err
	}
	return c.StackForm.write(app, out, r)
}

// RenderNodeConfigCmd is `clusterctl render node-config -n GROUP -t TYPE
// [-j CLUSTER]`. It takes every flag of render group, so an add-agents
// command line can be rendered as it is; those that do not reach the
// nodes' configuration (sizes, subnets, SSH, key pair, rolling update) are checked
// and leave it as it is.
type RenderNodeConfigCmd struct {
	spec.Group
	GroupSource
}

func (c *RenderNodeConfigCmd) Run(app *App) error {
	out, r, err := c.GroupSource.render(app, &c.Group)
	if err != nil {
		return err
	}
	nc, err := cluster.NodeConfigOf(r)
	if err != nil {
		return err
	}
	if out.TableForm() {
		// The script byte for byte: its SHA-256 is in the key.
		_, err := fmt.Fprint(app.IO.Out, nc.Script)
		return err
	}
	return out.Write(app.IO.Out, nc, nil)
}

// writeDryRun prints the plan of a create-core or add-agents --dry-run.
func writeDryRun(app *App, out *query.Output, d *cluster.Deployment) error {
	if err := writeDeployment(app, out, d); err != nil {
		return err
	}
	what := "created"
	if len(d.Uploads) > 0 {
		what = "created or uploaded"
	}
	fmt.Fprintf(app.IO.ErrOut, "Dry run: nothing %s\n", what)
	return nil
}
