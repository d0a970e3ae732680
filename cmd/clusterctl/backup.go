package main

import (
	"fmt"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/query"
)

// BackupCmd is `clusterctl backup -j CLUSTER [--wait]`.
type BackupCmd struct {
	Cluster string `short:"j" name:"join" aliases:"cluster" predictor:"cluster" required:"" help:"Cluster whose swarm to back up."`
	Wait    bool   `help:"Wait until the backup is taken (the status snapshot shows it)."`
}

func (c *BackupCmd) Run(app *App) error {
	out, svc, err := app.prepare(checkNames(c.Cluster, "-j/--join", ""))
	if err != nil {
		return err
	}
	r, err := svc.RequestBackup(app.Context(), c.Cluster, c.Wait, app.progress())
	if err != nil {
		return err
	}
	line := fmt.Sprintf("Asked the managers of cluster %s for a backup (request %s); `clusterctl backups -j %s` lists them", r.Cluster, r.RequestID, r.Cluster)
	if r.Taken != nil {
		line = fmt.Sprintf("Backed the swarm of cluster %s up at %s (%s)", r.Cluster, r.Taken.UTC().Format("2006-01-02T15:04:05Z"), took(r.DurationSeconds))
	}
	return writeResult(app, out, r, line)
}

// BackupsCmd is `clusterctl backups -j CLUSTER`.
type BackupsCmd struct {
	Cluster string `short:"j" name:"join" aliases:"cluster" predictor:"cluster" required:"" help:"Cluster whose backups to list."`
}

func (c *BackupsCmd) Run(app *App) error {
	out, svc, err := app.prepare(checkNames(c.Cluster, "-j/--join", ""))
	if err != nil {
		return err
	}
	list, stale, err := svc.Backups(app.Context(), c.Cluster)
	if err != nil {
		return err
	}
	if stale != "" {
		fmt.Fprintf(app.IO.ErrOut, "clusterctl: cluster %s: %s: the backups as it listed them then\n", c.Cluster, stale)
	}
	return out.Write(app.IO.Out, list, func(bool) query.Table { return cluster.BackupsTable(list) })
}
