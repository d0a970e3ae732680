// Command clusterctl-node is the node agent of clusterctl's clusters: on a
// manager it joins or initialises the swarm and runs the housekeeping, on
// an agent it keeps the node in the swarm. The user data (a loader)
// fetches it from the cluster bucket, checks its SHA-256, and runs it
// under systemd. See internal/node.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/node"
	"github.com/clusterctl/clusterctl/internal/node/awsn"
	"github.com/clusterctl/clusterctl/internal/node/dockerx"
	"github.com/clusterctl/clusterctl/internal/node/host"
	"github.com/clusterctl/clusterctl/internal/sdkhttp"
)

// version is set at build time.
var version = "dev"

type cli struct {
	Settings string           `help:"The node's settings file." default:"/etc/clusterctl/node.env" type:"path"`
	Root     string           `help:"Prefix of the files the agent writes (tests)." env:"CLUSTERCTL_ROOT" hidden:""`
	Version  kong.VersionFlag `help:"Print the version."`

	Setup        setupCmd        `cmd:"" help:"Install the engine of the stack's version and write its labels (daemon.json); on an agent, tag the instance."`
	Boot         bootCmd         `cmd:"" help:"Make this node a manager: join or initialise the swarm, publish the join material, wait until Reachable."`
	Housekeeping housekeepingCmd `cmd:"" help:"The managers' housekeeping service."`
	Agent        agentCmd        `cmd:"" help:"The agents' service: keep this node in the swarm."`
	Get          getCmd          `cmd:"" help:"Copy an object of the cluster bucket's commands/ prefix to a file (the standard input of clusterctl docker)."`
}

// nodeLog writes the agent's lines to its standard error (the journal)
// and, once shipping, to the node's stream of the cluster's log group.
type nodeLog struct {
	ship *awsn.Shipper
	stop context.CancelFunc
	done chan struct{}
}

func (l *nodeLog) logf(format string, args ...any) {
	line := "clusterctl: " + fmt.Sprintf(format, args...)
	fmt.Fprintln(os.Stderr, line)
	if l.ship != nil {
		l.ship.Log(line)
	}
}

// shipTo ships the lines from now on to the node's stream of group:
// its role's prefix, names.LogStreamNode and its instance id.
func (l *nodeLog) shipTo(api awsn.LogsAPI, group, instanceID string, manager bool) {
	ctx, cancel := context.WithCancel(context.Background())
	l.ship, l.stop, l.done = awsn.NewShipper(api, group, names.LogStreamPrefix(manager)+names.LogStreamNode+instanceID), cancel, make(chan struct{})
	go func() {
		defer close(l.done)
		l.ship.Run(ctx, 3*time.Second)
	}()
}

// close sends what is left, within the shipper's bound.
func (l *nodeLog) close() {
	if l.ship != nil {
		l.stop()
		<-l.done
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var c cli
	nl := &nodeLog{}
	k := kong.Parse(&c, kong.Name("clusterctl-node"), kong.Vars{"version": version},
		kong.Description("The node agent of clusterctl's clusters."), kong.BindTo(ctx, (*context.Context)(nil)), kong.Bind(nl))
	err := k.Run(&c)
	stopped := ctx.Err() != nil // SIGTERM: systemd stops the service
	stop()
	if err != nil && !stopped {
		nl.logf("%v", err)
	}
	nl.close()
	if err != nil && !stopped {
		os.Exit(1)
	}
}

// settings reads the node's settings file and checks keys in it.
func (c *cli) settings(keys ...string) (settings, error) {
	s, err := readSettings(filepath.Join(c.Root, c.Settings))
	if err != nil {
		return nil, err
	}
	if err := s.need(keys...); err != nil {
		return nil, err
	}
	return s, nil
}

// env is what every command has: the settings, AWS and the engine.
type env struct {
	s      settings
	cfg    aws.Config
	engine *dockerx.Engine
	meta   host.Metadata
	state  node.State
	log    node.Logger
}

// loadAWS is the node's AWS configuration: the standard chain (the
// instance's role), with the SDK's request bodies guarded (sdkhttp.Guard),
// so that a call the endpoint did is not failed and sent again: a
// conditional put, such as the managers' initialisation marker, would then
// lose to itself.
func loadAWS(ctx context.Context, region string) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return aws.Config{}, err
	}
	cfg.HTTPClient = sdkhttp.Guard(cfg.HTTPClient)
	return cfg, nil
}

