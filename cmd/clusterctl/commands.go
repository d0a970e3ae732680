package main

import (
	"fmt"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// CLI is the command tree.
type CLI struct {
	Globals

	CreateCore  CreateCoreCmd  `cmd:"" name:"create-core" help:"Create a cluster's core stack (control node, bucket, security groups, IAM) and print its outputs."`
	AddAgents   AddAgentsCmd   `cmd:"" name:"add-agents" help:"Create an agent group joined to a cluster's core and print its nodes."`
	ListNodes   ListNodesCmd   `cmd:"" name:"list-nodes" help:"List the nodes of a cluster (all clusters without -j)."`
	ListGroups  ListGroupsCmd  `cmd:"" name:"list-groups" help:"List agent groups with status, capacity, labels and join state."`
	UpdateGroup UpdateGroupCmd `cmd:"" name:"update-group" help:"Change an agent group through a change set; unspecified values stay."`
	RemoveGroup RemoveGroupCmd `cmd:"" name:"remove-group" help:"Delete one agent group's stack."`
	DeleteCore  DeleteCoreCmd  `cmd:"" name:"delete-core" help:"Delete a cluster's core stack (refused while groups exist unless --cascade)."`
	Describe    DescribeCmd    `cmd:"" help:"Show a cluster: core status, outputs, parameters, and its groups with their health."`
	Events      EventsCmd      `cmd:"" help:"Print the stack events of a cluster's core or of one group."`
	Wait        WaitCmd        `cmd:"" help:"Re-attach to the operations in progress on a cluster (core and busy groups) or one group, deletions included, and return their outcome."`
	Unlock      UnlockCmd      `cmd:"" help:"Break a lease left by a run that died, by its id."`
	Render      RenderCmd      `cmd:"" help:"Print the CloudFormation template that would be deployed (no AWS access)."`
	VersionCmd  VersionCmd     `cmd:"" name:"version" help:"Print the version."`
}

// coreFlags are shared by create-core and render core.
type coreFlags struct {
	InstanceType string   `name:"instance-type" default:"t3.medium" help:"Control node instance type."`
	ImageID      string   `name:"image-id" help:"AMI id or SSM parameter path (default: the region's Amazon Linux 2023)."`
	KeyName      string   `name:"key-name" help:"EC2 key pair for the control node."`
	SSHCIDR      string   `name:"ssh-cidr" help:"Open SSH to this CIDR (closed by default)."`
	VpcID        string   `name:"vpc-id" help:"VPC (default: the account's default VPC)."`
	SubnetIDs    []string `name:"subnet-ids" help:"Subnets, comma-separated (default: the VPC's default subnets)."`
}

func (f coreFlags) options(name string) cluster.CoreOptions {
	return cluster.CoreOptions{Name: name, InstanceType: f.InstanceType, ImageID: f.ImageID, KeyName: f.KeyName, SSHCIDR: f.SSHCIDR, VpcID: f.VpcID, SubnetIDs: f.SubnetIDs}
}

// CreateCoreCmd is `clusterctl create-core NAME`.
type CreateCoreCmd struct {
	Name string `arg:"" help:"Cluster name (= core stack name)."`
	coreFlags
	NoRollback bool `name:"no-rollback" help:"Keep a failed stack for debugging."`
}

func (c *CreateCoreCmd) Run(app *App) error {
	o := c.options(c.Name)
	o.NoRollback = c.NoRollback
	out, svc, err := app.prepare(o.Validate())
	if err != nil {
		return err
	}
	st, err := svc.CreateCore(app.Context(), o)
	if err != nil {
		return err
	}
	return out.Write(app.IO.Out, st.Outputs, func(bool) query.Table { return query.KVTable(st.Outputs, "OUTPUT", "VALUE") })
}

// groupFlags are shared by add-agents and render group.
type groupFlags struct {
	Group        string   `short:"n" name:"name" required:"" help:"Group name; the stack is <cluster>-<group>."`
	InstanceType string   `short:"t" name:"instance-type" required:"" help:"Instance type of every node in the group."`
	Count        int      `short:"c" name:"count" default:"1" help:"Number of nodes (desired capacity)."`
	Min          *int     `name:"min" help:"Minimum size (default 0)."`
	Max          *int     `name:"max" help:"Maximum size (default: the count + 1, room for rolling updates to keep capacity)."`
	Labels       []string `short:"m" name:"labels" sep:"none" help:"Labels key=value[,key=value] (repeatable)."`
	ImageID      string   `name:"image-id" help:"AMI id or SSM parameter path (default: Amazon Linux 2023 for the type's architecture)."`
	VolumeSize   int      `name:"volume-size" default:"30" help:"Root volume size in GiB."`
	SubnetIDs    []string `name:"subnet-ids" help:"Subnets, comma-separated (default: the core's)."`
	SSHCIDR      string   `name:"ssh-cidr" help:"Open SSH to the group's nodes from this CIDR (closed by default)."`
}

func (f groupFlags) options(clusterName string) cluster.GroupOptions {
	return cluster.GroupOptions{Cluster: clusterName, Group: f.Group, InstanceType: f.InstanceType, Count: f.Count, Min: f.Min, Max: f.Max,
		Labels: f.Labels, ImageID: f.ImageID, VolumeSize: f.VolumeSize, SubnetIDs: f.SubnetIDs, SSHCIDR: f.SSHCIDR}
}

// AddAgentsCmd is `clusterctl add-agents -n GROUP -t TYPE -j CLUSTER`.
type AddAgentsCmd struct {
	groupFlags
	Cluster       string `short:"j" name:"join" required:"" help:"Cluster (core stack) to join."`
	NoRollback    bool   `name:"no-rollback" help:"Keep a failed stack for debugging."`
	ReplaceFailed bool   `name:"replace-failed" help:"Delete a dead stack of this group (rolled back or failed) and create it again."`
}

func (c *AddAgentsCmd) Run(app *App) error {
	o := c.options(c.Cluster)
	o.NoRollback, o.ReplaceFailed = c.NoRollback, c.ReplaceFailed
	out, svc, err := app.prepare(specErr(o.Spec(app.Version)))
	if err != nil {
		return err
	}
	nodes, err := svc.AddAgents(app.Context(), o)
	if err != nil {
		return err
	}
	return writeNodes(app, out, nodes)
}

// ListNodesCmd is `clusterctl list-nodes`.
type ListNodesCmd struct {
	Cluster string `short:"j" name:"join" help:"Cluster (default: every cluster in the region)."`
	Group   string `short:"n" name:"name" help:"Only this group ('control' for the control node)."`
}

func (c *ListNodesCmd) Run(app *App) error {
	out, svc, err := app.prepare(cluster.CheckNames(c.Cluster, c.Group))
	if err != nil {
		return err
	}
	nodes, err := query.ListNodes(app.Context(), svc.EC2, c.Cluster, c.Group)
	if err != nil {
		return err
	}
	return writeNodes(app, out, nodes)
}

func writeNodes(app *App, out *query.Output, nodes []query.Node) error {
	if nodes == nil {
		nodes = []query.Node{}
	}
	return out.Write(app.IO.Out, nodes, func(wide bool) query.Table { return query.NodesTable(nodes, wide) })
}

// ListGroupsCmd is `clusterctl list-groups`.
type ListGroupsCmd struct {
	Cluster string `short:"j" name:"join" help:"Cluster (default: every cluster in the region)."`
}

func (c *ListGroupsCmd) Run(app *App) error {
	out, svc, err := app.prepare(cluster.CheckNames(c.Cluster, ""))
	if err != nil {
		return err
	}
	groups, err := query.ListGroups(app.Context(), svc.CFN, svc.ASG, c.Cluster)
	if err != nil {
		return err
	}
	return out.Write(app.IO.Out, groups, func(wide bool) query.Table { return query.GroupsTable(groups, wide) })
}

// UpdateGroupCmd is `clusterctl update-group -n GROUP -j CLUSTER`.
type UpdateGroupCmd struct {
	Group        string   `short:"n" name:"name" required:"" help:"Group name."`
	Cluster      string   `short:"j" name:"join" required:"" help:"Cluster the group belongs to; its current outputs are re-read."`
	InstanceType string   `short:"t" name:"instance-type" help:"New instance type."`
	Count        *int     `short:"c" name:"count" help:"New desired capacity."`
	Min          *int     `name:"min" help:"New minimum size."`
	Max          *int     `name:"max" help:"New maximum size."`
	Labels       []string `short:"m" name:"labels" sep:"none" help:"New labels key=value[,key=value]; replace the previous set."`
	ImageID      string   `name:"image-id" help:"New AMI id or SSM parameter path."`
	VolumeSize   *int     `name:"volume-size" help:"New root volume size in GiB."`
	SubnetIDs    []string `name:"subnet-ids" help:"New subnets, comma-separated."`
	MaxBatch     *int     `name:"max-batch" help:"Rolling update: nodes replaced at once."`
	MinInService *int     `name:"min-in-service" help:"Rolling update: nodes kept in service."`
	DryRun       bool     `name:"dry-run" help:"Show the plan and change nothing."`
	// ContinueRollback recovers UPDATE_ROLLBACK_FAILED; it takes no changes.
	ContinueRollback bool `name:"continue-rollback" help:"Continue a failed update rollback (UPDATE_ROLLBACK_FAILED) instead of updating."`
}

func (c *UpdateGroupCmd) changes() bool {
	return c.InstanceType != "" || c.Count != nil || c.Min != nil || c.Max != nil || len(c.Labels) > 0 || c.ImageID != "" ||
		c.VolumeSize != nil || len(c.SubnetIDs) > 0 || c.MaxBatch != nil || c.MinInService != nil || c.DryRun
}

func (c *UpdateGroupCmd) Run(app *App) error {
	check := cluster.CheckNames(c.Cluster, c.Group)
	if check == nil && c.ContinueRollback && c.changes() {
		check = errs.Usage("--continue-rollback takes no other changes: continue the rollback first, then update")
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	if c.ContinueRollback {
		st, err := svc.ContinueRollback(app.Context(), c.Cluster, c.Group)
		if err != nil {
			return err
		}
		fmt.Fprintf(app.IO.ErrOut, "Rollback of %s continued: %s\n", st.Name, st.Status)
		return nil
	}
	stack := render.GroupStackName(c.Cluster, c.Group)
	table := out.Format == "table" || out.Format == "wide"
	opts := cluster.UpdateOptions{
		Cluster: c.Cluster, Group: c.Group, InstanceType: c.InstanceType, Count: c.Count, Min: c.Min, Max: c.Max,
		Labels: c.Labels, ImageID: c.ImageID, VolumeSize: c.VolumeSize, SubnetIDs: c.SubnetIDs,
		MaxBatch: c.MaxBatch, MinInService: c.MinInService, DryRun: c.DryRun,
	}
	if table && app.Globals.Query == "" {
		// The plan comes first, so the operator sees what is replaced
		// while it happens.
		opts.OnPlan = func(p *stacks.Plan) error {
			fmt.Fprintf(app.IO.ErrOut, "Plan for %s:\n", stack)
			return query.WriteTable(app.IO.Out, planTable(p.Changes))
		}
	}
	res, err := svc.UpdateGroup(app.Context(), opts)
	if err != nil {
		return err
	}
	switch {
	case res.NoOp:
		fmt.Fprintf(app.IO.ErrOut, "No changes: %s already matches the requested configuration\n", stack)
	case res.Applied:
		fmt.Fprintf(app.IO.ErrOut, "Updated %s\n", stack)
	default:
		fmt.Fprintf(app.IO.ErrOut, "Dry run: nothing changed\n")
	}
	if opts.OnPlan != nil {
		return nil
	}
	v := planView{Stack: stack, NoChanges: res.NoOp, Applied: res.Applied, Changes: []changeView{}}
	var changes []stacks.Change
	if res.Plan != nil {
		changes = res.Plan.Changes
	}
	for _, c := range changes {
		v.Changes = append(v.Changes, changeView{Action: c.Action, LogicalID: c.LogicalID, ResourceType: c.ResourceType, Replacement: c.Replacement})
	}
	return out.Write(app.IO.Out, v, func(bool) query.Table { return planTable(changes) })
}

// RemoveGroupCmd is `clusterctl remove-group -n GROUP -j CLUSTER`.
type RemoveGroupCmd struct {
	Group        string `short:"n" name:"name" required:"" help:"Group name."`
	Cluster      string `short:"j" name:"join" required:"" help:"Cluster the group belongs to."`
	Yes          bool   `short:"y" help:"Do not ask for confirmation (needed when not on a terminal)."`
	RetainFailed bool   `name:"retain-failed" help:"After a failed delete (DELETE_FAILED), delete the stack keeping the resources that could not be deleted."`
}

func (c *RemoveGroupCmd) Run(app *App) error {
	_, svc, err := app.prepare(cluster.CheckNames(c.Cluster, c.Group))
	if err != nil {
		return err
	}
	if err := svc.RemoveGroup(app.Context(), cluster.RemoveOptions{Cluster: c.Cluster, Group: c.Group, Yes: c.Yes, RetainFailed: c.RetainFailed}); err != nil {
		return err
	}
	fmt.Fprintf(app.IO.ErrOut, "Removed group %s of cluster %s\n", c.Group, c.Cluster)
	return nil
}

// DeleteCoreCmd is `clusterctl delete-core NAME`.
type DeleteCoreCmd struct {
	Name         string `arg:"" help:"Cluster name (= core stack name)."`
	Cascade      bool   `help:"Remove the cluster's groups first."`
	Yes          bool   `short:"y" help:"Do not ask for confirmation (needed when not on a terminal)."`
	RetainFailed bool   `name:"retain-failed" help:"After a failed delete (DELETE_FAILED), delete the stack keeping the resources that could not be deleted."`
}

func (c *DeleteCoreCmd) Run(app *App) error {
	_, svc, err := app.prepare(cluster.CheckNames(c.Name, ""))
	if err != nil {
		return err
	}
	if err := svc.DeleteCore(app.Context(), cluster.DeleteCoreOptions{Name: c.Name, Cascade: c.Cascade, Yes: c.Yes, RetainFailed: c.RetainFailed}); err != nil {
		return err
	}
	fmt.Fprintf(app.IO.ErrOut, "Deleted cluster %s\n", c.Name)
	return nil
}

// DescribeCmd is `clusterctl describe CLUSTER`.
type DescribeCmd struct {
	Cluster string `arg:"" help:"Cluster name."`
}

func (c *DescribeCmd) Run(app *App) error {
	out, svc, err := app.prepare(cluster.CheckNames(c.Cluster, ""))
	if err != nil {
		return err
	}
	d, err := svc.Describe(app.Context(), c.Cluster)
	if err != nil {
		return err
	}
	if out.Format == "table" || out.Format == "wide" {
		if app.Globals.Query == "" {
			return cluster.WriteDescription(app.IO.Out, d)
		}
	}
	return out.Write(app.IO.Out, d, nil)
}

// EventsCmd is `clusterctl events CLUSTER [-n GROUP] [--follow]`.
type EventsCmd struct {
	Cluster string `arg:"" help:"Cluster name."`
	Group   string `short:"n" name:"name" help:"A group of the cluster (default: the core stack)."`
	Follow  bool   `short:"f" help:"Keep printing new events until the operation in progress ends."`
}

func (c *EventsCmd) Run(app *App) error {
	_, svc, err := app.prepare(cluster.CheckNames(c.Cluster, c.Group))
	if err != nil {
		return err
	}
	return svc.Events(app.Context(), c.Cluster, c.Group, c.Follow, app.IO.Out)
}

// WaitCmd is `clusterctl wait CLUSTER [-n GROUP]`.
type WaitCmd struct {
	Cluster string `arg:"" help:"Cluster name."`
	Group   string `short:"n" name:"name" help:"A group of the cluster (default: the core stack)."`
}

func (c *WaitCmd) Run(app *App) error {
	_, svc, err := app.prepare(cluster.CheckNames(c.Cluster, c.Group))
	if err != nil {
		return err
	}
	sts, err := svc.Wait(app.Context(), c.Cluster, c.Group)
	for _, st := range sts {
		if st != nil {
			fmt.Fprintf(app.IO.ErrOut, "%s: %s\n", st.Name, st.Status)
		}
	}
	return err
}

// RenderCmd is `clusterctl render core|group`.
type RenderCmd struct {
	Core  RenderCoreCmd  `cmd:"" help:"Print the core template."`
	Group RenderGroupCmd `cmd:"" help:"Print an agent group template."`
}

// RenderCoreCmd is `clusterctl render core`.
type RenderCoreCmd struct {
	Name string `arg:"" optional:"" default:"core" help:"Cluster name."`
	coreFlags
}

func (c *RenderCoreCmd) Run(app *App) error {
	o := c.options(c.Name)
	if err := o.Validate(); err != nil {
		return err
	}
	r, err := render.Core(o.Spec(app.Version))
	if err != nil {
		return errs.AsUsage(err)
	}
	_, err = app.IO.Out.Write(r.Template)
	return err
}

// RenderGroupCmd is `clusterctl render group -n GROUP -t TYPE`.
type RenderGroupCmd struct {
	groupFlags
	Cluster string `short:"j" name:"join" default:"core" help:"Cluster name."`
}

func (c *RenderGroupCmd) Run(app *App) error {
	spec, err := c.options(c.Cluster).Spec(app.Version)
	if err != nil {
		return err
	}
	r, err := render.Group(spec)
	if err != nil {
		return errs.AsUsage(err)
	}
	_, err = app.IO.Out.Write(r.Template)
	return err
}

// VersionCmd is `clusterctl version`.
type VersionCmd struct{}

func (c *VersionCmd) Run(app *App) error {
	_, err := fmt.Fprintf(app.IO.Out, "clusterctl %s\n", app.Version)
	return err
}

// planView is the JSON form of update-group's result.
type planView struct {
	Stack     string       `json:"stack"`
	Changes   []changeView `json:"changes"`
	NoChanges bool         `json:"noChanges"`
	Applied   bool         `json:"applied"`
}

type changeView struct {
	Action       string `json:"action"`
	LogicalID    string `json:"logicalId"`
	ResourceType string `json:"resourceType"`
	Replacement  string `json:"replacement"`
}

func planTable(changes []stacks.Change) query.Table {
	t := query.Table{Header: []string{"ACTION", "RESOURCE", "TYPE", "REPLACEMENT"}}
	for _, c := range changes {
		t.Rows = append(t.Rows, []string{c.Action, c.LogicalID, c.ResourceType, replacement(c)})
	}
	return t
}

func replacement(c stacks.Change) string {
	switch c.Replacement {
	case "True":
		return "replaced"
	case "Conditional":
		return "maybe replaced"
	case "False":
		return "in place"
	}
	return "-"
}

func specErr(_ render.GroupSpec, err error) error { return err }
