package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kong"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/alarms"
	"github.com/clusterctl/clusterctl/internal/awsapi"
	"github.com/clusterctl/clusterctl/internal/awsx"
	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/iostreams"
	"github.com/clusterctl/clusterctl/internal/preflight"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/remote"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// Globals are the flags every command takes.
type Globals struct {
	Region      string           `help:"AWS region (default: the standard AWS configuration)." placeholder:"REGION" group:"global"`
	Profile     string           `help:"AWS shared-config profile." placeholder:"NAME" group:"global"`
	EndpointURL string           `name:"endpoint-url" help:"Send AWS calls to this endpoint (e.g. a local moto server)." placeholder:"URL" group:"global"`
	Output      string           `short:"o" default:"table" help:"Output format: table, wide, json or yaml." placeholder:"FORMAT" predictor:"output" group:"global"`
	Query       string           `help:"jq filter applied to the JSON form of the output." placeholder:"JQ" group:"global"`
	NoColor     bool             `name:"no-color" help:"No colour (also NO_COLOR)." group:"global"`
	Verbose     bool             `short:"v" help:"Print every AWS call with its duration, and a count at the end." group:"global"`
	Quiet       bool             `short:"q" help:"No live progress while waiting." group:"global"`
	Timeout     time.Duration    `help:"Stop waiting after this long (CloudFormation carries on); 0 waits as long as it takes." default:"0" group:"global"`
	Version     kong.VersionFlag `help:"Print the version and exit." group:"global"`
}

// App is what every command's Run receives: streams, global flags and, on
// first use, the AWS clients.
type App struct {
	ctx     context.Context
	cancel  context.CancelFunc
	IO      *iostreams.IO
	Globals *Globals
	Version string
	RunID   string
	// Args is the command line of this run, for the leases it takes.
	Args []string

	out *query.Output
	svc *cluster.Clients
	// alarms reads the core's alarms (describe, list-clusters).
	alarms alarms.Reader
	rec    *awsx.Recorder
	s3     awsapi.S3 // every S3 call, for packages that need more than the Clients' view
	// sessions opens Session Manager sessions at ssmEndpoint (what the
	// plugin is told).
	sessions    remote.SessionAPI
	ssmEndpoint string

	// defaults are the default cluster and region (clusterctl use).
	defaults *defaultCluster

	agentsMu sync.Mutex   // apply deploys groups in parallel
	agents   agentbin.Set // the node agents, once loaded
}

// Agents are the node agents this clusterctl pins and uploads, loaded on
// first use: only the commands that render or deploy a stack need them
// (a clusterctl without embedded agents may build them, once).
func (a *App) Agents(ctx context.Context) (agentbin.Set, error) {
	a.agentsMu.Lock()
	defer a.agentsMu.Unlock()
	if a.agents == nil {
		src := agentbin.DefaultSource(ctx, a.Version)
		src.Say = func(msg string) { fmt.Fprint(a.IO.ErrOut, msg) }
		set, err := agentbin.Load(ctx, src)
		if err != nil {
			return nil, err
		}
		a.agents = set
	}
	return a.agents, nil
}

// build is what a render takes of this clusterctl (cluster.BuildOf), for
// the renders that need no AWS configuration.
func (a *App) build() (render.Build, error) {
	set, err := a.Agents(a.ctx)
	if err != nil {
		return render.Build{}, err
	}
	return cluster.BuildOf(a.Version, set), nil
}

func newApp(ctx context.Context, ios *iostreams.IO, g *Globals, args []string) *App {
	if g.NoColor {
		ios.Color = false
	}
	cancel := func() {}
	if g.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, g.Timeout)
	}
	return &App{ctx: ctx, cancel: cancel, IO: ios, Globals: g, Version: version, RunID: newRunID(), Args: args}
}

// Context is the command's context: cancelled on Ctrl-C and after --timeout.
func (a *App) Context() context.Context { return a.ctx }

// Output checks -o and --query; commands call it before any AWS call so bad
// input costs nothing.
func (a *App) Output() (*query.Output, error) {
	if a.out == nil {
		out, err := query.NewOutput(a.Globals.Output, a.Globals.Query)
		if err != nil {
			return nil, errs.AsUsage(err)
		}
		out.Width = a.IO.Width
		a.out = out
	}
	return a.out, nil
}

// textOnly refuses -o json/yaml and --query for a command whose output is
// text with no structured form, rather than ignoring them.
func (a *App) textOnly(command string) error {
	out, err := a.Output()
	if err != nil {
		return err
	}
	if !out.TableForm() {
		return errs.Usage("%s prints text only: it takes neither -o json/yaml nor --query", command)
	}
	return nil
}