func (c *cli) env(ctx context.Context, nl *nodeLog, keys ...string) (*env, error) {
	s, err := c.settings(append([]string{"CLUSTER_NAME", "AWS_REGION", "BUCKET_NAME", "STACK_NAME"}, keys...)...)
	if err != nil {
		return nil, err
	}
	cfg, err := loadAWS(ctx, s["AWS_REGION"])
	if err != nil {
		return nil, fmt.Errorf("the AWS configuration: %w", err)
	}
	// The node's lines go to its stream <role>/node/<instance-id> of the
	// cluster's log group. A manager's core always has the group, whatever
	// its containers' driver (its settings do not repeat the name: user
	// data is small); an agent of an older core, whose settings name no
	// group, keeps them in the journal only.
	group, err := s.logGroup()
	if err != nil {
		return nil, err
	}
	if group == "" && s.manager() {
		group = names.LogGroup(s["CLUSTER_NAME"])
	}
	if group != "" && s.need("INSTANCE_ID") == nil {
		nl.shipTo(awsn.NewLogs(cfg), group, s["INSTANCE_ID"], s.manager())
	}
	e, err := dockerx.New()
	if err != nil {
		return nil, err
	}
	return &env{s: s, cfg: cfg, engine: e, log: nl.logf, meta: host.NewMetadata(os.Getenv("CLUSTERCTL_IMDS_URL")), state: node.State{Dir: filepath.Join(c.Root, "/var/lib/clusterctl")}}, nil
}

// s3 is the S3 client; against an endpoint of its own (AWS_ENDPOINT_URL:
// a test's, or a private one) it addresses buckets by path.
func (e *env) s3() awsn.S3Calls {
	return awsn.NewS3(e.cfg, func(o *s3.Options) {
		o.UsePathStyle = os.Getenv("AWS_ENDPOINT_URL") != ""
		o.DisableLogOutputChecksumValidationSkipped = true
	})
}

func (e *env) manager(ctx context.Context) (*node.Manager, error) {
	i, err := e.meta.Instance(ctx)
	if err != nil {
		return nil, err
	}
	if !node.ValidIPv4(i.Address) {
		return nil, fmt.Errorf("refusing the instance's address %.40q", i.Address)
	}
	scaling, ec2 := awsn.NewAutoScaling(e.cfg), awsn.NewEC2(e.cfg)
	bucket := awsn.Bucket{API: e.s3(), Name: e.s["BUCKET_NAME"]}
	t := managerTimings()
	state := node.State{Dir: filepath.Join(e.state.Dir, "housekeeping")}
	secrets := &node.SecretsSync{
		Sources: awsn.SecretSources{SecretsManager: awsn.NewSecretsManager(e.cfg), SSM: awsn.NewSSM(e.cfg), Declaration: names.SecretsParameter(e.s["CLUSTER_NAME"])},
		Engine:  e.engine, Clock: node.RealClock{}, Log: e.log, Every: t.SecretsEvery,
	}
	return &node.Manager{
		Cluster: e.s["CLUSTER_NAME"], InstanceID: i.ID, Address: i.Address,
		Engine: e.engine, Bucket: bucket,
		Queue:     awsn.Queue{API: awsn.NewSQS(e.cfg), URL: e.s["LIFECYCLE_QUEUE_URL"]},
		Scaling:   awsn.Scaling{API: scaling},
		Instances: awsn.Instances{API: ec2},
		Facts:     awsn.Instances{API: ec2},
		Groups:    awsn.Groups{AutoScaling: scaling, EC2: ec2, Stacks: awsn.NewCloudFormation(e.cfg)},
		Metrics: &node.SwarmMetrics{Cluster: e.s["CLUSTER_NAME"], Sink: awsn.Metrics{API: awsn.NewCloudWatch(e.cfg), Namespace: names.SwarmMetricNamespace(e.s["CLUSTER_NAME"])},
			Clock: node.RealClock{}, Log: e.log, Every: t.MetricsEvery},
		Secrets: secrets,
		Objects: e.engine,
		Tokens:  e.engine,
		Backups: host.Backups{Engine: e.engine, PIDFile: filepath.Join(os.Getenv("CLUSTERCTL_ROOT"), "/var/run/docker.pid")},
		Recovery: &node.Recovery{
			Cluster: e.s["CLUSTER_NAME"], InstanceID: i.ID, Address: i.Address, Engine: e.engine,
			Proof: awsn.Proof{EC2: ec2, AutoScaling: scaling}, Bucket: bucket, Network: host.Network{},
			Clock: node.RealClock{}, Log: e.log, State: state, Grace: t.QuorumGrace,
		},
		Network: host.Network{}, Clock: node.RealClock{}, Log: e.log, State: state, T: t,
		BackupKeep: backupKeep(e.s),
	}, nil
}

