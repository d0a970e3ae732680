package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/preflight"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// CreateOptions shape how a stack is created.
type CreateOptions struct {
	NoRollback bool // keep a failed stack for debugging
	// ReplaceFailed deletes a dead stack of the same name (rolled back, or
	// kept failed by --no-rollback) before creating it again (groups only).
	ReplaceFailed bool
}

// Core runs the core's lifecycle: create, update, delete.
type Core struct {
	artifacts *Artifacts
	find      *Finder
	leases    *Leases
	observer  *Observer
	plans     *Plans
	requests  *Requests
	say       *Say
	CWLogs    LogsAPI
	EC2       EC2API
	S3        S3API
	SSM       SSMAPI
	Stacks    StackManager
	Version   string
	Sources   preflight.Sources // what a core's settings point at: the alarms' topic, the secrets' sources
}

// CreateCore creates the core stack of cluster name from its spec, waits
// for it and returns it. The VPC and subnets left out are resolved from
// the account (its default VPC, the VPC's subnets).
func (s *Core) CreateCore(ctx context.Context, name string, core spec.Core, o CreateOptions) (*stacks.Stack, error) {
	return s.createCore(ctx, name, core, o)
}

// createCore is how create-core and apply create a core: prepare, then
// create the stack and wait.
func (s *Core) createCore(ctx context.Context, name string, core spec.Core, o CreateOptions) (*stacks.Stack, error) {
	if err := spec.CheckClusterName(name); err != nil {
		return nil, err
	}
	if st, err := s.Stacks.Get(ctx, name); err == nil && creatingCore(st, name) {
		// A re-run of an interrupted create-core converges: it waits for
		// the creation, uploading the node agent as the first run would.
		s.say.printf("Core stack %s is being created (by an earlier create-core): waiting for it\n", name)
		sts, err := s.artifacts.resumeCreate(ctx, st, func(ctx context.Context) ([]*stacks.Stack, error) {
			st, err := s.Stacks.Wait(ctx, name)
			return []*stacks.Stack{st}, err
		})
		if err != nil {
			return nil, explain(err, name, "")
		}
		return sts[0], nil
	}
	r, set, err := s.prepareCore(ctx, name, core)
	if err != nil {
		return nil, err
	}
	subnets := spec.SplitList(r.Parameters[names.ParamSubnetIDs])
	s.say.printf("Creating core stack %s in %s (%s)\n", r.StackName, r.Parameters[names.ParamVpcID], query.Plural(len(subnets), "subnet"))
	st, err := s.artifacts.whileCreating(ctx, name, set, func(ctx context.Context, started func(string)) (*stacks.Stack, error) {
		return s.Stacks.CreateStarted(ctx, specFrom(r, o.NoRollback), started)
	})
	if err != nil {
		return nil, explain(err, name, "")
	}
	return st, nil
}

// prepareCore is everything create-core does before it changes anything:
// the core rendered, pinning the node agents it returns.
func (s *Core) prepareCore(ctx context.Context, name string, core spec.Core) (*render.Rendered, agentbin.Set, error) {
	if err := spec.CheckClusterName(name); err != nil {
		return nil, nil, err
	}
	if err := core.Complete(); err != nil {
		return nil, nil, err
	}
	if err := s.leases.resolveOperators(ctx, &core, nil); err != nil {
		return nil, nil, err
	}
	existing, err := s.Stacks.Get(ctx, name)
	switch {
	case err == nil && isCoreOf(existing, name) && stacks.Classify(existing.Status) == stacks.InProgress:
		return nil, nil, refused("cluster %q already exists (stack status %s): follow the operation in progress with `clusterctl wait %s`", name, existing.Status, name)
	case err == nil && isCoreOf(existing, name):
		return nil, nil, refused("cluster %q already exists (stack status %s)", name, existing.Status)
	case err == nil:
		return nil, nil, refused("stack %s already exists and is %s (status %s): the core of cluster %q would need that name; choose another cluster name", name, stackKind(existing), existing.Status, name)
	case !errors.Is(err, stacks.ErrNotFound):
		return nil, nil, err
	}
	if err := s.joinNetwork(ctx, &core); err != nil {
		return nil, nil, err
	}
	vpc, subnets, err := s.resolveNetwork(ctx, core.VpcID, core.SubnetIDs)
	if err != nil {
		return nil, nil, err
	}
	if err := s.preflightCore(ctx, core, vpc, subnets); err != nil {
		return nil, nil, err
	}
	notes, err := s.Sources.CheckCore(ctx, nil, core)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range notes {
		s.say.printf("Note: %s\n", n)
	}
	core.VpcID, core.SubnetIDs = vpc, subnets
	set, err := s.artifacts.agents(ctx)
	if err != nil {
		return nil, nil, err
	}
	r, err := render.Core(name, core, BuildOf(s.Version, set))
	if err != nil {
		return nil, nil, errs.AsUsage(err)
	}
	return r, set, nil
}

