package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/alecthomas/kong"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// CLI is the command tree.
type CLI struct {
	Globals

	CreateCore    CreateCoreCmd    `cmd:"" name:"create-core" help:"Create a cluster's core stack (managers, bucket, security groups, IAM) and print its outputs."`
	UpdateCore    UpdateCoreCmd    `cmd:"" name:"update-core" help:"Change a cluster's control plane through a change set; unspecified values stay, managers are replaced one at a time."`
	AddAgents     AddAgentsCmd     `cmd:"" name:"add-agents" help:"Create an agent group joined to a cluster's core and print its nodes."`
	ListNodes     ListNodesCmd     `cmd:"" name:"list-nodes" help:"List the nodes of a cluster (all clusters without -j)."`
	ListGroups    ListGroupsCmd    `cmd:"" name:"list-groups" help:"List agent groups with status, capacity, labels and join state."`
	DrainNode     DrainNodeCmd     `cmd:"" name:"drain-node" help:"Drain a node of a cluster (its tasks move to other nodes), or make it active again (--undo), and wait until the swarm shows it."`
	ReplaceNode   ReplaceNodeCmd   `cmd:"" name:"replace-node" help:"Replace a node: terminate it through its Auto Scaling group, drained first, and wait until its replacement is Ready in the swarm."`
	Backup        BackupCmd        `cmd:"" help:"Ask a cluster's managers to back the swarm up now (--wait: until it is taken)."`
	Backups       BackupsCmd       `cmd:"" help:"List the backups of a cluster's swarm: time, age, size, swarm, managers, taken by."`
	Restore       RestoreCmd       `cmd:"" help:"Restore a cluster's swarm from one of its backups, undoing every change since (plans and asks first; --wait: until the managers say how it ended)."`
	UpdateGroup   UpdateGroupCmd   `cmd:"" name:"update-group" help:"Change an agent group through a change set; unspecified values stay."`
	Upgrade       UpgradeCmd       `cmd:"" help:"Bring every node of a cluster to the current image, Docker Engine and node agent: a backup, then the core and the groups rolled and validated one after the other (--dry-run: the plan)."`
	RemoveGroup   RemoveGroupCmd   `cmd:"" name:"remove-group" help:"Delete one agent group's stack."`
	DeleteCore    DeleteCoreCmd    `cmd:"" name:"delete-core" help:"Delete a cluster's core stack (refused while groups exist unless --cascade)."`
	CreateNetwork CreateNetworkCmd `cmd:"" name:"create-network" help:"Create a network for clusters: a VPC with public and private subnets over up to three zones, NAT or VPC endpoints (create-core --network joins it)."`
	DeleteNetwork DeleteNetworkCmd `cmd:"" name:"delete-network" help:"Delete a network (refused while a cluster uses it)."`
	Apply         ApplyCmd         `cmd:"" help:"Make a cluster what a cluster file declares: plan, then create its network and core if missing, and create, update or (--prune) delete groups in parallel."`
	Export        ExportCmd        `cmd:"" help:"Print the cluster file of a live cluster (YAML; -o json for JSON)."`
	Schema        SchemaCmd        `cmd:"" help:"Print the JSON Schema of cluster files, for editors."`
	Describe      DescribeCmd      `cmd:"" help:"Show a cluster: core status, outputs, parameters, and its groups with their health."`
	Events        EventsCmd        `cmd:"" help:"Print the stack events of a cluster's core or of one group."`
	Logs          LogsCmd          `cmd:"" help:"Print the logs of a cluster's services and nodes from its CloudWatch log group; --follow for new ones."`
	Wait          WaitCmd          `cmd:"" help:"Re-attach to the operations in progress on a cluster (core and busy groups) or one group, deletions included, and return their outcome."`
	Unlock        UnlockCmd        `cmd:"" help:"Break a lease left by a run that died, by its id."`
	Render        RenderCmd        `cmd:"" help:"Print what would be deployed: a template, its parameters and tags, a node configuration."`
	VersionCmd    VersionCmd       `cmd:"" name:"version" help:"Print the version."`
	Completion    CompletionCmd    `cmd:"" help:"Print the shell completion script: source <(clusterctl completion bash)."`
	Help          HelpCmd          `cmd:"" help:"Explain a command (clusterctl help update-group), or list them all."`

	// Using the swarm from where the operator sits.
	Docker       DockerCmd       `cmd:"" help:"Run a docker command on the swarm's leader through Systems Manager: clusterctl docker -j CLUSTER -- service ls."`
	Shell        ShellCmd        `cmd:"" help:"Open a Session Manager shell on a node (a manager with -j CLUSTER)."`
	Services     ServicesCmd     `cmd:"" help:"List the swarm's services with their replicas, image, ports and where their tasks run."`
	Secrets      SecretsCmd      `cmd:"" help:"Swarm secrets the managers keep in step with Secrets Manager and Parameter Store: list them (clusterctl secrets -j CLUSTER), add or remove one."`
	ListClusters ListClustersCmd `cmd:"" name:"list-clusters" help:"List every cluster in the region with status, health, managers, groups and nodes."`
	Use          UseCmd          `cmd:"" help:"Set the cluster (and region) commands act on when no -j names one: clusterctl use CLUSTER; alone, print it; --clear forgets it."`
}