type setupCmd struct{}

// Run writes daemon.json before the engine starts: the labels by which
// services are placed and housekeeping finds a node by its instance, and
// the log settings that ship containers' output to the cluster's log
// group.
func (setupCmd) Run(ctx context.Context, c *cli, nl *nodeLog) error {
	s, err := c.settings("NODE_GROUP", "AWS_REGION")
	if err != nil {
		return err
	}
	meta := host.NewMetadata(os.Getenv("CLUSTERCTL_IMDS_URL"))
	i, err := meta.Instance(ctx)
	if err != nil {
		return err
	}
	var labels []string
	if s["NODE_GROUP"] == names.GroupControl {
		labels = []string{names.EngineLabelGroup + "=" + names.GroupControl, names.EngineLabelInstanceType + "=" + i.Type,
			names.EngineLabelInstanceID + "=" + i.ID}
	} else {
		labels = node.EngineLabels(s["NODE_GROUP"], s.labels(), i)
		cfg, err := loadAWS(ctx, s["AWS_REGION"])
		if err == nil {
			err = awsn.Instances{API: awsn.NewEC2(cfg)}.Tag(ctx, i.ID, node.InstanceTags(i))
		}
		if err != nil {
			nl.logf("could not tag instance %s, carrying on without the tags: %v", i.ID, err)
		}
	}
	logs, err := s.engineLogs(i.ID, os.Getenv("CLUSTERCTL_LOGS_ENDPOINT"))
	if err != nil {
		return err
	}
	pkg, err := enginePackage(s)
	if err != nil {
		return err
	}
	if err := installEngine(ctx, pkg, nl.logf); err != nil {
		return err
	}
	sha, err := selfSHA256()
	if err != nil {
		nl.logf("could not hash the node agent, its label left out: %v", err)
	}
	labels = append(labels, runLabels(sha, s)...)
	dir := filepath.Join(c.Root, "/etc/docker")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "daemon.json"), node.DaemonJSON(labels, logs), 0o644)
}

type bootCmd struct{}

func (bootCmd) Run(ctx context.Context, c *cli, nl *nodeLog) error {
	e, err := c.env(ctx, nl, "LIFECYCLE_QUEUE_URL")
	if err != nil {
		return err
	}
	if err := e.engine.Wait(ctx); err != nil {
		return err
	}
	m, err := e.manager(ctx)
	if err != nil {
		return err
	}
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("joining or initialising the swarm: %w", err)
	}
	if err := m.PublishAtBoot(ctx); err != nil {
		return fmt.Errorf("publishing the join material: %w", err)
	}
	if err := m.Ready(ctx); err != nil {
		return fmt.Errorf("waiting to be a Reachable manager: %w", err)
	}
	return nil
}

