package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/internal/alarms"
	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// DescribeCmd is `clusterctl describe CLUSTER`.
type DescribeCmd struct {
	Cluster string `arg:"" optional:"" predictor:"cluster" help:"Cluster name."`
	ClusterFlag
}

func (c *DescribeCmd) Run(app *App) error {
	check := c.ClusterFlag.into(&c.Cluster, "describe", true)
	if check == nil {
		check = checkNames(c.Cluster, "", "")
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	d, err := cluster.NewInspector(svc).Describe(app.Context(), c.Cluster)
	if err != nil {
		return err
	}
	noteUnread(app, d.Unread)
	describeAlarms(app, d)
	describeDashboard(app, svc, d)
	if out.Format == "table" || out.Format == "wide" {
		if app.Globals.Query == "" {
			if err := cluster.WriteDescription(app.IO.Out, d); err != nil {
				return err
			}
			alarms.WriteNotification(app.IO.Out, d.Notification)
			return alarms.Write(app.IO.Out, d.Alarms, time.Now())
		}
	}
	return out.Write(app.IO.Out, d, nil)
}

// EventsCmd is `clusterctl events CLUSTER [-n GROUP] [--follow]`.
type EventsCmd struct {
	Cluster string `arg:"" optional:"" predictor:"cluster" help:"Cluster name."`
	ClusterFlag
	Group  string `short:"n" name:"name" predictor:"group" help:"A group of the cluster (default: the core stack)."`
	Follow bool   `short:"f" help:"Keep printing new events until the operation in progress ends."`
}

func (c *EventsCmd) Run(app *App) error {
	check := c.ClusterFlag.into(&c.Cluster, "events", true)
	if check == nil {
		check = checkNames(c.Cluster, "", c.Group)
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	if out.TableForm() {
		// One line per event as it comes, so --follow shows progress.
		color := app.IO.Color && app.IO.OutTTY
		return cluster.NewInspector(svc).Events(app.Context(), c.Cluster, c.Group, c.Follow, func(evs []stacks.Event) {
			for _, e := range evs {
				fmt.Fprintln(app.IO.Out, query.EventLine(e, color))
			}
		})
	}
	var all []stacks.Event
	err = cluster.NewInspector(svc).Events(app.Context(), c.Cluster, c.Group, c.Follow, func(evs []stacks.Event) { all = append(all, evs...) })
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// A follow stopped by Ctrl-C or --timeout still prints what it saw.
	if werr := out.Write(app.IO.Out, query.EventsFrom(all), nil); werr != nil {
		return werr
	}
	return err
}
