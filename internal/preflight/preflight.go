// Package preflight checks a stack's inputs against the account before
// anything is created or uploaded: the subnets exist and are in the core's
// VPC, the key pair exists, every instance type exists, shares one
// architecture with the others and is offered in the subnets' zones, and
// the image exists and runs on that architecture. What it finds wrong is a
// usage error (exit 2), all of it on one line.
//
// The architecture of an instance type is asked of EC2 (Architecture);
// the name-based guess in internal/render is for offline render only.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/fuzzy"
	"github.com/clusterctl/clusterctl/internal/render"
)

// EC2API is what pre-flight asks of EC2; *ec2.Client satisfies it.
type EC2API interface {
	DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeKeyPairs(ctx context.Context, in *ec2.DescribeKeyPairsInput, opts ...func(*ec2.Options)) (*ec2.DescribeKeyPairsOutput, error)
	DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, opts ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
}

// SSMAPI resolves an image given as an SSM parameter path.
type SSMAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// ZoneRule says where the instance types must be offered.
type ZoneRule int

const (
	// EveryZone: every type must be offered in every subnet's zone. For
	// subnets the operator named: a subnet where nodes cannot launch is a
	// mistake to report.
	EveryZone ZoneRule = iota
	// SomeZone: every type must be offered in at least one subnet's zone;
	// the zones that lack one are reported (Report.Unoffered), not refused.
	// For subnets taken by default (the core's): an Auto Scaling group
	// launches in the zones that offer the type ("balanced best effort"),
	// and old zones (us-east-1e) lack most current types.
	SomeZone
)

// Request is what a stack is about to be deployed with.
type Request struct {
	// InstanceTypes: one, or several for a mixed group; all must exist,
	// share one architecture and be offered in the subnets' zones.
	InstanceTypes []string
	// Image is "" (the region's Amazon Linux 2023 for the types'
	// architecture), an AMI id, or an SSM parameter path.
	Image string
	// KeyName, when set, must be a key pair of the region.
	KeyName string
	// SubnetIDs must exist (and be in VpcID when it is set: the core's VPC).
	SubnetIDs []string
	VpcID     string
	Zones     ZoneRule
}

// Report is what pre-flight learnt, for the caller to deploy with.
type Report struct {
	// Architecture of the instance types, as EC2 names it (x86_64, arm64).
	Architecture string
	// ImageID is the AMI the image resolves to now; ImageParameter the SSM
	// path it was resolved through ("" for an AMI id). For the default
	// image it is render.ImageParameterFor(Architecture).
	ImageID, ImageParameter string
	// SubnetZones maps each subnet to its availability zone.
	SubnetZones map[string]string
	// Unoffered lists, under SomeZone, the zones where a type is not
	// offered: its nodes launch in the other zones only.
	Unoffered []Gap
}

// Gap is an instance type not offered in a zone of the request's subnets.
type Gap struct {
	InstanceType, Zone string
	Subnets            []string
}

func (g Gap) String() string {
	return fmt.Sprintf("%s is not offered in %s (subnet %s)", g.InstanceType, g.Zone, strings.Join(g.Subnets, ", "))
}

// problems collects what one check found wrong; each is one clause of
// the final line.
type problems struct{ list []string }

func (p *problems) add(format string, args ...any) {
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

// Check runs every check of the request and returns the report, or a
// usage error naming everything found wrong on one line. Errors calling
// AWS are returned as they are (exit 1): nothing was checked then.
func Check(ctx context.Context, ec2api EC2API, ssmapi SSMAPI, req Request) (*Report, error) {
	if len(req.InstanceTypes) == 0 {
		return nil, errors.New("pre-flight: no instance type given")
	}
	rep := &Report{SubnetZones: map[string]string{}}
	// One list per check, joined in a fixed order whatever ran first.
	var typesBad, subnetsBad, zonesBad, keyBad, imageBad problems
	var types map[string][]string // type → supported architectures
	var imageID, imageParam string
	explicitImage := req.Image != ""

	// First round, in parallel: nothing here depends on anything else.
	err := parallel(
		func() (err error) { types, err = describeTypes(ctx, ec2api, req.InstanceTypes); return err },
		func() error { return checkSubnets(ctx, ec2api, req, rep, &subnetsBad) },
		func() error { return checkKeyPair(ctx, ec2api, req.KeyName, &keyBad) },
		func() (err error) {
			if explicitImage {
				imageID, imageParam, err = resolveImage(ctx, ssmapi, req.Image, &imageBad)
			}
			return err
		},
	)
	if err != nil {
		return nil, err
	}
	var known []string
	for _, t := range req.InstanceTypes {
		if _, ok := types[t]; ok {
			known = append(known, t)
		} else {
			typesBad.add("instance type %s does not exist in this region%s", t, closestType(ctx, ec2api, t))
		}
	}
	if len(known) == len(req.InstanceTypes) {
		rep.Architecture = commonArchitecture(req.InstanceTypes, types, &typesBad)
	}

	// Second round: what needs the zones or the architecture.
	var zones []string
	for _, z := range rep.SubnetZones {
		if !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
	}
	sort.Strings(zones)
	if !explicitImage && rep.Architecture != "" {
		req.Image = render.ImageParameterFor(rep.Architecture)
	}
	err = parallel(
		func() error {
			if len(known) == 0 || len(zones) == 0 {
				return nil
			}
			return checkOfferings(ctx, ec2api, req, known, zones, rep, &zonesBad)
		},
		func() (err error) {
			if !explicitImage && req.Image != "" {
				imageID, imageParam, err = resolveImage(ctx, ssmapi, req.Image, &imageBad)
			}
			if err != nil || imageID == "" {
				return err
			}
			return checkImage(ctx, ec2api, imageID, req.Image, known, types, &imageBad)
		},
	)
	if err != nil {
		return nil, err
	}
	rep.ImageID, rep.ImageParameter = imageID, imageParam
	var all []string
	for _, p := range []*problems{&typesBad, &subnetsBad, &zonesBad, &keyBad, &imageBad} {
		all = append(all, p.list...)
	}
	if len(all) > 0 {
		return nil, errs.Usage("pre-flight: %s", strings.Join(all, "; "))
	}
	return rep, nil
}

// parallel runs fns at once and returns the first error.
func parallel(fns ...func() error) error {
	errList := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errList[i] = fn()
		}()
	}
	wg.Wait()
	for _, err := range errList {
		if err != nil {
			return err
		}
	}
	return nil
}

