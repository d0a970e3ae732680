package main

import (
	"fmt"
	"io"

	"github.com/clusterctl/clusterctl/internal/alarms"
	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/remote"
)

// DockerCmd is `clusterctl docker -j CLUSTER -- ARGS...`.
type DockerCmd struct {
	Cluster string   `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" required:"" help:"Cluster whose swarm runs the command (on its leader)."`
	Args    []string `arg:"" name:"args" passthrough:"" help:"The docker command and its arguments, after --: -- service ls."`
}

func (c *DockerCmd) Run(app *App) error {
	if len(c.Args) > 0 && c.Args[0] == "--" {
		// kong passes the separator through with what follows it.
		c.Args = c.Args[1:]
	}
	// Checked on the command line as received: the parser replaces
	// invalid bytes.
	check := remote.CheckUTF8(app.Args)
	if check == nil {
		check = app.textOnly("docker")
	}
	if check == nil {
		check = checkCluster(c.Cluster, "-j/--cluster")
	}
	if check == nil {
		check = remote.CheckDocker(c.Args, app.IO.InTTY)
	}
	if check == nil {
		check = remote.Check(c.Args, app.Globals.Timeout)
	}
	if check != nil {
		return check
	}
	var stdin []byte
	if !app.IO.InTTY && app.IO.In != nil {
		// Sent whole, through the bucket: the command on the node reads
		// it from a file.
		b, err := io.ReadAll(io.LimitReader(app.IO.In, remote.MaxInput+1))
		if err != nil {
			return fmt.Errorf("reading the standard input: %w", err)
		}
		if len(b) > remote.MaxInput {
			return errs.Usage("the standard input is larger than %d MiB: too large to send", remote.MaxInput>>20)
		}
		if len(b) > 0 {
			stdin = b
		}
	}
	svc, err := app.Clients()
	if err != nil {
		return err
	}
	res, m, err := cluster.NewNodes(svc).Docker(app.Context(), cluster.DockerOptions{Cluster: c.Cluster, Args: c.Args, Stdin: stdin, Timeout: app.Globals.Timeout})
	if m != nil && !m.Leader {
		fmt.Fprintf(app.IO.ErrOut, "clusterctl: running on manager %s, not known to lead: %s\n", m.InstanceID, m.Why)
	}
	if err != nil {
		return err
	}
	if _, err := app.IO.Out.Write(res.Stdout); err != nil {
		return err
	}
	app.IO.ErrOut.Write(res.Stderr)
	if res.InputLeft != nil {
		fmt.Fprintf(app.IO.ErrOut, "clusterctl: warning: %v\n", res.InputLeft)
	}
	if res.Truncated {
		fmt.Fprintf(app.IO.ErrOut, "clusterctl: the output of command %s was not in the cluster bucket; what Run Command kept of it is shown, perhaps truncated\n", res.CommandID)
	}
	if res.ExitCode != 0 {
		return &errs.StatusError{Code: res.ExitCode}
	}
	return nil
}

// ShellCmd is `clusterctl shell INSTANCE_ID | -j CLUSTER`.
type ShellCmd struct {
	Instance string `arg:"" optional:"" name:"instance-id" help:"EC2 instance id of the node (default with -j: a manager, the leader when known)."`
	Cluster  string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" help:"Cluster of the node; alone, a shell on one of its managers."`
}

func (c *ShellCmd) Run(app *App) error {
	if err := app.textOnly("shell"); err != nil {
		return err
	}
	switch {
	case c.Instance != "":
		if err := nodeInput(c.Instance, c.Cluster); err != nil {
			return err
		}
	case c.Cluster == "":
		return errs.Usage("name the node: clusterctl shell INSTANCE_ID, or clusterctl shell -j CLUSTER for a manager")
	default:
		if err := checkCluster(c.Cluster, "-j/--cluster"); err != nil {
			return err
		}
	}
	svc, err := app.Clients()
	if err != nil {
		return err
	}
	target, err := cluster.NewNodes(svc).ShellTarget(app.Context(), c.Instance, c.Cluster)
	if err != nil {
		return err
	}
	// Before a session is started that nothing could use.
	plugin, err := remote.FindPlugin()
	if err != nil {
		return err
	}
	return remote.Open(app.Context(), app.sessions, remote.Shell{
		Plugin: plugin, Instance: target, Region: svc.Region, Profile: app.Globals.Profile, Endpoint: app.ssmEndpoint,
		Stdin: app.IO.In, Stdout: app.IO.Out, Stderr: app.IO.ErrOut,
	})
}

// ServicesCmd is `clusterctl services -j CLUSTER [NAME]`.
type ServicesCmd struct {
	Cluster string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" required:"" help:"Cluster whose swarm's services to list."`
	Name    string `arg:"" optional:"" help:"Only this service (its swarm name)."`
}

func (c *ServicesCmd) Run(app *App) error {
	out, svc, err := app.prepare(checkCluster(c.Cluster, "-j/--cluster"))
	if err != nil {
		return err
	}
	list, err := cluster.NewInspector(svc).Services(app.Context(), c.Cluster, c.Name)
	if err != nil {
		return err
	}
	if list.Note != "" {
		fmt.Fprintf(app.IO.ErrOut, "Note: cluster %s: %s\n", c.Cluster, list.Note)
	}
	services := list.Services
	return out.Write(app.IO.Out, services, func(wide bool) query.Table { return query.ServicesTable(services, wide) })
}

// ListClustersCmd is `clusterctl list-clusters`.
type ListClustersCmd struct{}

func (c *ListClustersCmd) Run(app *App) error {
	out, svc, err := app.prepare(nil)
	if err != nil {
		return err
	}
	clusters, conflicts, err := cluster.NewInspector(svc).ListClusters(app.Context())
	if err != nil {
		return err
	}
	for _, cf := range conflicts {
		fmt.Fprintf(app.IO.ErrOut, "Warning: conflict: %s\n", cf)
	}
	// No table of nothing: the region looked in, where a person reads
	// it (scripts get [] from -o json).
	if len(clusters) == 0 && out.TableForm() {
		fmt.Fprintf(app.IO.ErrOut, "No clusters in %s\n", svc.Region)
		return nil
	}
	// The alarms in ALARM; unknown ("?") where the core's cannot be read
	// (a stack being created or deleted).
	for i := range clusters {
		if as, err := app.alarms.Read(app.Context(), clusters[i].Cluster); err == nil {
			n := alarms.Firing(as)
			clusters[i].Alarms = &n
		}
	}
	return out.Write(app.IO.Out, clusters, func(wide bool) query.Table { return query.ClustersTable(clusters, wide) })
}
