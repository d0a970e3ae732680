// Package cluster drives each command on the model of internal/spec: it
// observes what is deployed (the core's outputs and parameters, each
// group's stack, template and Auto Scaling group) as a spec, renders the
// desired spec joined to the core, plans the difference and hands it to
// internal/stacks.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/iostreams"
	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/logs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/preflight"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/remote"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// EC2API is what the commands need from EC2: network discovery, nodes and
// pre-flight checks.
type EC2API interface {
	query.EC2API
	preflight.EC2API
	preflight.RouteTablesAPI
	DescribeVpcs(ctx context.Context, in *ec2.DescribeVpcsInput, opts ...func(*ec2.Options)) (*ec2.DescribeVpcsOutput, error)
	DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeLaunchTemplateVersions(ctx context.Context, in *ec2.DescribeLaunchTemplateVersionsInput, opts ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error)
}

// S3API is what the commands need from S3: the leases in the cluster
// bucket, uploading node configuration to it, checking what it holds and
// emptying it.
type S3API interface {
	lease.S3API
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	HeadBucket(ctx context.Context, in *s3.HeadBucketInput, opts ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
	DeleteBucket(ctx context.Context, in *s3.DeleteBucketInput, opts ...func(*s3.Options)) (*s3.DeleteBucketOutput, error)
	GetBucketTagging(ctx context.Context, in *s3.GetBucketTaggingInput, opts ...func(*s3.Options)) (*s3.GetBucketTaggingOutput, error)
}

// StackManager is the part of internal/stacks the commands use.
type StackManager interface {
	Get(ctx context.Context, name string) (*stacks.Stack, error)
	Create(ctx context.Context, spec stacks.Spec) (*stacks.Stack, error)
	CreateStarted(ctx context.Context, spec stacks.Spec, started func(id string)) (*stacks.Stack, error)
	Plan(ctx context.Context, spec stacks.Spec) (*stacks.Plan, error)
	Apply(ctx context.Context, plan *stacks.Plan) (*stacks.Stack, error)
	Discard(ctx context.Context, plan *stacks.Plan) error
	Delete(ctx context.Context, name string) error
	DeleteMany(ctx context.Context, names []string, concurrency int) ([]stacks.Outcome, error)
	DeleteStarted(ctx context.Context, name string, retainFailed bool, started func()) (stacks.Outcome, error)
	LastDeleted(ctx context.Context, name string) (*stacks.Stack, error)
	DeleteRetaining(ctx context.Context, name string, retain []string) error
	Wait(ctx context.Context, name string) (*stacks.Stack, error)
	WaitMany(ctx context.Context, names []string) ([]*stacks.Stack, error)
	Events(ctx context.Context, name string, follow bool, emit func([]stacks.Event)) error
	ContinueUpdateRollback(ctx context.Context, name string) (*stacks.Stack, error)
	Template(ctx context.Context, name string) ([]byte, error)
	Expect(names []string)
	Skip(name, why string)
	Say(text string) bool
	Resource(ctx context.Context, stack, logicalID string) (*stacks.Resource, error)
	Revision(ctx context.Context, name string) (string, error)
}

// SSMAPI resolves the SSM parameter behind a group's image.
type SSMAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// LogsAPI is what the commands need of CloudWatch Logs: reading the
// cluster's log group, and its size before deleting it.
type LogsAPI interface {
	logs.API
	DescribeLogGroups(ctx context.Context, in *cloudwatchlogs.DescribeLogGroupsInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogGroupsOutput, error)
}

// Service runs the cluster commands against one AWS configuration.
type Service struct {
	Stacks StackManager
	CFN    query.CFNAPI // inventory reads stacks itself, in one call
	EC2    EC2API
	ASG    ASGAPI
	S3     S3API
	SSM    SSMAPI
	// ACM checks a load balancer's certificate; ELB reads a group's load
	// balancer (its listeners and the health of its targets).
	ACM     preflight.ACMAPI
	ELB     query.ELBAPI
	STS     lease.STSAPI // who the run acts as, for its leases; nil: not recorded
	IAM     IAMAPI       // the caller's role, for the operators
	SQS     SQSAPI       // requests to the managers
	CWLogs  LogsAPI      // the cluster's log group
	Region  string       // of the clients, for the requests' envelope
	IO      *iostreams.IO
	Version string
	// Agents are the node agents this clusterctl pins and uploads, loaded
	// on first call (see internal/agentbin).
	Agents func(context.Context) (agentbin.Set, error)

	// RunCommand runs docker commands on the managers (Run Command).
	RunCommand remote.SSMAPI

	// Run says which run of which command this is, for the leases it takes.
	Run Run
	// Now is the clock a swarm status snapshot's age is measured by; nil:
	// the system's.
	Now func() time.Time
	// Sources checks what a core's settings point at: the topic its
	// alarms notify, its secrets' sources.
	Sources preflight.Sources

	callerARN string // from STS, once

	said sync.Map // notes printed in this run (noteOnce)
}

// Run identifies one run of a command in the leases it takes.
type Run struct {
	Command string        // the command line, as typed (without the program name)
	ID      string        // the run id its ClientRequestTokens carry
	TTL     time.Duration // of its leases; 0: lease.DefaultTTL
}

// preflightGroup checks a group's settings against the account before
// anything is uploaded or created: subnets the operator named must all
// offer every type of the group; the core's, taken by default, at least
// one of them each. The types must share one architecture as EC2 says.
//
// Which zones do not offer a type is said when it is news: for a new
// group, or when an update changes its types or subnets; not on every
// update of a group that already lives with it.
func (s *Service) preflightGroup(ctx context.Context, join render.Join, g spec.Group, deployed *spec.Group) error {
	subnets, rule := g.SubnetIDs, preflight.EveryZone
	if len(subnets) == 0 {
		subnets, rule = join.SubnetIds, preflight.SomeZone
	}
	rep, err := preflight.Check(ctx, s.EC2, s.SSM, preflight.Request{
		InstanceTypes: g.InstanceType, Image: g.ImageID, KeyName: g.KeyName,
		SubnetIDs: subnets, VpcID: join.VpcId, Zones: rule,
	})
	if err != nil {
		return err
	}
	if err := s.checkPublicIPs(ctx, "group "+g.Name+"'s nodes", join.VpcId, subnets, g.PublicIPs); err != nil {
		return err
	}
	news := deployed == nil || !slices.Equal(deployed.InstanceType, g.InstanceType) || !slices.Equal(deployed.SubnetIDs, g.SubnetIDs)
	for _, n := range zoneNotes(g.Name, rep.Unoffered) {
		if news {
			s.noteOnce(n)
		}
	}
	if !g.Published() {
		return nil
	}
	cert := ""
	if g.TLS() {
		cert = g.Certificate
	}
	return preflight.CheckLoadBalancer(ctx, s.EC2, s.ACM, preflight.LoadBalancerRequest{
		Scheme: g.Scheme(), Certificate: cert, SubnetIDs: render.LoadBalancerSubnets(g, join), SubnetZones: rep.SubnetZones, VpcID: join.VpcId,
	})
}

// zoneNotes says, once per zone, which of a group's types that zone does
// not offer: one line per zone, however many types the group has.
func zoneNotes(group string, gaps []preflight.Gap) []string {
	var zones []string
	types := map[string][]string{}
	subnets := map[string][]string{}
	for _, g := range gaps {
		if _, ok := types[g.Zone]; !ok {
			zones = append(zones, g.Zone)
		}
		types[g.Zone] = append(types[g.Zone], g.InstanceType)
		subnets[g.Zone] = g.Subnets
	}
	var out []string
	for _, z := range zones {
		verb := "is"
		if len(types[z]) > 1 {
			verb = "are"
		}
		out = append(out, fmt.Sprintf("Note: group %s: %s %s not offered in %s (subnet %s): its nodes launch in the other zones\n",
			group, strings.Join(types[z], ", "), verb, z, strings.Join(subnets[z], ", ")))
	}
	return out
}

// noteOnce prints a note the first time this run has it to say: apply
// checks a group when it plans it and again when it creates it.
func (s *Service) noteOnce(msg string) {
	if _, said := s.said.LoadOrStore(msg, true); !said {
		s.printf("%s", msg)
	}
}

// ErrRefused marks an operation refused because of the state it met
// (unknown cluster or group, duplicate, dependants exist). Exit code 1.
var ErrRefused = errors.New("refused")

type refusal struct {
	msg   string
	cause error // what was met, for errors.Is: stacks.ErrNotFound, errNoCore

	// A cluster or group found missing: Suggest may name a close one,
	// which then replaces advice (creating what was only mistyped).
	missing *missingName
}

// missingName is the cluster, or the group of a cluster, a command named
// and did not find.
type missingName struct {
	cluster, group string
	advice         string // said unless a close name is: " (create it with ...)"
	closest        string // set by Suggest
	// region looked in, set by Suggest: a cluster may well live in
	// another, so the region is said and creating one is advised for
	// this region by name.
	region string
}

func (r *refusal) Error() string {
	m := r.missing
	switch {
	case m == nil:
		return r.msg
	case m.region == "" && m.closest != "":
		return r.msg + "; did you mean " + m.closest + "?"
	case m.region == "":
		return r.msg + m.advice
	}
	msg := r.msg
	if m.group == "" {
		msg = strings.Replace(msg, " not found", " not found in "+m.region, 1)
	}
	switch {
	case m.closest != "":
		return msg + "; did you mean " + m.closest + "?"
	case m.advice != "":
		return fmt.Sprintf("%s (in another region? give --region; a new cluster here: clusterctl create-core %s --region %s)", msg, m.cluster, m.region)
	}
	return msg
}
func (r *refusal) Is(target error) bool {
	return target == ErrRefused || r.cause != nil && errors.Is(r.cause, target)
}

func refused(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

// refusedFor is refused, saying what was met.
func refusedFor(cause error, format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...), cause: cause}
}