// prepare checks what needs no AWS — the output flags, then the command's
// own input (check) — and only then loads the AWS clients, so bad input
// costs nothing and creates nothing.
func (a *App) prepare(check error) (*query.Output, *cluster.Clients, error) {
	out, err := a.Output()
	if err != nil {
		return nil, nil, err
	}
	if check != nil {
		return nil, nil, check
	}
	svc, err := a.Clients()
	if err != nil {
		return nil, nil, err
	}
	return out, svc, nil
}

// Clients loads the AWS configuration and builds the clients once.
func (a *App) Clients() (*cluster.Clients, error) {
	if a.svc != nil {
		return a.svc, nil
	}
	region, err := a.defaults.region(a.Globals.Region)
	if err != nil {
		return nil, err
	}
	opts := awsx.Options{Region: a.Globals.Region, Profile: a.Globals.Profile, EndpointURL: a.Globals.EndpointURL, DefaultRegion: region}
	if a.Globals.Verbose {
		opts.Log = a.IO.ErrOut
	}
	cfg, rec, err := awsx.Load(a.ctx, opts)
	if se := (*awsx.SettingError)(nil); errors.As(err, &se) {
		return nil, errs.AsUsage(err)
	}
	if err != nil {
		return nil, err
	}
	a.rec = rec
	// The clients are held by awsapi's types, never stored in an
	// interface themselves: see awsapi for why (the binary's size).
	cfn := awsapi.NewCloudFormation(cfg)
	var progress = a.IO.ErrOut
	if a.Globals.Quiet {
		progress = nil
	}
	mgr := stacks.NewManager(cfn, stacks.Options{RunID: a.RunID, Progress: progress, TTY: a.IO.ErrTTY, Color: a.IO.Color})
	a.s3 = awsapi.NewS3(cfg, func(o *s3.Options) { o.UsePathStyle = awsx.CustomEndpoint(cfg) })
	ssmc := awsapi.NewSSM(cfg)
	a.sessions, a.ssmEndpoint = ssmc, ssmEndpoint(a.ctx, cfg)
	snsc := awsapi.NewSNS(cfg)
	a.alarms = alarms.Reader{Stacks: cfn, CloudWatch: alarms.NewCloudWatch(cfg, awsx.CustomEndpoint(cfg)), SNS: snsc}
	a.svc = &cluster.Clients{
		Stacks:  mgr,
		CFN:     cfn,
		EC2:     awsapi.NewEC2(cfg),
		ASG:     awsapi.NewASG(cfg),
		S3:      a.s3,
		SSM:     ssmc,
		ACM:     awsapi.NewACM(cfg),
		ELB:     awsapi.NewELB(cfg),
		STS:     awsapi.NewSTS(cfg),
		IAM:     awsapi.NewIAM(cfg),
		SQS:     awsapi.NewSQS(cfg),
		CWLogs:  awsapi.NewCloudWatchLogs(cfg),
		Sources: preflight.Sources{SNS: snsc, SecretsManager: awsapi.NewSecretsManager(cfg), SSM: ssmc, Region: cfg.Region},
		Region:  cfg.Region,
		IO:      a.IO,
		Version: a.Version,
		Agents:  a.Agents,
		Run:     cluster.Run{Command: commandLine(a.Args), ID: a.RunID},

		RunCommand: ssmc, // the docker commands
	}
	return a.svc, nil
}

// ssmEndpoint is the Systems Manager endpoint of cfg, as the Session
// Manager plugin needs it: the custom endpoint, else the region's.
func ssmEndpoint(ctx context.Context, cfg aws.Config) string {
	if awsx.CustomEndpoint(cfg) {
		return *cfg.BaseEndpoint
	}
	ep, err := ssm.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, ssm.EndpointParameters{Region: aws.String(cfg.Region)})
	if err != nil {
		return "https://ssm." + cfg.Region + ".amazonaws.com"
	}
	return ep.URI.String()
}

// commandLine spells a run's arguments as a shell would take them back.
func commandLine(args []string) string {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = spec.ShellWord(a)
	}
	return strings.Join(words, " ")
}

// finish prints the -v call count and releases the timeout.
func (a *App) finish() {
	if a.Globals.Verbose && a.rec != nil {
		fmt.Fprintln(a.IO.ErrOut, a.rec.Summary())
	}
	a.cancel()
}

// newRunID names this run of the command; the stack manager derives the
// ClientRequestToken of every mutating call from it.
func newRunID() string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return fmt.Sprintf("%x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b)
}
