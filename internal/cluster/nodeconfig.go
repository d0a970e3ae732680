package cluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// ObjectPutter stores objects in the cluster bucket.
type ObjectPutter interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// UploadArtifacts puts a rendered stack's artifacts (a group's node
// configuration) into the cluster bucket, server-side encrypted. It must
// run before the stack is created or updated: new nodes fetch them at boot.
// Keys are content-addressed and never deleted here, so a rollback to the
// previous launch template finds its configuration too; putting an object
// again is harmless.
func UploadArtifacts(ctx context.Context, api ObjectPutter, bucket string, arts []render.Artifact) error {
	if len(arts) == 0 {
		return nil
	}
	if bucket == "" {
		return fmt.Errorf("uploading node configuration: the core has no bucket")
	}
	for _, a := range arts {
		_, err := api.PutObject(ctx, &s3.PutObjectInput{
			Bucket:               aws.String(bucket),
			Key:                  aws.String(a.Key),
			Body:                 bytes.NewReader(a.Body),
			ContentLength:        aws.Int64(int64(len(a.Body))),
			ContentType:          aws.String("text/x-shellscript"),
			ServerSideEncryption: s3types.ServerSideEncryptionAes256,
		})
		if err != nil {
			return fmt.Errorf("uploading node configuration s3://%s/%s: %w", bucket, a.Key, err)
		}
	}
	return nil
}

// uploadArtifacts is UploadArtifacts with the service's S3 client, saying
// what it does. A key is its content's hash: one the bucket holds already
// is that very configuration, neither uploaded nor said again (an update
// that changes no node's configuration says nothing of it).
func (s *Artifacts) uploadArtifacts(ctx context.Context, bucket string, r *render.Rendered) error {
	var news []render.Artifact
	for _, a := range r.Artifacts {
		there, err := s.objectExists(ctx, bucket, a.Key)
		if err != nil {
			return err
		}
		if !there {
			s.say.printf("Uploading node configuration s3://%s/%s\n", bucket, a.Key)
			news = append(news, a)
		}
	}
	return UploadArtifacts(ctx, s.S3, bucket, news)
}

// Node configurations are content-addressed and uploaded before the stack
// that needs them; what no launch template names any more is removed by
// the next operation on its group (or, for a group that is gone, on its
// cluster), under the group's lease: a re-run converges, and nothing is
// left in the bucket for good. Only once it is ConfigGrace old, though: a
// group deployed by hand uploads its configuration before it creates the
// stack whose launch template names it, and takes no lease.

// ConfigGrace is how long a node configuration no launch template names
// is kept after it was last written.
const ConfigGrace = time.Hour

// nodeConfigKeyRE finds the node configuration keys a launch template's
// user data fetches.
var nodeConfigKeyRE = regexp.MustCompile(regexp.QuoteMeta(names.NodeConfigPrefix) + `/[a-zA-Z][-a-zA-Z0-9]*/node-[0-9a-f]{64}\.(?:sh|env)`)

// keptVersions is how many launch template versions keep their node
// configuration: the current one, and the previous one, which a rollback
// returns to.
const keptVersions = 2

// referencedConfigs returns the node configuration keys named by the
// newest launch template versions of a group's stack st (nil: there is no
// stack, so none). known is false when they cannot be told for sure (no
// launch template to read, user data that names none): then nothing may
// be removed.
func (s *Artifacts) referencedConfigs(ctx context.Context, st *stacks.Stack) (refs map[string]bool, known bool, err error) {
	refs = map[string]bool{}
	if st == nil {
		return refs, true, nil
	}
	r, err := s.Stacks.Resource(ctx, st.Name, names.ResourceLaunchTemplate)
	switch {
	case errors.Is(err, stacks.ErrNoResource) || errors.Is(err, stacks.ErrNotFound):
		// A dead stack holds no resources; any other should have one.
		return refs, stacks.Classify(st.Status) == stacks.FailedDead, nil
	case err != nil:
		return nil, false, err
	case r.PhysicalID == "":
		return refs, false, nil
	}
	versions, err := s.launchTemplateVersions(ctx, r.PhysicalID, nil)
	if err != nil {
		return nil, false, err
	}
	slices.SortFunc(versions, func(a, b ec2types.LaunchTemplateVersion) int {
		return int(aws.ToInt64(b.VersionNumber) - aws.ToInt64(a.VersionNumber))
	})
	for _, v := range versions[:min(len(versions), keptVersions)] {
		for _, k := range configKeys(v) {
			refs[k] = true
		}
	}
	return refs, len(refs) > 0, nil
}