// preflightCore checks the core's settings against the account before the
// stack is created. The control node runs in the first subnet, so its
// zone must offer the type; the others are for groups, which launch
// where their types are offered.
func (s *Core) preflightCore(ctx context.Context, core spec.Core, vpc string, subnets []string) error {
	rep, err := preflight.Check(ctx, s.EC2, s.SSM, preflight.Request{
		InstanceTypes: []string{core.InstanceType}, Image: core.ImageID, KeyName: core.KeyName,
		SubnetIDs: subnets, VpcID: vpc, Zones: preflight.SomeZone,
	})
	if err != nil {
		return err
	}
	for _, g := range rep.Unoffered {
		if slices.Contains(g.Subnets, subnets[0]) {
			return errs.Usage("pre-flight: instance type %s is not offered in %s, the zone of subnet %s where the control node runs: pass --subnet-ids starting with a subnet of another zone", core.InstanceType, g.Zone, subnets[0])
		}
	}
	return s.plans.checkPublicIPs(ctx, "the managers", vpc, subnets, core.PublicIPs)
}

// DeleteCoreOptions are the delete-core flags.
type DeleteCoreOptions struct {
	Name         string
	Cascade      bool
	Yes          bool
	RetainFailed bool // as RemoveOptions.RetainFailed, for the core stack
}

// CoreDeletion is how delete-core ended: the core stack's deletion and,
// with --cascade, each group stack's.
type CoreDeletion struct {
	stacks.Outcome
	Groups []stacks.Outcome
	// AlreadyDeleted: the core was deleted before this run (an interrupted
	// delete-core finished meanwhile); at most its bucket, which the stack
	// leaves behind, was left to delete.
	AlreadyDeleted bool
	// Bucket is the core's bucket, deleted after its stack ("" when it had
	// none, or it was gone already).
	Bucket string
}

func groupNamesOf(groups []query.Group) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g.Group)
	}
	return out
}

// specFrom turns a rendered template into a stack spec.
func specFrom(r *render.Rendered, noRollback bool) stacks.Spec {
	spec := stacks.Spec{Name: r.StackName, Template: r.Template, Tags: r.Tags, Capabilities: r.Capabilities, DisableRollback: noRollback}
	for _, k := range slices.Sorted(maps.Keys(r.Parameters)) {
		spec.Parameters = append(spec.Parameters, stacks.Param{Key: k, Value: r.Parameters[k]})
	}
	return spec
}

// PlanCore is create-core --dry-run: every check and lookup create-core
// makes before it creates anything (the name is free, the network
// resolved), and what it would deploy. It changes nothing.
func (s *Core) PlanCore(ctx context.Context, name string, core spec.Core) (*Deployment, error) {
	r, _, err := s.prepareCore(ctx, name, core)
	if err != nil {
		return nil, err
	}
	return DeploymentOf(r), nil
}

// countVersions counts the object versions and delete markers under
// prefix ("" for the whole bucket): what emptying it deletes.
func (s *Core) countVersions(ctx context.Context, bucket, prefix string) (int, error) {
	n := 0
	err := s.artifacts.eachVersionPage(ctx, bucket, prefix, func(ids []s3types.ObjectIdentifier) error {
		n += len(ids)
		return nil
	})
	return n, err
}

// emptyBucket deletes every object version and delete marker under prefix
// ("" for the whole bucket).
func (s *Core) emptyBucket(ctx context.Context, bucket, prefix string) (int, error) {
	n, _, err := s.deleteVersions(ctx, bucket, prefix, nil)
	return n, err
}