// archPreference picks an instance type's architecture among those it
// supports: t2 supports i386 and x86_64, and is an x86_64 type.
var archPreference = []string{"x86_64", "arm64", "x86_64_mac", "arm64_mac", "i386"}

func primary(archs []string) string {
	for _, a := range archPreference {
		if slices.Contains(archs, a) {
			return a
		}
	}
	if len(archs) > 0 {
		return archs[0]
	}
	return ""
}

// describeTypes returns the supported architectures of the types that
// exist; unknown types are simply absent (a filter, not an error).
func describeTypes(ctx context.Context, api EC2API, types []string) (map[string][]string, error) {
	out := map[string][]string{}
	p := ec2.NewDescribeInstanceTypesPaginator(api, &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{{Name: aws.String("instance-type"), Values: types}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance types: %w", err)
		}
		for _, it := range page.InstanceTypes {
			var archs []string
			if it.ProcessorInfo != nil {
				for _, a := range it.ProcessorInfo.SupportedArchitectures {
					archs = append(archs, string(a))
				}
			}
			out[string(it.InstanceType)] = archs
		}
	}
	return out, nil
}

// Architecture asks EC2 for the architecture of an instance type (x86_64,
// arm64, ...). An unknown type is a usage error.
func Architecture(ctx context.Context, api EC2API, instanceType string) (string, error) {
	archs, err := Architectures(ctx, api, []string{instanceType})
	if err != nil {
		return "", err
	}
	return archs[instanceType], nil
}

// Architectures is Architecture for several types, in one call.
func Architectures(ctx context.Context, api EC2API, types []string) (map[string]string, error) {
	found, err := describeTypes(ctx, api, types)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, t := range types {
		archs, ok := found[t]
		if !ok {
			return nil, errs.Usage("instance type %s does not exist in this region%s", t, closestType(ctx, api, t))
		}
		out[t] = primary(archs)
	}
	return out, nil
}

