package main

import (
	"fmt"
	"regexp"

	"github.com/clusterctl/clusterctl/internal/awsx"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/operatorpolicy"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// RenderOperatorPolicyCmd is `clusterctl render operator-policy
// [--read-only] [-j CLUSTER]`: the IAM policy an operator needs. It never
// reads AWS: what it is not told (the account, the region) it leaves as a
// wildcard.
type RenderOperatorPolicyCmd struct {
	ReadOnly bool   `name:"read-only" help:"Only what the read commands need (describe, list-*, events, logs, wait, services, backups, export, secrets list, upgrade --dry-run, use): nothing that changes the cluster."`
	Cluster  string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" help:"Scope the policy to this cluster's resources (default: any cluster's)."`
	Network  string `name:"network" placeholder:"NAME" help:"Scope the network stacks to this network (create-network NAME; default: any network)."`
	Account  string `name:"account" placeholder:"ID" help:"The AWS account id the resources are in (default: any account)."`
	Part     int    `name:"part" placeholder:"N" help:"Print only part N (from 1) of the policy cut into documents that each fit a managed policy (6,144 characters)."`
}

var accountRE = regexp.MustCompile(`^[0-9]{12}$`)

func (c *RenderOperatorPolicyCmd) Run(app *App) error {
	out, err := app.Output()
	if err != nil {
		return err
	}
	if c.Cluster != "" {
		if err := checkCluster(c.Cluster, "-j/--cluster"); err != nil {
			return err
		}
	}
	if c.Network != "" {
		if err := spec.CheckNetworkName(c.Network); err != nil {
			return errs.Usage("--network: %v", err)
		}
	}
	if c.Account != "" && !accountRE.MatchString(c.Account) {
		return errs.Usage("--account %s: an AWS account id is 12 digits", c.Account)
	}
	// The region as the commands would take it, without loading the
	// AWS configuration (a profile's region is not read: pass --region):
	// the flag, the environment, then the default's (clusterctl use).
	region := explicitRegion(app.Globals.Region)
	if region == "" {
		r, err := app.defaults.region("")
		if err != nil {
			return err
		}
		region = r
	}
	if region != "" {
		if err := awsx.CheckRegion(region); err != nil {
			return errs.AsUsage(err)
		}
	}
	doc := operatorpolicy.Build(operatorpolicy.Scope{Cluster: c.Cluster, Network: c.Network, Region: region, Account: c.Account}, c.ReadOnly)
	parts := operatorpolicy.Split(doc, operatorpolicy.ManagedPolicyMax)
	switch {
	case c.Part < 0 || c.Part > len(parts):
		return errs.Usage("--part %d: the policy has %d part(s), 1 to %d", c.Part, len(parts), len(parts))
	case c.Part > 0:
		doc = parts[c.Part-1]
	case len(parts) > 1:
		inline := ""
		if operatorpolicy.Size(doc) <= operatorpolicy.InlineRolePolicyMax {
			inline = "attach it to a role as an inline policy (aws iam put-role-policy), or "
		}
		fmt.Fprintf(app.IO.ErrOut, "Note: the policy is %d characters, over the %d of a managed policy: %sattach it as %d managed policies (--part 1 to --part %d)\n",
			operatorpolicy.Size(doc), operatorpolicy.ManagedPolicyMax, inline, len(parts), len(parts))
	}
	b, err := operatorpolicy.Encode(doc)
	if err != nil {
		return err
	}
	return writeTemplate(app, out, b)
}