// deleteVersions deletes the object versions and delete markers under
// prefix except those keep says to keep (nil: none). It returns how many
// it deleted and their keys, each once.
func (s *Core) deleteVersions(ctx context.Context, bucket, prefix string, keep func(key, version string) bool) (int, []string, error) {
	deleted := 0
	var keys []string
	err := s.artifacts.eachVersionPage(ctx, bucket, prefix, func(ids []s3types.ObjectIdentifier) error {
		if keep != nil {
			ids = slices.DeleteFunc(ids, func(id s3types.ObjectIdentifier) bool { return keep(aws.ToString(id.Key), aws.ToString(id.VersionId)) })
		}
		for _, k := range distinctKeys(ids) {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		deleted += len(ids)
		return s.artifacts.deleteIdentifiers(ctx, bucket, ids)
	})
	return deleted, keys, err
}

// DeleteCore deletes a cluster's core stack. It refuses while groups exist
// unless Cascade, which deletes them first (in parallel). The bucket is
// emptied first because CloudFormation cannot delete a non-empty bucket.
//
// It holds the cluster's lease, which keeps every group command out, from
// before it lists the groups until CloudFormation has accepted the core's
// deletion; the group commands refuse a core that is being deleted from
// then on. The bucket is emptied of everything but the lease itself, which
// is released right after DeleteStack, long before CloudFormation gets to
// the bucket. Re-run after an interruption it converges: a core being
// deleted is followed, one already deleted reported.
func (s *Core) DeleteCore(ctx context.Context, o DeleteCoreOptions) (*CoreDeletion, error) {
	if err := spec.CheckClusterName(o.Name); err != nil {
		return nil, err
	}
	core, err := s.find.getCore(ctx, o.Name)
	if errors.Is(err, errNoCore) {
		if prev, lerr := s.Stacks.LastDeleted(ctx, o.Name); lerr == nil {
			return s.deleteLeftBucket(ctx, o, prev, err)
		}
	}
	if err != nil {
		return nil, err
	}
	if core.Status == "DELETE_IN_PROGRESS" {
		// An interrupted delete-core: its work is done but for the wait
		// and the bucket the stack leaves behind.
		bucket, err := s.find.coreBucket(ctx, core)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		st, err := s.Stacks.Wait(ctx, o.Name)
		if err != nil {
			return nil, explain(err, o.Name, "")
		}
		done := &CoreDeletion{Outcome: stacks.Outcome{Stack: o.Name, Status: st.Status, Duration: time.Since(start)}, Groups: []stacks.Outcome{}}
		if bucket != "" {
			if done.Bucket, err = s.deleteSurvivingBucket(ctx, bucket); err != nil {
				return nil, err
			}
		}
		return done, nil
	}
	groups, conflicts, err := s.find.groupStacks(ctx, o.Name)
	if err != nil {
		return nil, err
	}
	for _, c := range conflicts {
		s.say.printf("Note: %s\n", c)
	}
	groupNames := groupNamesOf(groups)
	if len(groups) > 0 && !o.Cascade {
		return nil, refused("cluster %q still has %s: %s; remove them first or pass --cascade", o.Name, query.Plural(len(groups), "group"), strings.Join(groupNames, ", "))
	}
	bucket, err := s.find.coreBucket(ctx, core)
	if err != nil {
		return nil, err
	}
	question := fmt.Sprintf("delete cluster %q", o.Name)
	if len(groups) > 0 {
		question += fmt.Sprintf(" and its groups %s", strings.Join(groupNames, ", "))
	}
	if bucket != "" && !o.Yes {
		n, err := s.countVersions(ctx, bucket, "")
		if err != nil {
			return nil, err
		}
		question += fmt.Sprintf(", emptying its bucket %s (%s)", bucket, query.Plural(n, "object version"))
	}
	if group := core.Outputs[names.OutputLogGroupName]; group != "" && !o.Yes {
		stored, err := s.logGroupBytes(ctx, group)
		if err != nil {
			return nil, err
		}
		question += fmt.Sprintf(", and its log group %s (%s stored)", group, sizeText(stored))
	}
	if err := s.say.confirm(ctx, o.Yes, question); err != nil {
		return nil, err
	}
	if bucket == "" {
		// A core that never got its bucket (rolled back) has nothing to
		// hold a lease in, and no group can join it.
		return s.deleteCore(ctx, o, nil, "", groupNames)
	}
	leases, err := s.leases.leasesIn(ctx, o.Name, bucket)
	if err != nil {
		return nil, err
	}
	l, err := leases.Acquire(ctx, lease.Cluster())
	if err != nil {
		return nil, err
	}
	defer s.leases.releaseAfterStart(ctx, l) // when DeleteStack was not reached
	gctx, cancel := l.Guard(ctx)
	defer cancel()
	done, err := s.deleteCore(gctx, o, l, bucket, groupNames)
	if lost := l.Err(); lost != nil && err != nil {
		return nil, fmt.Errorf("%w (%v)", lost, errs.Message(err))
	}
	return done, err
}

// deleteCore does the deletion under the cluster's lease l (nil: none).
// confirmed are the groups the operator agreed to delete.
func (s *Core) deleteCore(ctx context.Context, o DeleteCoreOptions, l *lease.Lease, bucket string, confirmed []string) (*CoreDeletion, error) {
	// The groups as they are now, under the lease: one added since the
	// question was asked was not agreed to.
	groups, _, err := s.find.groupStacks(ctx, o.Name)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		if !slices.Contains(confirmed, g.Group) {
			return nil, refused("group %q was added to cluster %q since delete-core listed its groups: nothing was deleted; run delete-core again", g.Group, o.Name)
		}
	}
	done := &CoreDeletion{Groups: []stacks.Outcome{}}
	if len(groups) > 0 {
		stackNames := make([]string, len(groups))
		for i, g := range groups {
			stackNames[i] = g.Stack
		}
		s.say.printf("Deleting %s: %s\n", query.Plural(len(stackNames), "group stack"), strings.Join(stackNames, ", "))
		outcomes, err := s.Stacks.DeleteMany(ctx, stackNames, 4)
		if err != nil {
			// The groups' deletions carry on; the core's has not started.
			return nil, explainResume(fmt.Errorf("deleting groups of %q: %w", o.Name, err), "finish with: clusterctl delete-core "+o.Name+" --cascade")
		}
		done.Groups = outcomes
	}
	start := time.Now()
	release := func() {}
	if l != nil {
		// Everything but the lease, which keeps group commands out until
		// the core is DELETE_IN_PROGRESS and is released right after, and
		// what only the managers (and, for commands/, the operators) may
		// delete while the stack's bucket policy stands:
		// deleteSurvivingBucket deletes it once the stack, and its policy
		// with it, is gone.
		guarded := append(names.ManagerWrittenPrefixes(), names.CommandPrefix+"/")
		keep := func(key, version string) bool {
			return l.Owns(key, version) || slices.ContainsFunc(guarded, func(p string) bool { return strings.HasPrefix(key, p) })
		}
		n, _, err := s.deleteVersions(ctx, bucket, "", keep)
		if err != nil {
			return nil, err
		}
		s.say.printf("Emptied bucket %s (%s)\n", bucket, query.Plural(n, "object version"))
		release = func() { s.leases.releaseAfterStart(ctx, l) }
	}
	if o.RetainFailed {
		s.say.printf("Deleting stack %s, keeping the resources that failed to delete\n", o.Name)
	} else {
		s.say.printf("Deleting stack %s\n", o.Name)
	}
	out, err := s.Stacks.DeleteStarted(ctx, o.Name, o.RetainFailed, release)
	if err != nil {
		return nil, explain(err, o.Name, "")
	}
	if bucket != "" {
		if done.Bucket, err = s.deleteSurvivingBucket(ctx, bucket); err != nil {
			return nil, err
		}
	}
	done.Outcome = out
	done.Duration = time.Since(start)
	return done, nil
}