// commonArchitecture is the architecture all types share; a mix is a
// problem naming the odd ones out (those not of the most common one, the
// first type's on a tie).
func commonArchitecture(types []string, archs map[string][]string, bad *problems) string {
	count := map[string]int{}
	for _, t := range types {
		count[primary(archs[t])]++
	}
	common := primary(archs[types[0]])
	for a, n := range count {
		if n > count[common] {
			common = a
		}
	}
	var odd, even []string
	for _, t := range types {
		if a := primary(archs[t]); a != common {
			odd = append(odd, fmt.Sprintf("%s is %s", t, a))
		} else {
			even = append(even, t)
		}
	}
	if len(odd) == 0 {
		return common
	}
	bad.add("instance types must share one architecture: %s, while %s %s %s", strings.Join(odd, ", "), strings.Join(even, ", "), plural(len(even), "is", "are"), common)
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func checkSubnets(ctx context.Context, api EC2API, req Request, rep *Report, bad *problems) error {
	if len(req.SubnetIDs) == 0 {
		return nil
	}
	found := map[string]ec2types.Subnet{}
	p := ec2.NewDescribeSubnetsPaginator(api, &ec2.DescribeSubnetsInput{
		Filters: []ec2types.Filter{{Name: aws.String("subnet-id"), Values: req.SubnetIDs}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing subnets: %w", err)
		}
		for _, sn := range page.Subnets {
			found[aws.ToString(sn.SubnetId)] = sn
		}
	}
	for _, id := range req.SubnetIDs {
		sn, ok := found[id]
		switch {
		case !ok:
			bad.add("subnet %s does not exist", id)
		case req.VpcID != "" && aws.ToString(sn.VpcId) != req.VpcID:
			bad.add("subnet %s is in %s, not in the core's VPC %s", id, aws.ToString(sn.VpcId), req.VpcID)
		default:
			rep.SubnetZones[id] = aws.ToString(sn.AvailabilityZone)
		}
	}
	return nil
}

func checkKeyPair(ctx context.Context, api EC2API, name string, bad *problems) error {
	if name == "" {
		return nil
	}
	out, err := api.DescribeKeyPairs(ctx, &ec2.DescribeKeyPairsInput{
		Filters: []ec2types.Filter{{Name: aws.String("key-name"), Values: []string{name}}},
	})
	if err != nil {
		return fmt.Errorf("describing key pairs: %w", err)
	}
	if len(out.KeyPairs) == 0 {
		bad.add("key pair %q does not exist in this region", name)
	}
	return nil
}

func checkOfferings(ctx context.Context, api EC2API, req Request, types, zones []string, rep *Report, bad *problems) error {
	offered := map[string]bool{} // type/zone
	p := ec2.NewDescribeInstanceTypeOfferingsPaginator(api, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		Filters: []ec2types.Filter{
			{Name: aws.String("instance-type"), Values: types},
			{Name: aws.String("location"), Values: zones},
		},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing instance type offerings: %w", err)
		}
		for _, o := range page.InstanceTypeOfferings {
			offered[string(o.InstanceType)+"/"+aws.ToString(o.Location)] = true
		}
	}
	subnetsIn := map[string][]string{}
	for _, id := range req.SubnetIDs {
		if z, ok := rep.SubnetZones[id]; ok {
			subnetsIn[z] = append(subnetsIn[z], id)
		}
	}
	for _, t := range types {
		var gaps []Gap
		for _, z := range zones {
			if !offered[t+"/"+z] {
				gaps = append(gaps, Gap{InstanceType: t, Zone: z, Subnets: subnetsIn[z]})
			}
		}
		switch {
		case len(gaps) == 0:
		case len(gaps) == len(zones):
			bad.add("instance type %s is not offered in any of the subnets' zones (%s)", t, strings.Join(zones, ", "))
		case req.Zones == EveryZone:
			for _, g := range gaps {
				bad.add("instance type %s", g)
			}
		default:
			rep.Unoffered = append(rep.Unoffered, gaps...)
		}
	}
	return nil
}

// resolveImage turns the image into an AMI id: an SSM path through SSM.
func resolveImage(ctx context.Context, api SSMAPI, image string, bad *problems) (id, param string, err error) {
	if !strings.HasPrefix(image, "/") {
		return image, "", nil
	}
	out, err := api.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(image)})
	var nf *ssmtypes.ParameterNotFound
	if errors.As(err, &nf) {
		bad.add("image SSM parameter %s does not exist", image)
		return "", image, nil
	}
	if err != nil {
		return "", image, fmt.Errorf("resolving image SSM parameter %s: %w", image, err)
	}
	return aws.ToString(out.Parameter.Value), image, nil
}

// checkImage checks that the AMI exists, is available, and runs on every
// type (its architecture is one each type supports).
func checkImage(ctx context.Context, api EC2API, id, given string, types []string, archs map[string][]string, bad *problems) error {
	what := "image " + id
	if given != id {
		what = fmt.Sprintf("image %s (from %s)", id, given)
	}
	out, err := api.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{id}})
	var ae smithy.APIError
	if errors.As(err, &ae) && strings.HasPrefix(ae.ErrorCode(), "InvalidAMIID.") {
		bad.add("%s does not exist or is not available to this account", what)
		return nil
	}
	if err != nil {
		return fmt.Errorf("describing image %s: %w", id, err)
	}
	if len(out.Images) == 0 {
		bad.add("%s does not exist or is not available to this account", what)
		return nil
	}
	img := out.Images[0]
	if img.State != "" && img.State != ec2types.ImageStateAvailable {
		bad.add("%s is %s, not available", what, img.State)
	}
	arch := string(img.Architecture)
	var wrong []string
	for _, t := range types {
		if !slices.Contains(archs[t], arch) {
			wrong = append(wrong, fmt.Sprintf("%s (%s)", t, primary(archs[t])))
		}
	}
	if len(wrong) > 0 {
		bad.add("%s is %s, which instance type %s cannot run", what, arch, strings.Join(wrong, ", "))
	}
	return nil
}

// closestType is "; did you mean c5.large?" for a type that does not exist
// (c5.lage), from the types the region offers: one paginated listing, on
// this failure path only; "" when none is close or the listing fails.
func closestType(ctx context.Context, api EC2API, typed string) string {
	p := ec2.NewDescribeInstanceTypeOfferingsPaginator(api, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeRegion})
	best, bestD := "", 3
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return ""
		}
		for _, o := range page.InstanceTypeOfferings {
			t := string(o.InstanceType)
			if d := fuzzy.Distance(strings.ToLower(typed), t); d < bestD || d == bestD && best != "" && t < best {
				best, bestD = t, d
			}
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + best + "?"
}
