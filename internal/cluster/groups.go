package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/stacks"
	"github.com/clusterctl/clusterctl/internal/validate"
)

// GroupOptions are the add-agents (and render group) flags.
type GroupOptions struct {
	Cluster      string
	Group        string
	InstanceType string
	Count        int
	Min, Max     *int // nil: min 0, max = count + 1
	Labels       []string
	ImageID      string
	VolumeSize   int
	SubnetIDs    []string
	SSHCIDR      string
	NoRollback   bool
	// ReplaceFailed deletes a dead group stack of the same name (rolled
	// back, or kept failed by --no-rollback) before creating it again.
	ReplaceFailed bool
}

// Spec validates the options and returns the render input (without the join).
func (o GroupOptions) Spec(version string) (render.GroupSpec, error) {
	// One node of headroom by default: a rolling update can then start a
	// replacement before it stops a node, and the group keeps its capacity
	// (CloudFormation needs MinInstancesInService below MaxSize).
	min, max := 0, o.Count+1
	if o.Min != nil {
		min = *o.Min
	}
	if o.Max != nil {
		max = *o.Max
	}
	labels, err := validate.Labels(o.Labels)
	checks := []error{validate.ClusterName(o.Cluster), validate.GroupName(o.Cluster, o.Group), validate.InstanceType(o.InstanceType),
		validate.Capacity(o.Count, min, max), err, validate.ImageID(o.ImageID), validate.VolumeSize(o.VolumeSize), validate.SubnetIDs(o.SubnetIDs)}
	if o.SSHCIDR != "" {
		checks = append(checks, validate.CIDR(o.SSHCIDR))
	}
	for _, err := range checks {
		if err != nil {
			return render.GroupSpec{}, errs.AsUsage(err)
		}
	}
	return render.GroupSpec{
		Cluster: o.Cluster, Group: o.Group, InstanceType: o.InstanceType, ImageID: o.ImageID,
		Desired: o.Count, Min: min, Max: max, VolumeSize: o.VolumeSize, Labels: labels,
		SubnetIDs: o.SubnetIDs, SSHCIDR: o.SSHCIDR, Version: version,
	}, nil
}

// AddAgents reads the core, creates the group stack joined to it, waits, and
// returns the group's nodes.
func (s *Service) AddAgents(ctx context.Context, o GroupOptions) ([]query.Node, error) {
	spec, err := o.Spec(s.Version)
	if err != nil {
		return nil, err
	}
	core, err := s.getCore(ctx, o.Cluster)
	if err != nil {
		return nil, err
	}
	if err := usable(core, "core"); err != nil {
		return nil, err
	}
	name := render.GroupStackName(o.Cluster, o.Group)
	existing, err := s.Stacks.Get(ctx, name)
	switch {
	case err == nil && o.ReplaceFailed && stacks.Classify(existing.Status) == stacks.FailedDead:
		s.printf("Deleting dead group stack %s (%s) before creating it again\n", name, existing.Status)
		if err := s.Stacks.Delete(ctx, name); err != nil {
			return nil, withReattach(err, o.Cluster, o.Group)
		}
	case err == nil && stacks.Classify(existing.Status) == stacks.FailedDead:
		return nil, refused("group %q of cluster %q exists but is dead (stack %s, %s)\n%s", o.Group, o.Cluster, name, existing.Status, stacks.Advice(existing, stacks.RefOf(existing), nil))
	case err == nil:
		return nil, refused("group %q already exists in cluster %q (stack %s, status %s)", o.Group, o.Cluster, name, existing.Status)
	case !errors.Is(err, stacks.ErrNotFound):
		return nil, err
	}
	if err := s.preflightGroup(ctx, core, spec); err != nil {
		return nil, err
	}
	r, err := renderJoined(core, spec)
	if err != nil {
		return nil, err
	}
	if err := s.uploadArtifacts(ctx, r.Parameters["BucketName"], r); err != nil {
		return nil, err
	}
	s.printf("Creating group stack %s (%d x %s) joined to core %s\n", name, spec.Desired, spec.InstanceType, o.Cluster)
	if _, err := s.Stacks.Create(ctx, specFrom(r, o.NoRollback)); err != nil {
		return nil, withReattach(err, o.Cluster, o.Group)
	}
	return query.ListNodes(ctx, s.EC2, o.Cluster, o.Group)
}