// deleteLeftBucket finishes a delete-core interrupted after its stack was
// gone: the bucket the deleted stack retained may remain. A name proves
// nothing (any team may have had a stack of that name), so the bucket is
// deleted only when the deleted stack carried the cluster's core tags and
// the bucket carries them too; otherwise it is left, and the error says
// why. notFound is the error for a cluster that does not exist.
func (s *Core) deleteLeftBucket(ctx context.Context, o DeleteCoreOptions, prev *stacks.Stack, notFound error) (*CoreDeletion, error) {
	deleted, err := s.Stacks.Get(ctx, prev.ID)
	if err != nil {
		return nil, fmt.Errorf("reading the deleted stack %s: %w", o.Name, err)
	}
	bucket := ""
	switch r, err := s.Stacks.Resource(ctx, prev.ID, names.ResourceBucket); {
	case errors.Is(err, stacks.ErrNoResource):
	case err != nil:
		return nil, err
	default:
		bucket = r.PhysicalID
	}
	if bucket != "" {
		if ok, err := s.bucketExists(ctx, bucket); err != nil {
			return nil, err
		} else if !ok {
			bucket = ""
		}
	}
	if deleted.Tags[names.TagCluster] != o.Name || deleted.Tags[names.TagRole] != names.RoleCore {
		msg := fmt.Sprintf("%s; the deleted stack %s was not clusterctl's (no %s=%s, %s=%s tags)", errs.Message(notFound), o.Name, names.TagCluster, o.Name, names.TagRole, names.RoleCore)
		if bucket != "" {
			msg += fmt.Sprintf(": its bucket %s was left untouched", bucket)
		}
		return nil, refusedFor(errNoCore, "%s", msg)
	}
	done := &CoreDeletion{Outcome: stacks.Outcome{Stack: o.Name, Status: prev.Status}, Groups: []stacks.Outcome{}, AlreadyDeleted: true}
	if bucket == "" {
		return done, nil
	}
	if missing, err := s.find.missingCoreTag(ctx, bucket, o.Name); err != nil {
		return nil, err
	} else if missing != "" {
		return nil, refused("cluster %q was already deleted, but the bucket its stack left is not known to be clusterctl's (bucket %s carries no %s tag; a cluster created before clusterctl tagged its bucket gets the tag from update-core): it was left untouched; delete it with the AWS CLI if it is yours", o.Name, bucket, missing)
	}
	if !o.Yes {
		n, err := s.countVersions(ctx, bucket, "")
		if err != nil {
			return nil, err
		}
		if err := s.say.confirm(ctx, false, fmt.Sprintf("delete bucket %s (%s), left by the deleted core of cluster %q", bucket, query.Plural(n, "object version"), o.Name)); err != nil {
			return nil, err
		}
	}
	if done.Bucket, err = s.deleteSurvivingBucket(ctx, bucket); err != nil {
		return nil, err
	}
	return done, nil
}