// launchTemplateVersions reads the versions of a launch template (all of
// them when versions is nil); none when it does not exist.
func (s *Artifacts) launchTemplateVersions(ctx context.Context, id string, versions []string) ([]ec2types.LaunchTemplateVersion, error) {
	var out []ec2types.LaunchTemplateVersion
	p := ec2.NewDescribeLaunchTemplateVersionsPaginator(s.EC2, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(id), Versions: versions})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if strings.HasPrefix(errorCode(err), "InvalidLaunchTemplateId.") || strings.HasPrefix(errorCode(err), "InvalidLaunchTemplateName.") {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("describing launch template %s: %w", id, err)
		}
		out = append(out, page.LaunchTemplateVersions...)
	}
	return out, nil
}

// configKeys lists the node configuration keys a launch template version's
// user data names.
func configKeys(v ec2types.LaunchTemplateVersion) []string {
	if v.LaunchTemplateData == nil || v.LaunchTemplateData.UserData == nil {
		return nil
	}
	ud, err := base64.StdEncoding.DecodeString(aws.ToString(v.LaunchTemplateData.UserData))
	if err != nil {
		ud = []byte(aws.ToString(v.LaunchTemplateData.UserData))
	}
	return nodeConfigKeyRE.FindAllString(string(ud), -1)
}

// nodeConfigs are the node configuration versions in the cluster bucket,
// by group.
type nodeConfigs map[string][]s3types.ObjectIdentifier

// listNodeConfigs lists the node configurations under prefix (a group's,
// or every group's: names.NodeConfigPrefix + "/").
func (s *Artifacts) listNodeConfigs(ctx context.Context, bucket, prefix string) (nodeConfigs, error) {
	all := nodeConfigs{}
	err := s.eachVersionPage(ctx, bucket, prefix, func(ids []s3types.ObjectIdentifier) error {
		for _, id := range ids {
			rest := strings.TrimPrefix(aws.ToString(id.Key), names.NodeConfigPrefix+"/")
			if g, _, ok := strings.Cut(rest, "/"); ok {
				all[g] = append(all[g], id)
			}
		}
		return nil
	})
	return all, err
}

// has tells whether the listing holds key of group.
func (c nodeConfigs) has(group, key string) bool {
	return slices.ContainsFunc(c[group], func(id s3types.ObjectIdentifier) bool { return aws.ToString(id.Key) == key })
}

// tidyNodeConfigs removes, from one listing of the bucket, the node
// configurations of group that its stack st (nil: none) no longer uses,
// and those of the cluster's groups that have no stack. It returns the
// listing. The caller holds group's lease. Those of group are removed
// once grace old (0: at once, when the group itself is removed), the
// others' once ConfigGrace old.
func (s *Artifacts) tidyNodeConfigs(ctx context.Context, in leased, group string, st *stacks.Stack, grace time.Duration) (nodeConfigs, error) {
	all, err := s.listNodeConfigs(ctx, in.bucket, names.NodeConfigPrefix+"/")
	if err != nil {
		return nil, err
	}
	if all[group], err = s.pruneNodeConfigs(ctx, in.bucket, group, st, all[group], grace); err != nil {
		return nil, err
	}
	return all, s.sweepNodeConfigs(ctx, in, group, all)
}