// renderJoined renders a group joined to the core's current outputs.
func renderJoined(core *stacks.Stack, spec render.GroupSpec) (*render.Rendered, error) {
	join, err := render.JoinFromOutputs(core.Outputs)
	if err != nil {
		return nil, fmt.Errorf("reading the join contract of core %q: %w", core.Name, err)
	}
	spec.Join = join
	r, err := render.Group(spec)
	if err != nil {
		return nil, errs.AsUsage(err)
	}
	return r, nil
}

// UpdateOptions are the update-group flags. Nil/empty means "keep the
// previous value".
type UpdateOptions struct {
	Cluster, Group string
	InstanceType   string
	Count          *int
	Min, Max       *int
	Labels         []string
	ImageID        string
	VolumeSize     *int
	SubnetIDs      []string
	MaxBatch       *int
	MinInService   *int
	DryRun         bool
	// OnPlan, when set, is shown the plan before it is applied.
	OnPlan func(*stacks.Plan) error
}

// UpdateResult says what update-group did.
type UpdateResult struct {
	Plan    *stacks.Plan
	NoOp    bool // nothing would change
	Applied bool
}

// UpdateGroup re-reads the core's outputs, merges the given values over the
// group's previous ones, and applies the change through a change set. It
// touches neither the core nor any other group.
func (s *Service) UpdateGroup(ctx context.Context, o UpdateOptions) (*UpdateResult, error) {
	if err := validate.ClusterName(o.Cluster); err != nil {
		return nil, errs.AsUsage(err)
	}
	if err := validate.GroupName(o.Cluster, o.Group); err != nil {
		return nil, errs.AsUsage(err)
	}
	// Check what can be checked before any AWS call.
	if o.InstanceType != "" {
		if err := validate.InstanceType(o.InstanceType); err != nil {
			return nil, errs.AsUsage(err)
		}
	}
	if err := validate.ImageID(o.ImageID); err != nil {
		return nil, errs.AsUsage(err)
	}
	if _, err := validate.Labels(o.Labels); err != nil {
		return nil, errs.AsUsage(err)
	}
	core, err := s.getCore(ctx, o.Cluster)
	if err != nil {
		return nil, err
	}
	name := render.GroupStackName(o.Cluster, o.Group)
	// The revision first: a change after it, even between the reads below,
	// stops the update before it reverts that change.
	revision, err := s.Stacks.Revision(ctx, name)
	if err != nil && !errors.Is(err, stacks.ErrNotFound) {
		return nil, err
	}
	prev, err := s.Stacks.Get(ctx, name)
	if errors.Is(err, stacks.ErrNotFound) {
		return nil, refused("group %q not found in cluster %q (no stack %s)", o.Group, o.Cluster, name)
	}
	if err != nil {
		return nil, err
	}
	if prev.Tags[query.TagCluster] != o.Cluster || prev.Tags[query.TagRole] != "agents" {
		return nil, refused("stack %s is not an agent group of cluster %q", name, o.Cluster)
	}
	if err := usable(prev, "group"); err != nil {
		return nil, err
	}
	if err := usable(core, "core"); err != nil {
		return nil, err
	}
	deployed, err := s.Stacks.Template(ctx, name)
	if err != nil {
		return nil, err
	}
	spec, err := mergeGroupSpec(prev, readIntent(deployed, prev.Tags), o, s.Version)
	if err != nil {
		return nil, err
	}
	if err := s.preflightGroup(ctx, core, spec); err != nil {
		return nil, err
	}
	r, err := renderJoined(core, spec)
	if err != nil {
		return nil, err
	}
	stackSpec := specFrom(r, false)
	stackSpec.Revision = revision
	same, err := s.unchanged(ctx, prev, deployed, r)
	if err != nil {
		return nil, err
	}
	if same {
		return &UpdateResult{NoOp: true}, nil
	}
	plan, err := s.Stacks.Plan(ctx, stackSpec)
	if err != nil {
		return nil, withReattach(err, o.Cluster, o.Group)
	}
	res := &UpdateResult{Plan: plan}
	if plan.Empty {
		res.NoOp = true
		return res, nil
	}
	if o.OnPlan != nil {
		if err := o.OnPlan(plan); err != nil {
			s.Stacks.Discard(ctx, plan)
			return res, err
		}
	}
	if o.DryRun {
		return res, s.Stacks.Discard(ctx, plan)
	}
	if err := s.uploadArtifacts(ctx, r.Parameters["BucketName"], r); err != nil {
		return res, err
	}
	if _, err := s.Stacks.Apply(ctx, plan); err != nil {
		return res, withReattach(err, o.Cluster, o.Group)
	}
	res.Applied = true
	return res, nil
}