// bucketExists tells whether the bucket is there.
func (s *Core) bucketExists(ctx context.Context, bucket string) (bool, error) {
	_, err := s.S3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	if code := errorCode(err); code == "NotFound" || code == "NoSuchBucket" {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking for bucket %s: %w", bucket, err)
	}
	return true, nil
}

// deleteSurvivingBucket deletes the core's bucket once its stack is gone:
// the stack retains it (DeletionPolicy Retain), because the managers write
// to it until CloudFormation has terminated them, so a bucket emptied
// before the stack's deletion would not be empty when CloudFormation got to
// it. It returns the bucket's name, or "" when it was gone already.
func (s *Core) deleteSurvivingBucket(ctx context.Context, bucket string) (string, error) {
	if ok, err := s.bucketExists(ctx, bucket); err != nil || !ok {
		return "", err
	}
	n, err := s.emptyBucket(ctx, bucket, "")
	if err != nil {
		return "", err
	}
	if _, err := s.S3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil && !isNoBucket(err) {
		return "", fmt.Errorf("deleting bucket %s after the core's stack: %w", bucket, err)
	}
	if n > 0 {
		s.say.printf("Deleted bucket %s (%s written since it was emptied)\n", bucket, query.Plural(n, "object version"))
	} else {
		s.say.printf("Deleted bucket %s\n", bucket)
	}
	return bucket, nil
}

// logGroupBytes is how many bytes the log group stores, as CloudWatch
// Logs says (0 for a group that is gone already).
func (s *Core) logGroupBytes(ctx context.Context, group string) (int64, error) {
	p := cloudwatchlogs.NewDescribeLogGroupsPaginator(s.CWLogs, &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: aws.String(group)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, fmt.Errorf("describing log group %s: %w", group, err)
		}
		for _, g := range page.LogGroups {
			if aws.ToString(g.LogGroupName) == group {
				return aws.ToInt64(g.StoredBytes), nil
			}
		}
	}
	return 0, nil
}
