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
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/logs"
	"github.com/clusterctl/clusterctl/internal/preflight"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
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
	List(ctx context.Context) ([]stacks.Stack, error)
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

// Run identifies one run of a command in the leases it takes.
type Run struct {
	Command string        // the command line, as typed (without the program name)
	ID      string        // the run id its ClientRequestTokens carry
	TTL     time.Duration // of its leases; 0: lease.DefaultTTL
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

// BuildOf is what a render takes of a clusterctl of version carrying the
// node agents set: the version and the agents' hashes.
func BuildOf(version string, set agentbin.Set) render.Build {
	return render.Build{Version: version, Agents: set.Hashes()}
}
