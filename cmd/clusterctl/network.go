package main

import (
	"context"
	"fmt"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/network"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// CreateNetworkCmd is `clusterctl create-network NAME`.
type CreateNetworkCmd struct {
	Name string `arg:"" help:"Network name; the stack is <name>-network."`
	spec.Network
	DryRun bool `name:"dry-run" help:"Show what would be created and what it costs by the hour, and create nothing."`
}

func (c *CreateNetworkCmd) Run(app *App) error {
	c.Network.Name = c.Name
	check := c.Network.Complete()
	out, err := app.Output()
	if err != nil {
		return err
	}
	if check != nil {
		return check
	}
	// A network runs no node agent: the version is all a render takes.
	m := network.Manager{Build: render.Build{Version: app.Version}, Out: app.IO.ErrOut}
	if c.DryRun {
		p, err := m.Plan(c.Network)
		if err != nil {
			return err
		}
		if out.TableForm() {
			network.WritePlan(app.IO.Out, p)
			return nil
		}
		return out.Write(app.IO.Out, p, nil)
	}
	if m.Stacks, err = app.networkStacks(); err != nil {
		return err
	}
	st, err := m.Create(app.Context(), c.Network)
	if err != nil {
		return err
	}
	return out.Write(app.IO.Out, st.Outputs, func(bool) query.Table { return query.KVTable(st.Outputs, "OUTPUT", "VALUE") })
}

// DeleteNetworkCmd is `clusterctl delete-network NAME`.
type DeleteNetworkCmd struct {
	Name string `arg:"" help:"Network name."`
	Yes  bool   `short:"y" help:"Delete without asking (needed when not on a terminal)."`
}

func (c *DeleteNetworkCmd) Run(app *App) error {
	out, err := app.Output()
	if err != nil {
		return err
	}
	if err := spec.CheckNetworkName(c.Name); err != nil {
		return err
	}
	// A network runs no node agent: the version is all a render takes.
	m := network.Manager{Build: render.Build{Version: app.Version}, Out: app.IO.ErrOut}
	if m.Stacks, err = app.networkStacks(); err != nil {
		return err
	}
	if !c.Yes {
		m.Confirm = app.confirm
	}
	done, err := m.Delete(app.Context(), c.Name)
	if err != nil {
		return err
	}
	return writeResult(app, out, done, fmt.Sprintf("Deleted network %s (%s: %s)", c.Name, done.Stack, done.Status))
}

// RenderNetworkCmd is `clusterctl render network NAME`.
type RenderNetworkCmd struct {
	Name string `arg:"" optional:"" help:"Network name (default net)."`
	spec.Network
	StackForm
}

func (c *RenderNetworkCmd) Run(app *App) error {
	out, err := app.Output()
	if err != nil {
		return err
	}
	c.Network.Name = c.Name
	if c.Network.Name == "" {
		c.Network.Name = "net"
	}
	if err := c.Network.Complete(); err != nil {
		return err
	}
	r, err := render.Network(c.Network, render.Build{Version: app.Version})
	if err != nil {
		return errs.AsUsage(err)
	}
	return c.StackForm.write(app, out, r)
}

// networkStacks is the CloudFormation side of the network commands.
func (a *App) networkStacks() (network.Stacks, error) {
	svc, err := a.Clients()
	if err != nil {
		return nil, err
	}
	st, ok := svc.Stacks.(network.Stacks)
	if !ok {
		return nil, fmt.Errorf("stack manager %T cannot list stacks", svc.Stacks)
	}
	return st, nil
}

// confirm asks the operator on the terminal, refusing without one.
func (a *App) confirm(ctx context.Context, question string) error {
	if !a.IO.InTTY {
		return errs.Usage("refusing to %s without confirmation: pass --yes when not on a terminal", question)
	}
	ok, err := a.IO.Confirm(ctx, "Really "+question+"?")
	if err != nil {
		return fmt.Errorf("not confirmed: %w", err)
	}
	if !ok {
		return fmt.Errorf("not confirmed: %w", network.ErrRefused)
	}
	return nil
}
