package main

import (
	"fmt"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/names"
)

// describeAlarms reads into d the core's alarms and, for --notify EMAIL,
// the state of the e-mail subscription. What cannot be read (no
// cloudwatch:DescribeAlarms or sns:ListSubscriptionsByTopic for the
// operator) leaves the rest of the description standing: null, and why.
func describeAlarms(app *App, d *cluster.Description) {
	var err error
	if d.Alarms, err = app.alarms.Read(app.Context(), d.Stack); err != nil {
		fmt.Fprintf(app.IO.ErrOut, "clusterctl: %v\n", err)
	}
	if email := d.Parameters[names.ParamNotifyEmail]; email != "" {
		if d.Notification, err = app.alarms.Subscription(app.Context(), d.Stack, email); err != nil {
			fmt.Fprintf(app.IO.ErrOut, "clusterctl: %v\n", err)
		}
	}
}