// pruneNodeConfigs removes the node configurations of group (versions,
// as listed) that no launch template version of its stack st (nil: there
// is none) keeps and that were last written over grace ago, and returns
// those left. A stack with an operation in progress is left alone: its
// templates are moving.
func (s *Artifacts) pruneNodeConfigs(ctx context.Context, bucket, group string, st *stacks.Stack, versions []s3types.ObjectIdentifier, grace time.Duration) ([]s3types.ObjectIdentifier, error) {
	if len(versions) == 0 || st != nil && stacks.Classify(st.Status) == stacks.InProgress {
		return versions, nil
	}
	refs, known, err := s.referencedConfigs(ctx, st)
	if err != nil || !known {
		return versions, err
	}
	// A key is as young as its newest version; a version whose time is
	// not known is taken for new.
	written := map[string]time.Time{}
	for _, id := range versions {
		k := aws.ToString(id.Key)
		t := s.status.now()
		if id.LastModifiedTime != nil {
			t = *id.LastModifiedTime
		}
		if t.After(written[k]) {
			written[k] = t
		}
	}
	cutoff := s.status.now().Add(-grace)
	used := func(id s3types.ObjectIdentifier) bool {
		k := aws.ToString(id.Key)
		return refs[k] || grace > 0 && written[k].After(cutoff)
	}
	unused := slices.DeleteFunc(slices.Clone(versions), used)
	if err := s.deleteIdentifiers(ctx, bucket, unused); err != nil {
		return nil, fmt.Errorf("removing unused node configurations of group %q: %w", group, err)
	}
	if n := len(distinctKeys(unused)); n > 0 {
		s.say.printf("Removed %s no launch template of group %s uses\n", query.Plural(n, "node configuration"), group)
	}
	return slices.DeleteFunc(slices.Clone(versions), func(id s3types.ObjectIdentifier) bool { return !used(id) }), nil
}

// sweepNodeConfigs removes the node configurations of the cluster's
// groups that have no stack any more (a remove-group that was killed
// before it cleaned up, and never re-run), each under its group's lease
// and listed again under it: a group that another run is creating is left
// alone. own is the group the caller holds the lease of.
func (s *Artifacts) sweepNodeConfigs(ctx context.Context, in leased, own string, all nodeConfigs) error {
	cluster := in.core.Name
	var others []string
	for g := range all {
		if g != own && spec.CheckGroupName(cluster, g) == nil {
			others = append(others, g)
		}
	}
	if len(others) == 0 || in.leases == nil {
		return nil
	}
	live, err := query.ListNames(ctx, s.CFN)
	if err != nil {
		return err
	}
	slices.Sort(others)
	for _, g := range others {
		if slices.Contains(live.Groups[cluster], g) {
			continue
		}
		if err := s.sweepGroup(ctx, in, g); err != nil {
			return err
		}
	}
	return nil
}

// sweepGroup removes the node configurations of group, which had no stack,
// under its lease.
func (s *Artifacts) sweepGroup(ctx context.Context, in leased, group string) error {
	l, err := in.leases.Acquire(ctx, lease.Group(group))
	if errors.Is(err, lease.ErrHeld) {
		return nil // another run works on that group
	}
	if err != nil {
		return err
	}
	defer l.Release(ctx)
	if _, err := s.Stacks.Get(ctx, names.GroupStack(in.core.Name, group)); !errors.Is(err, stacks.ErrNotFound) {
		return err // created meanwhile: its own commands tidy it
	}
	mine, err := s.listNodeConfigs(ctx, in.bucket, names.GroupConfigPrefix(group))
	if err != nil {
		return err
	}
	_, err = s.pruneNodeConfigs(ctx, in.bucket, group, nil, mine[group], ConfigGrace)
	return err
}

