package main

import (
	"fmt"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/query"
)

// BackupCmd is `clusterctl backup -j CLUSTER [--wait]`.
type BackupCmd struct {
	Cluster string `short:"j" name:"cluster" aliases:"join" placeholder:"NAME" predictor:"cluster" required:"" help:"Cluster whose swarm to back up."`
	Wait    bool   `help:"Wait until the backup is taken (the status snapshot shows it)."`
}

func (c *BackupCmd) Run(app *App) error {
	out, svc, err := app.prepare(checkNames(c.Cluster, "-j/--cluster", ""))
	if err != nil {
		return err
	}
	r, err := cluster.NewRequests(svc).RequestBackup(app.Context(), c.Cluster, c.Wait, app.progress())
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
	Cluster string `short:"j" name:"cluster" aliases:"join" placeholder:"NAME" predictor:"cluster" required:"" help:"Cluster whose backups to list."`
}

func (c *BackupsCmd) Run(app *App) error {
	out, svc, err := app.prepare(checkNames(c.Cluster, "-j/--cluster", ""))
	if err != nil {
		return err
	}
	list, stale, err := cluster.NewRequests(svc).Backups(app.Context(), c.Cluster)
	if err != nil {
		return err
	}
	if stale != "" {
		fmt.Fprintf(app.IO.ErrOut, "clusterctl: cluster %s: %s: the backups as it listed them then\n", c.Cluster, stale)
	}
	return out.Write(app.IO.Out, list, func(bool) query.Table { return cluster.BackupsTable(list) })
}

// RestoreCmd is `clusterctl restore -j CLUSTER --from TIME|latest`.
type RestoreCmd struct {
	Cluster     string `short:"j" name:"cluster" aliases:"join" placeholder:"NAME" predictor:"cluster" required:"" help:"Cluster whose swarm to restore."`
	From        string `required:"" help:"The backup: its time as backups lists it (e.g. 2026-11-28T09:30:00Z), or latest."`
	FromCluster string `name:"from-cluster" help:"The cluster whose managers took the backup, when it is not this one (its swarm's join tokens are rotated after the restore)."`
	Yes         bool   `short:"y" help:"Restore without asking (needed when not on a terminal)."`
	Wait        bool   `help:"Wait until the managers say how the restore ended (the status snapshot shows it)."`
}

func (c *RestoreCmd) Run(app *App) error {
	check := checkNames(c.Cluster, "-j/--cluster", "")
	if check == nil && c.FromCluster != "" {
		check = checkCluster(c.FromCluster, "--from-cluster")
	}
	if _, _, err := cluster.ParseRestoreFrom(c.From); check == nil && err != nil {
		check = errs.Usage("%v", err)
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	r, err := cluster.NewRequests(svc).RequestRestore(app.Context(), cluster.RestoreOptions{Cluster: c.Cluster, From: c.From, FromCluster: c.FromCluster, Yes: c.Yes, Wait: c.Wait}, app.IO.ErrOut)
	if err != nil {
		return err
	}
	line := fmt.Sprintf("Asked the managers of cluster %s to restore the swarm from its backup of %s (request %s)", r.Cluster, r.Backup.Time.UTC().Format("2006-01-02T15:04:05Z"), r.RequestID)
	if r.Outcome != nil {
		line = fmt.Sprintf("Restored the swarm of cluster %s from its backup of %s: the changes since are undone", r.Cluster, r.Backup.Time.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return writeResult(app, out, r, line)
}