// errNoCore: the cluster has no core stack.
var errNoCore = errors.New("no core stack")

// getCore reads the core stack and checks that it is a clusterctl core in a
// state groups can join.
func (s *Service) getCore(ctx context.Context, cluster string) (*stacks.Stack, error) {
	core, err := s.Stacks.Get(ctx, cluster)
	if errors.Is(err, stacks.ErrNotFound) {
		return nil, clusterNotFound(errNoCore, cluster, " (create it with `clusterctl create-core "+cluster+"`)")
	}
	if err != nil {
		return nil, err
	}
	if core.Tags[names.TagRole] != names.RoleCore || core.Tags[names.TagCluster] != cluster {
		return nil, refused("stack %q is not a clusterctl core (no %s=core tag)", cluster, names.TagRole)
	}
	return core, nil
}

// groupStacks lists the groups of a cluster: the stacks whose ownership
// tags and names agree; the stacks that carry the cluster's tags under
// another name come back as conflicts, never to be touched.
func (s *Service) groupStacks(ctx context.Context, cluster string) ([]query.Group, []query.Conflict, error) {
	return query.ListGroups(ctx, s.CFN, s.ASG, cluster)
}

// printf says what the command does, among the live progress of the
// stacks when there is some (a line printed under a redrawn block would
// break it).
func (s *Service) printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if s.Stacks != nil && s.Stacks.Say(msg) {
		return
	}
	fmt.Fprint(s.IO.ErrOut, msg)
}

// confirm asks before a destructive step. Without a terminal it needs --yes.
func (s *Service) confirm(ctx context.Context, yes bool, question string) error {
	if yes {
		return nil
	}
	if !s.IO.InTTY {
		return errs.Usage("refusing to %s without confirmation: pass --yes when not on a terminal", question)
	}
	ok, err := s.IO.Confirm(ctx, "Really "+question+"?")
	if err != nil {
		return fmt.Errorf("not confirmed: %w", err)
	}
	if !ok {
		return refused("not confirmed")
	}
	return nil
}

// build is what a render takes of this clusterctl: its version and the
// hashes of the node agents it pins.
func (s *Service) build(ctx context.Context) (render.Build, error) {
	set, err := s.agents(ctx)
	if err != nil {
		return render.Build{}, err
	}
	return BuildOf(s.Version, set), nil
}

// BuildOf is what a render takes of a clusterctl of version carrying the
// node agents set: the version and the agents' hashes.
func BuildOf(version string, set agentbin.Set) render.Build {
	return render.Build{Version: version, Agents: set.Hashes()}
}
