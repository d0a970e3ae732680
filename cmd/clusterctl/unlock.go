package main

import (
	"fmt"
	"regexp"
	"time"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/lease"
)

// UnlockCmd is `clusterctl unlock CLUSTER [--group G] --id ID`.
type UnlockCmd struct {
	Cluster string `arg:"" optional:"" predictor:"cluster" help:"Cluster name."`
	ClusterFlag
	Group string `short:"n" name:"group" predictor:"group" help:"The group whose lease to break (default: the core's and cluster's lease)."`
	ID    string `name:"id" required:"" help:"Id of the lease to break, as the refusal that named it says."`
}

var leaseIDRE = regexp.MustCompile(`^[0-9a-f]{12}$`)

func (c *UnlockCmd) Run(app *App) error {
	check := c.ClusterFlag.into(&c.Cluster, "unlock", true)
	if check == nil {
		check = checkNames(c.Cluster, "", c.Group)
	}
	if check == nil && !leaseIDRE.MatchString(c.ID) {
		check = errs.Usage("invalid lease id %q: want the 12 hex digits a refusal names", c.ID)
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	bucket, err := cluster.NewFinder(svc).Bucket(app.Context(), c.Cluster)
	if err != nil {
		return err
	}
	scope := lease.Core()
	if c.Group != "" {
		scope = lease.Group(c.Group)
	}
	rec, err := lease.New(app.s3, bucket, lease.Options{Cluster: c.Cluster}).Break(app.Context(), scope, c.ID)
	if err != nil {
		return err
	}
	// The lease broken, as its record: who held it, for what, since when.
	return writeResult(app, out, rec, fmt.Sprintf("Broke lease %s on %s, held by %s for `%s` since %s; if that run is still alive, it stops at its next renewal",
		rec.ID, rec.Scope().Of(c.Cluster), rec.Holder, rec.Command, rec.Started.UTC().Format(time.DateTime+" UTC")))
}