type housekeepingCmd struct{}

func (housekeepingCmd) Run(ctx context.Context, c *cli, nl *nodeLog) error {
	e, err := c.env(ctx, nl, "LIFECYCLE_QUEUE_URL")
	if err != nil {
		return err
	}
	m, err := e.manager(ctx)
	if err != nil {
		return err
	}
	// A swarm node's claim is proven only by an instance of the cluster's
	// VPC, this manager's own (systemd starts the service again should
	// EC2 not answer).
	ec2 := awsn.NewEC2(e.cfg)
	vpc, err := awsn.VPCOf(ctx, ec2, m.InstanceID)
	if err != nil {
		return err
	}
	m.Instances = awsn.Instances{API: ec2, VPC: vpc}
	m.Recovery.Proof = awsn.Proof{EC2: ec2, AutoScaling: awsn.NewAutoScaling(e.cfg), VPC: vpc}
	defer e.nodeMetrics(ctx, m.InstanceID, m.T.MetricsEvery)()
	return m.Housekeeping(ctx)
}

type agentCmd struct{}

func (agentCmd) Run(ctx context.Context, c *cli, nl *nodeLog) error {
	e, err := c.env(ctx, nl, "NODE_GROUP", "MANAGERS_KEY")
	if err != nil {
		return err
	}
	i, err := e.meta.Instance(ctx)
	if err != nil {
		return err
	}
	a := &node.Agent{
		Cluster: e.s["CLUSTER_NAME"], Group: e.s["NODE_GROUP"], InstanceType: i.Type, Address: i.Address,
		ManagersKey: e.s["MANAGERS_KEY"], Engine: e.engine,
		Bucket: awsn.Bucket{API: e.s3(), Name: e.s["BUCKET_NAME"]},
		Node:   host.Signal{Metadata: e.meta, Stack: e.s["STACK_NAME"], Resource: names.ResourceAutoScalingGroup, Region: e.s["AWS_REGION"]},
		Clock:  node.RealClock{}, Log: e.log, State: node.State{Dir: filepath.Join(e.state.Dir, "agent")}, T: agentTimings(),
	}
	defer e.nodeMetrics(ctx, i.ID, metricsEvery())()
	defer e.interruptionWatch(ctx, i.ID, agentTimings().InterruptionEvery)()
	return a.Run(ctx)
}

// nodeMetrics publishes this node's disk and memory use every interval
// beside the node's service, until the stop it returns is called.
func (e *env) nodeMetrics(ctx context.Context, instanceID string, every time.Duration) (stop func()) {
	group := e.s["NODE_GROUP"]
	if group == "" {
		group = names.GroupControl
	}
	n := &node.NodeMetrics{Cluster: e.s["CLUSTER_NAME"], Group: group, InstanceID: instanceID, DataRoot: e.engine.RootDir,
		Host: host.Stats{}, Sink: awsn.Metrics{API: awsn.NewCloudWatch(e.cfg), Namespace: names.NodeMetricNamespace(e.s["CLUSTER_NAME"])}, Clock: node.RealClock{}, Log: e.log, Every: every}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// interruptionWatch confirms, from the instance metadata, the spot
// interruption warnings and rebalance recommendations of this instance
// (node.InterruptionWatch) every interval beside the agent, until the
// stop it returns is called.
func (e *env) interruptionWatch(ctx context.Context, instanceID string, every time.Duration) (stop func()) {
	calls := awsn.NewSTS(e.cfg)
	w := &node.InterruptionWatch{InstanceID: instanceID, Metadata: e.meta, Bucket: awsn.Bucket{API: e.s3(), Name: e.s["BUCKET_NAME"]},
		Key:   func(ctx context.Context) (string, error) { return awsn.ConfirmationKey(ctx, calls, instanceID) },
		Clock: node.RealClock{}, Log: e.log, Every: every}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