// CreateCoreCmd is `clusterctl create-core NAME`.
type CreateCoreCmd struct {
	Name string `arg:"" optional:"" help:"Cluster name (= core stack name)."`
	ClusterFlag
	spec.Core
	NoRollback bool `name:"no-rollback" help:"Keep a failed stack for debugging."`
	DryRun     bool `name:"dry-run" help:"Show what would be created (stack, template size, parameters, tags) and create nothing."`
}

func (c *CreateCoreCmd) Run(app *App) error {
	check := c.ClusterFlag.into(&c.Name, "create-core", true)
	if check == nil {
		check = coreInput(c.Name, &c.Core)
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	if c.DryRun {
		d, err := cluster.NewCore(svc).PlanCore(app.Context(), c.Name, c.Core)
		if err != nil {
			return flagError(err, &c.Core)
		}
		return writeDryRun(app, out, d)
	}
	st, err := cluster.NewCore(svc).CreateCore(app.Context(), c.Name, c.Core, cluster.CreateOptions{NoRollback: c.NoRollback})
	if err != nil {
		return flagError(err, &c.Core)
	}
	return out.Write(app.IO.Out, st.Outputs, func(bool) query.Table { return query.KVTable(st.Outputs, "OUTPUT", "VALUE") })
}

// UpdateCoreCmd is `clusterctl update-core NAME`: the settings given
// replace the deployed ones, the others stay.
type UpdateCoreCmd struct {
	Name string `arg:"" optional:"" predictor:"cluster" help:"Cluster name (= core stack name)."`
	ClusterFlag
	spec.Core
	DryRun bool `name:"dry-run" help:"Show the plan and change nothing."`
	Yes    bool `short:"y" help:"Apply the plan without asking (needed when not on a terminal)."`
	// ContinueRollback recovers UPDATE_ROLLBACK_FAILED; it takes no changes.
	ContinueRollback bool `name:"continue-rollback" help:"Continue a failed update rollback (UPDATE_ROLLBACK_FAILED) instead of updating."`
}

func (c *UpdateCoreCmd) Run(app *App, kctx *kong.Context) error {
	changes := given(kctx, &c.Core)
	check := c.ClusterFlag.into(&c.Name, "update-core", true)
	if check == nil {
		check = checkCluster(c.Name, "")
	}
	if check == nil {
		check = flagError(c.Core.CheckGiven(changes), &c.Core)
	}
	if check == nil && c.ContinueRollback && (len(changes) > 0 || c.DryRun) {
		check = errs.Usage("--continue-rollback takes no other changes: continue the rollback first, then update")
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	if c.ContinueRollback {
		return continueRollback(app, out, svc, c.Name, "")
	}
	opts := cluster.CoreUpdateOptions{
		Cluster: c.Name, DryRun: c.DryRun, Yes: c.Yes,
		Desired: func(deployed spec.Core) spec.Core { return deployed.Update(c.Core, changes) },
	}
	// Asked on a terminal for -o json: the question needs the plan, on
	// stderr, as stdout holds the result alone.
	ask := !c.Yes && !c.DryRun && app.IO.InTTY
	return runUpdate(app, out, c.Name, ask, c.DryRun, func(onPlan func(*cluster.Plan) error) (*cluster.UpdateResult, error) {
		opts.OnPlan = onPlan
		res, err := cluster.NewCore(svc).UpdateCore(app.Context(), opts)
		return res, flagError(err, &c.Core)
	})
}

// AddAgentsCmd is `clusterctl add-agents -n GROUP -t TYPE -j CLUSTER`.
type AddAgentsCmd struct {
	spec.Group
	Cluster       string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" required:"" help:"Cluster (core stack) to join."`
	NoRollback    bool   `name:"no-rollback" help:"Keep a failed stack for debugging."`
	ReplaceFailed bool   `name:"replace-failed" help:"Delete a dead stack of this group (rolled back or failed) and create it again."`
	DryRun        bool   `name:"dry-run" help:"Show what would be created and uploaded (stack, template size, parameters, tags, node configuration) and change nothing."`
}

func (c *AddAgentsCmd) Run(app *App) error {
	out, svc, err := app.prepare(groupInput(c.Cluster, "-j/--cluster", &c.Group))
	if err != nil {
		return err
	}
	if c.DryRun {
		d, err := cluster.NewGroups(svc).PlanAgents(app.Context(), c.Cluster, c.Group, cluster.CreateOptions{NoRollback: c.NoRollback, ReplaceFailed: c.ReplaceFailed})
		if err != nil {
			return flagError(err, &c.Group)
		}
		return writeDryRun(app, out, d)
	}
	nodes, err := cluster.NewGroups(svc).AddAgents(app.Context(), c.Cluster, c.Group, cluster.CreateOptions{NoRollback: c.NoRollback, ReplaceFailed: c.ReplaceFailed})
	if err != nil {
		return flagError(err, &c.Group)
	}
	sayEndpoint(app, svc, c.Cluster, c.Group)
	return writeNodes(app, out, nodes, false, true)
}

// ListNodesCmd is `clusterctl list-nodes`.
type ListNodesCmd struct {
	Cluster string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" help:"Cluster (default: every cluster in the region)."`
	Group   string `short:"n" name:"name" predictor:"node-group" help:"Only this group ('control' for the managers)."`
}

func (c *ListNodesCmd) Run(app *App) error {
	out, svc, err := app.prepare(checkNames(c.Cluster, "-j/--cluster", c.Group))
	if err != nil {
		return err
	}
	nodes, swarms, err := cluster.NewInspector(svc).ListNodes(app.Context(), c.Cluster, c.Group)
	if err != nil {
		return err
	}
	noteSwarms(app, swarms, "SWARM", query.SwarmStale)
	return writeNodes(app, out, nodes, true, c.Cluster != "")
}

// writeNodes prints nodes; swarm: with what the swarm says of them;
// oneCluster: of the cluster the command named.
func writeNodes(app *App, out *query.Output, nodes []query.Node, swarm, oneCluster bool) error {
	if nodes == nil {
		nodes = []query.Node{}
	}
	return out.Write(app.IO.Out, nodes, func(wide bool) query.Table {
		return query.NodesTable(nodes, query.Columns{Wide: wide, OneCluster: oneCluster}, swarm)
	})
}

// noteSwarms says on stderr, for each cluster listed, why its swarm's
// state is unknown or stale, so that what column shows for it (unknown:
// "?", stale: stale) has its reason beside it.
func noteSwarms(app *App, swarms []query.Swarm, column, stale string) {
	for _, w := range swarms {
		if p := w.Problem(); p != "" {
			shows := "?"
			if w.Stale() {
				shows = stale
			}
			fmt.Fprintf(app.IO.ErrOut, "Note: cluster %s: %s (%s shows %s)\n", w.Cluster, p, column, shows)
		}
	}
}

// noteUnread says on stderr, once for each reason, what could not be
// read of some rows (shown "?"); the command still exits 0.
func noteUnread(app *App, unread []query.Unread) {
	for _, line := range query.UnreadNotes(unread) {
		fmt.Fprintf(app.IO.ErrOut, "clusterctl: %s\n", line)
	}
}

// ListGroupsCmd is `clusterctl list-groups`.
type ListGroupsCmd struct {
	Cluster string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" help:"Cluster (default: every cluster in the region)."`
}

func (c *ListGroupsCmd) Run(app *App) error {
	out, svc, err := app.prepare(checkNames(c.Cluster, "-j/--cluster", ""))
	if err != nil {
		return err
	}
	inv, err := cluster.NewInspector(svc).ListGroups(app.Context(), c.Cluster)
	if err != nil {
		return err
	}
	// Stacks that carry a cluster's tags under another name are not its
	// groups: said apart, so the listing stays what scripts expect.
	for _, cf := range inv.Conflicts {
		fmt.Fprintf(app.IO.ErrOut, "Warning: conflict: %s\n", cf)
	}
	noteSwarms(app, inv.Swarms, "READY", "?")
	noteUnread(app, inv.Unread)
	groups := inv.Groups
	return out.Write(app.IO.Out, groups, func(wide bool) query.Table {
		return query.GroupsTable(groups, query.Columns{Wide: wide, OneCluster: c.Cluster != ""})
	})
}

// UpdateGroupCmd is `clusterctl update-group -n GROUP -j CLUSTER`: the
// settings given replace the deployed ones, the others stay.
type UpdateGroupCmd struct {
	spec.Group
	Cluster string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" required:"" help:"Cluster the group belongs to; its current outputs are re-read."`
	DryRun  bool   `name:"dry-run" help:"Show the plan and change nothing."`
	Yes     bool   `short:"y" help:"Replace nodes, terminate nodes, or remove or replace the group's load balancer, without asking (needed when not on a terminal)."`
	// ContinueRollback recovers UPDATE_ROLLBACK_FAILED; it takes no changes.
	ContinueRollback bool `name:"continue-rollback" help:"Continue a failed update rollback (UPDATE_ROLLBACK_FAILED) instead of updating."`
}

func (c *UpdateGroupCmd) Run(app *App, kctx *kong.Context) error {
	changes := slices.DeleteFunc(given(kctx, &c.Group), func(p string) bool { return p == "name" })
	check := checkCluster(c.Cluster, "-j/--cluster")
	if check == nil {
		check = flagError(spec.CheckGroupName(c.Cluster, c.Name), &c.Group)
	}
	if check == nil {
		check = flagError(c.Group.CheckGiven(c.Cluster, changes), &c.Group)
	}
	// Autoscaling off: the group needs a count again, which the autoscaler
	// had in its hands.
	if check == nil && slices.Contains(changes, "autoscale.enabled") && !c.Autoscale.Enabled && !slices.Contains(changes, "count") {
		check = errs.Usage("--no-autoscale needs -c/--count: the number of nodes the group keeps from then on")
	}
	if check == nil && c.ContinueRollback && (len(changes) > 0 || c.DryRun) {
		check = errs.Usage("--continue-rollback takes no other changes: continue the rollback first, then update")
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	if c.ContinueRollback {
		return continueRollback(app, out, svc, c.Cluster, c.Name)
	}
	opts := cluster.UpdateOptions{
		Cluster: c.Cluster, Group: c.Name, DryRun: c.DryRun, Yes: c.Yes,
		Desired: func(deployed spec.Group) spec.Group { return deployed.Update(c.Group, changes) },
	}
	// Asked on a terminal when nodes are replaced or the load balancer
	// removed: the plan shows it.
	ask := !c.Yes && !c.DryRun && app.IO.InTTY
	return runUpdate(app, out, names.GroupStack(c.Cluster, c.Name), ask, c.DryRun, func(onPlan func(*cluster.Plan) error) (*cluster.UpdateResult, error) {
		opts.OnPlan = onPlan
		res, err := cluster.NewGroups(svc).UpdateGroup(app.Context(), opts)
		return res, flagError(err, &c.Group)
	})
}

// continueRollback continues the failed update rollback of a core (group
// "") or a group and prints how it ended.
func continueRollback(app *App, out *query.Output, svc *cluster.Clients, clusterName, group string) error {
	start := time.Now()
	st, err := cluster.NewGroups(svc).ContinueRollback(app.Context(), clusterName, group)
	if err != nil {
		return err
	}
	r := query.ResultFrom(stacks.Outcome{Stack: st.Name, Status: st.Status, Duration: time.Since(start)})
	return writeResult(app, out, r, "Rollback continued ("+r.String()+")")
}

// runUpdate runs update-group or update-core (update, given the function
// that shows the plan) and prints the plan and its outcome: the plan
// first on a terminal, so the operator sees what is replaced while it
// happens; the plan and outcome as one object under -o json/yaml or
// --query (with the plan on stderr too when the command will ask before
// applying it).
func runUpdate(app *App, out *query.Output, stack string, ask, dryRun bool, update func(onPlan func(*cluster.Plan) error) (*cluster.UpdateResult, error)) error {
	table := (out.Format == "table" || out.Format == "wide") && app.Globals.Query == ""
	var onPlan func(*cluster.Plan) error
	if table || ask {
		w := app.IO.Out
		if !table {
			w = app.IO.ErrOut
		}
		onPlan = func(p *cluster.Plan) error {
			fmt.Fprintf(w, "Plan for %s:\n", stack)
			return cluster.WritePlan(w, p)
		}
	}
	res, err := update(onPlan)
	if err != nil {
		return err
	}
	for _, r := range res.Repaired {
		fmt.Fprintf(app.IO.ErrOut, "Repaired %s: %s\n", stack, r)
	}
	switch {
	case res.NoOp:
		fmt.Fprintf(app.IO.ErrOut, "No changes: %s already matches the requested configuration\n", stack)
	case len(res.Repaired) > 0 && !res.Applied && !dryRun:
		fmt.Fprintf(app.IO.ErrOut, "No setting changed; %s is whole again\n", stack)
	case res.Applied:
		fmt.Fprintf(app.IO.ErrOut, "Updated %s\n", stack)
	default:
		fmt.Fprintf(app.IO.ErrOut, "Dry run: nothing changed\n")
	}
	if table {
		return nil
	}
	v := updateView{Plan: res.Plan, NoChanges: res.NoOp, Applied: res.Applied, Repaired: res.Repaired}
	if v.Repaired == nil {
		v.Repaired = []string{}
	}
	if v.Plan == nil {
		v.Plan = &cluster.Plan{Stack: stack, Settings: []spec.Change{}, Changes: []cluster.ResourceChange{}}
	}
	return out.Write(app.IO.Out, v, nil)
}

// updateView is the JSON form of update-group's result: the plan and what
// became of it.
type updateView struct {
	*cluster.Plan
	NoChanges bool     `json:"noChanges"`
	Applied   bool     `json:"applied"`
	Repaired  []string `json:"repaired"`
}

// RemoveGroupCmd is `clusterctl remove-group -n GROUP -j CLUSTER`.
type RemoveGroupCmd struct {
	Group        string `short:"n" name:"name" predictor:"group" required:"" help:"Group name."`
	Cluster      string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" required:"" help:"Cluster the group belongs to."`
	Yes          bool   `short:"y" help:"Do not ask for confirmation (needed when not on a terminal)."`
	RetainFailed bool   `name:"retain-failed" help:"After a failed delete (DELETE_FAILED), delete the stack keeping the resources that could not be deleted."`
}

func (c *RemoveGroupCmd) Run(app *App) error {
	out, svc, err := app.prepare(checkNames(c.Cluster, "-j/--cluster", c.Group))
	if err != nil {
		return err
	}
	done, err := cluster.NewGroups(svc).RemoveGroup(app.Context(), cluster.RemoveOptions{Cluster: c.Cluster, Group: c.Group, Yes: c.Yes, RetainFailed: c.RetainFailed})
	if err != nil {
		return err
	}
	r := query.ResultFrom(done.Outcome)
	if done.AlreadyRemoved {
		return writeResult(app, out, r, fmt.Sprintf("Group %s of cluster %s was already removed (%s: %s); cleaned up after it", c.Group, c.Cluster, r.Stack, r.Status))
	}
	return writeResult(app, out, r, fmt.Sprintf("Removed group %s of cluster %s (%s)", c.Group, c.Cluster, r))
}

// DeleteCoreCmd is `clusterctl delete-core NAME`.
type DeleteCoreCmd struct {
	Name string `arg:"" optional:"" predictor:"cluster" help:"Cluster name (= core stack name)."`
	ClusterFlag
	Cascade      bool `help:"Remove the cluster's groups first."`
	Yes          bool `short:"y" help:"Do not ask for confirmation (needed when not on a terminal)."`
	RetainFailed bool `name:"retain-failed" help:"After a failed delete (DELETE_FAILED), delete the stack keeping the resources that could not be deleted."`
}

func (c *DeleteCoreCmd) Run(app *App) error {
	check := c.ClusterFlag.into(&c.Name, "delete-core", true)
	if check == nil {
		check = checkNames(c.Name, "", "")
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	done, err := cluster.NewCore(svc).DeleteCore(app.Context(), cluster.DeleteCoreOptions{Name: c.Name, Cascade: c.Cascade, Yes: c.Yes, RetainFailed: c.RetainFailed})
	if err != nil {
		return err
	}
	d := query.DeletionFrom(done.Outcome, done.Groups)
	d.Bucket = done.Bucket
	if done.AlreadyDeleted {
		line := fmt.Sprintf("Cluster %s was already deleted (%s: %s)", c.Name, d.Stack, d.Status)
		if d.Bucket != "" {
			line += "; deleted its bucket " + d.Bucket + ", which was left"
		}
		return writeResult(app, out, d, line)
	}
	line := fmt.Sprintf("Deleted cluster %s (%s", c.Name, d.Result)
	if n := len(d.Groups); n > 0 {
		line += fmt.Sprintf("; %s before it", query.Plural(n, "group stack"))
	}
	line += ")"
	return writeResult(app, out, d, line)
}

// writeResult prints how a stack operation ended: the object under -o
// json/yaml or --query, else one line.
func writeResult(app *App, out *query.Output, v any, line string) error {
	if out.TableForm() {
		_, err := fmt.Fprintln(app.IO.Out, line)
		return err
	}
	return out.Write(app.IO.Out, v, nil)
}

// VersionCmd is `clusterctl version`.
type VersionCmd struct{}

func (c *VersionCmd) Run(app *App) error {
	out, err := app.Output()
	if err != nil {
		return err
	}
	v := buildInfo(app.Version)
	if out.TableForm() {
		_, err := fmt.Fprintln(app.IO.Out, v.String())
		return err
	}
	return out.Write(app.IO.Out, v, nil)
}

// HelpCmd is `clusterctl help [COMMAND...]`: the same text as --help.
type HelpCmd struct {
	Command []string `arg:"" optional:"" predictor:"command" help:"The command to explain, e.g. update-group or render group."`
}

func (c *HelpCmd) Run(kctx *kong.Context, app *App) error {
	if err := app.textOnly("help"); err != nil {
		return err
	}
	target, err := kong.Trace(kctx.Kong, c.Command)
	if err == nil {
		err = target.Error
	}
	if err != nil {
		return errs.AsUsage(err)
	}
	return target.PrintUsage(false)
}