func distinctKeys(ids []s3types.ObjectIdentifier) []string {
	var keys []string
	for _, id := range ids {
		if k := aws.ToString(id.Key); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// objectExists tells whether the bucket holds key.
func (s *Artifacts) objectExists(ctx context.Context, bucket, key string) (bool, error) {
	_, err := s.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	switch code := errorCode(err); {
	case err == nil:
		return true, nil
	case code == "NotFound" || code == "NoSuchKey" || isNoBucket(err):
		return false, nil
	}
	return false, fmt.Errorf("looking for s3://%s/%s: %w", bucket, key, err)
}

// deleteIdentifiers deletes object versions, 1000 a call.
func (s *Artifacts) deleteIdentifiers(ctx context.Context, bucket string, ids []s3types.ObjectIdentifier) error {
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		// The key and version alone: S3 reads the other fields as
		// conditions, which general purpose buckets refuse.
		objs := make([]s3types.ObjectIdentifier, n)
		for i, id := range ids[:n] {
			objs[i] = s3types.ObjectIdentifier{Key: id.Key, VersionId: id.VersionId}
		}
		out, err := s.S3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: objs, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("emptying bucket %q: %w", bucket, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("emptying bucket %q: %s: %s", bucket, aws.ToString(e.Key), aws.ToString(e.Message))
		}
		ids = ids[n:]
	}
	return nil
}

// eachVersionPage calls fn with the object versions and delete markers of
// each page of the bucket's listing under prefix, each with its
// modification time. A bucket that is gone has none.
func (s *Artifacts) eachVersionPage(ctx context.Context, bucket, prefix string, fn func([]s3types.ObjectIdentifier) error) error {
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	p := s3.NewListObjectVersionsPaginator(s.S3, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if isNoBucket(err) {
				return nil
			}
			return fmt.Errorf("listing bucket %q: %w", bucket, err)
		}
		var ids []s3types.ObjectIdentifier
		for _, v := range page.Versions {
			ids = append(ids, s3types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId, LastModifiedTime: v.LastModified})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, s3types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId, LastModifiedTime: m.LastModified})
		}
		if err := fn(ids); err != nil {
			return err
		}
	}
	return nil
}

// repairGroup puts back what an unchanged group lacks: its node
// configuration, when it was deleted from the bucket (every node the group
// launches would fail to start), as the listing configs shows (nil: a dry
// run, which only looks and says), and the node agents it pins.
func (s *Artifacts) repairGroup(ctx context.Context, bucket, group string, r *render.Rendered, configs nodeConfigs, res *UpdateResult) error {
	dryRun := configs == nil
	for _, a := range r.Artifacts {
		// The listing holds every version and delete marker: a deleted
		// configuration is still listed, so whether it is there now is
		// asked of S3.
		ok := configs.has(group, a.Key)
		if dryRun || ok {
			var err error
			if ok, err = s.objectExists(ctx, bucket, a.Key); err != nil {
				return err
			}
		}
		if ok {
			continue
		}
		what := fmt.Sprintf("node configuration s3://%s/%s", bucket, a.Key)
		if dryRun {
			res.Repaired = append(res.Repaired, what+" is missing (would be uploaded again)")
			continue
		}
		if err := s.uploadArtifacts(ctx, bucket, &render.Rendered{Artifacts: []render.Artifact{a}}); err != nil {
			return err
		}
		res.Repaired = append(res.Repaired, "uploaded the missing "+what+" again")
	}
	// The node agents the group pins, as its nodes fetch them at boot.
	set, err := s.agents(ctx)
	if err != nil {
		return err
	}
	for _, b := range set.Sorted() {
		if pinned := pinnedAgents(r.Parameters)[b.Arch]; pinned != b.SHA256 {
			continue
		}
		ok, err := agentbin.Present(ctx, s.S3, bucket, b)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		what := fmt.Sprintf("node agent s3://%s/%s", bucket, b.Key())
		if dryRun {
			res.Repaired = append(res.Repaired, what+" is missing (would be uploaded again)")
			continue
		}
		if err := agentbin.Put(ctx, s.S3, bucket, b); err != nil {
			return err
		}
		res.Repaired = append(res.Repaired, "uploaded the missing "+what+" again")
	}
	if len(res.Repaired) > 0 {
		res.NoOp = false
	}
	return nil
}
