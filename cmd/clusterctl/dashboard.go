package main

import (
	"errors"
	"fmt"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// describeDashboard adds to d's outputs the console address of the core's
// dashboard, when the core has one (its alarms on, created or updated by
// a clusterctl that makes it): the template has no room for it as an
// output of its own.
func describeDashboard(app *App, svc *cluster.Clients, d *cluster.Description) {
	r, err := svc.Stacks.Resource(app.Context(), d.Stack, names.ResourceDashboard)
	switch {
	case errors.Is(err, stacks.ErrNoResource):
		return
	case err != nil:
		fmt.Fprintf(app.IO.ErrOut, "clusterctl: reading the core's dashboard: %v\n", err)
		return
	case r.Status == "DELETE_COMPLETE" || r.Status == "CREATE_FAILED":
		return
	}
	if d.Outputs == nil {
		d.Outputs = map[string]string{}
	}
	d.Outputs[names.OutputDashboardURL] = names.DashboardURL(svc.Region, names.DashboardName(d.Stack))
}
