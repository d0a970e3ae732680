package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// SecretsCmd is `clusterctl secrets`: list (the default), add, remove.
type SecretsCmd struct {
	List   SecretsListCmd   `cmd:"" default:"withargs" help:"List the declared secrets with their versions in AWS and in the swarm, last sync, services and problem (never a value): clusterctl secrets -j prod."`
	Add    SecretsAddCmd    `cmd:"" help:"Declare a secret the managers keep in step with AWS (an update of the core): clusterctl secrets add -j prod db_password --from arn:aws:secretsmanager:REGION:ACCOUNT:secret:prod/db-AbC123 --key password."`
	Remove SecretsRemoveCmd `cmd:"" help:"Stop syncing a secret (an update of the core); its swarm secret goes once no service uses it: clusterctl secrets remove -j prod db_password."`
}

// SecretsListCmd is `clusterctl secrets -j CLUSTER`.
type SecretsListCmd struct {
	Cluster string `short:"j" name:"cluster" aliases:"join" placeholder:"NAME" predictor:"cluster" required:"" help:"Cluster whose secrets to list."`
}

func (c *SecretsListCmd) Run(app *App) error {
	out, svc, err := app.prepare(checkCluster(c.Cluster, "-j/--cluster"))
	if err != nil {
		return err
	}
	l, err := cluster.NewRequests(svc).Secrets(app.Context(), c.Cluster)
	if err != nil {
		return err
	}
	if l.Note != "" {
		fmt.Fprintf(app.IO.ErrOut, "clusterctl: cluster %s: %s\n", c.Cluster, l.Note)
	}
	return out.Write(app.IO.Out, l.Secrets, func(bool) query.Table { return query.SecretsTable(l.Secrets, l.Now) })
}

// secretsChange is what add and remove share: an update of the core
// whose only change is its secrets.
type secretsChange struct {
	Cluster string `short:"j" name:"cluster" aliases:"join" placeholder:"NAME" predictor:"cluster" required:"" help:"Cluster (core stack) whose secrets to change."`
	DryRun  bool   `name:"dry-run" help:"Show the plan and change nothing."`
	Yes     bool   `short:"y" help:"Apply the plan without asking (needed when not on a terminal)."`
}

func (c secretsChange) run(app *App, check error, change func(spec.Secrets) (spec.Secrets, error)) error {
	if check == nil {
		check = checkCluster(c.Cluster, "-j/--cluster")
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	var refusal error
	opts := cluster.CoreUpdateOptions{
		Cluster: c.Cluster, DryRun: c.DryRun, Yes: c.Yes,
		Desired: func(deployed spec.Core) spec.Core {
			d := deployed
			d.Secrets, refusal = change(slices.Clone(deployed.Secrets))
			if refusal != nil {
				return deployed
			}
			return d
		},
	}
	ask := !c.Yes && !c.DryRun && app.IO.InTTY
	return runUpdate(app, out, c.Cluster, ask, c.DryRun, func(onPlan func(*cluster.Plan) error) (*cluster.UpdateResult, error) {
		opts.OnPlan = func(p *cluster.Plan) error {
			if refusal != nil {
				return refusal
			}
			if onPlan != nil {
				return onPlan(p)
			}
			return nil
		}
		res, err := cluster.NewCore(svc).UpdateCore(app.Context(), opts)
		if refusal != nil {
			return nil, refusal
		}
		return res, err
	})
}

// SecretsAddCmd is `clusterctl secrets add -j CLUSTER NAME --from SOURCE`.
type SecretsAddCmd struct {
	Name string `arg:"" help:"Swarm secret name: services mount it at /run/secrets/NAME."`
	From string `name:"from" required:"" placeholder:"ARN|ssm:/PATH" help:"Source: a Secrets Manager secret's full ARN, or ssm:/path/name of a Parameter Store parameter (SecureString or String)."`
	Key  string `name:"key" placeholder:"FIELD" help:"Take this field of a JSON secret (default: the whole value)."`
	secretsChange
}

func (c *SecretsAddCmd) Run(app *App) error {
	s := spec.Secret{Name: c.Name, From: c.From, Key: c.Key}
	check := secretsError(spec.Core{Secrets: spec.Secrets{s}}.CheckGiven([]string{"secrets"}))
	return c.run(app, check, func(list spec.Secrets) (spec.Secrets, error) {
		if i := list.Find(c.Name); i >= 0 {
			if list[i] == s {
				return list, nil // no change: the plan says so
			}
			list[i] = s // a new source or key for the same name
			return list, nil
		}
		return append(list, s), nil
	})
}

// SecretsRemoveCmd is `clusterctl secrets remove -j CLUSTER NAME`.
type SecretsRemoveCmd struct {
	Name string `arg:"" help:"The declared secret to stop syncing."`
	secretsChange
}

func (c *SecretsRemoveCmd) Run(app *App) error {
	return c.run(app, nil, func(list spec.Secrets) (spec.Secrets, error) {
		i := list.Find(c.Name)
		if i < 0 {
			return nil, errs.Usage("cluster %s declares no secret %q (clusterctl secrets -j %s lists them)", c.Cluster, c.Name, c.Cluster)
		}
		return slices.Delete(list, i, i+1), nil
	})
}

// secretsError says a refused secret by its flag rather than its path in
// a file.
func secretsError(err error) error {
	var fe *spec.FieldError
	if err == nil || !errors.As(err, &fe) {
		return err
	}
	msg := strings.TrimPrefix(fe.Error(), fe.Path+": ")
	for suffix, what := range map[string]string{".name": "NAME", ".from": "--from", ".key": "--key"} {
		if strings.HasSuffix(fe.Path, suffix) {
			return errs.Usage("%s: %s", what, msg)
		}
	}
	return err
}