// mergeGroupSpec takes each value from the options when given, else from the
// group's previous state: stack parameters for values, the deployed
// template's metadata for the operator's intent (labels, image, own subnets).
func mergeGroupSpec(prev *stacks.Stack, in render.Intent, o UpdateOptions, version string) (render.GroupSpec, error) {
	p := prev.Parameters
	atoi := func(key string) int { n, _ := strconv.Atoi(p[key]); return n }
	spec := render.GroupSpec{
		Cluster: o.Cluster, Group: o.Group, Version: version,
		InstanceType: p["InstanceType"], Desired: atoi("DesiredCapacity"), Min: atoi("MinSize"), Max: atoi("MaxSize"),
		VolumeSize: atoi("VolumeSize"), MaxBatch: in.MaxBatch, MinInService: in.MinInService,
	}
	if in.Image != "" && in.Image != "default" {
		spec.ImageID = in.Image
	}
	if in.Subnets == "own" {
		spec.SubnetIDs = splitList(p["SubnetIds"])
	}
	// Given labels replace the previous set as a whole.
	labelSpecs := o.Labels
	if len(labelSpecs) == 0 && in.Labels != "" && in.Labels != "-" {
		labelSpecs = []string{in.Labels}
	}
	parsed, err := validate.Labels(labelSpecs)
	if err != nil {
		return spec, errs.AsUsage(err)
	}
	spec.Labels = parsed

	if o.InstanceType != "" {
		spec.InstanceType = o.InstanceType
	}
	if o.ImageID != "" {
		spec.ImageID = o.ImageID
	}
	if len(o.SubnetIDs) > 0 {
		spec.SubnetIDs = o.SubnetIDs
	}
	if o.Count != nil {
		spec.Desired = *o.Count
		// Growing to max or shrinking under min with only -c moves the
		// bound along (keeping a node of headroom above), as an operator
		// would expect.
		if o.Max == nil && spec.Desired >= spec.Max {
			spec.Max = spec.Desired + 1
		}
		if o.Min == nil && spec.Desired < spec.Min {
			spec.Min = spec.Desired
		}
	}
	if o.Min != nil {
		spec.Min = *o.Min
	}
	if o.Max != nil {
		spec.Max = *o.Max
	}
	if o.VolumeSize != nil {
		spec.VolumeSize = *o.VolumeSize
	}
	if o.MaxBatch != nil {
		spec.MaxBatch = *o.MaxBatch
	}
	if o.MinInService != nil {
		spec.MinInService = *o.MinInService
	}
	for _, err := range []error{validate.Capacity(spec.Desired, spec.Min, spec.Max), validate.VolumeSize(spec.VolumeSize), validate.SubnetIDs(o.SubnetIDs)} {
		if err != nil {
			return spec, errs.AsUsage(err)
		}
	}
	return spec, nil
}

// readIntent reads what the operator asked for when the group was last
// deployed from the template's metadata; stack tags are the fallback for
// templates without it.
func readIntent(deployed []byte, tags map[string]string) render.Intent {
	if in, err := render.IntentFromTemplate(deployed); err == nil {
		return in
	}
	return render.Intent{Labels: tags[query.TagLabels], Image: tags[render.TagImage], Subnets: tags[render.TagSubnets]}
}

// deleteStack deletes one stack; with retainFailed a DELETE_FAILED stack is
// deleted keeping the resources that failed to delete.
func (s *Service) deleteStack(ctx context.Context, name string, retainFailed bool, cluster, group string) error {
	if retainFailed {
		s.printf("Deleting stack %s, keeping the resources that failed to delete\n", name)
		return withReattach(s.Stacks.DeleteRetaining(ctx, name, nil), cluster, group)
	}
	s.printf("Deleting stack %s\n", name)
	return withReattach(s.Stacks.Delete(ctx, name), cluster, group)
}

// unchanged tells whether the rendered group equals the deployed one, so an
// identical update creates no change set at all. The image parameter is an
// SSM path that CloudFormation resolves on every update, so it compares by
// the AMI it resolves to now. Tags need no comparison: they derive from the
// same spec as the template.
func (s *Service) unchanged(ctx context.Context, prev *stacks.Stack, deployed []byte, r *render.Rendered) (bool, error) {
	if !bytes.Equal(bytes.TrimSpace(deployed), bytes.TrimSpace(r.Template)) {
		return false, nil
	}
	for k, v := range r.Parameters {
		pv, ok := prev.Parameters[k]
		if !ok {
			return false, nil
		}
		if k == imageParameter {
			continue
		}
		if pv != v && !equalList(pv, v) {
			return false, nil
		}
	}
	path := r.Parameters[imageParameter]
	if path == "" {
		return true, nil
	}
	// CloudFormation reports the resolved AMI as ResolvedValue; some
	// endpoints report it as the value itself.
	was := prev.Resolved[imageParameter]
	if was == "" {
		was = prev.Parameters[imageParameter]
	}
	out, err := s.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(path)})
	if err != nil {
		return false, fmt.Errorf("resolving image parameter %s: %w", path, err)
	}
	return aws.ToString(out.Parameter.Value) == was, nil
}

// imageParameter is the group template's SSM-typed image parameter.
const imageParameter = "ImageParameter"

// RemoveOptions are the remove-group flags.
type RemoveOptions struct {
	Cluster, Group string
	Yes            bool
	// RetainFailed deletes a DELETE_FAILED stack keeping the resources that
	// could not be deleted (they are listed for the operator to remove).
	RetainFailed bool
}

// RemoveGroup deletes exactly one group's stack.
func (s *Service) RemoveGroup(ctx context.Context, o RemoveOptions) error {
	if err := validate.ClusterName(o.Cluster); err != nil {
		return errs.AsUsage(err)
	}
	if err := validate.GroupName(o.Cluster, o.Group); err != nil {
		return errs.AsUsage(err)
	}
	name := render.GroupStackName(o.Cluster, o.Group)
	st, err := s.Stacks.Get(ctx, name)
	if errors.Is(err, stacks.ErrNotFound) {
		return refused("group %q not found in cluster %q (no stack %s)", o.Group, o.Cluster, name)
	}
	if err != nil {
		return err
	}
	if st.Tags[query.TagCluster] != o.Cluster || st.Tags[query.TagRole] != "agents" {
		return refused("stack %s is not an agent group of cluster %q", name, o.Cluster)
	}
	if err := s.confirm(o.Yes, fmt.Sprintf("remove group %q of cluster %q (stack %s)", o.Group, o.Cluster, name)); err != nil {
		return err
	}
	if err := s.deleteStack(ctx, name, o.RetainFailed, o.Cluster, o.Group); err != nil {
		return err
	}
	// The group's node configurations are of no use without it. They are
	// removed from the bucket the core owns, whatever its output says.
	core, err := s.Stacks.Get(ctx, o.Cluster)
	if err != nil {
		return nil // no core: nothing to clean
	}
	bucket, err := s.coreBucket(ctx, core)
	if err != nil || bucket == "" {
		return err
	}
	if _, err := s.emptyBucket(ctx, bucket, render.GroupConfigPrefix(o.Group)); err != nil {
		return fmt.Errorf("removing node configuration of group %q: %w", o.Group, err)
	}
	return nil
}

// equalList compares two list parameter values in either of the forms
// splitList reads.
func equalList(a, b string) bool {
	x, y := splitList(a), splitList(b)
	return len(x) > 1 && slices.Equal(x, y)
}
