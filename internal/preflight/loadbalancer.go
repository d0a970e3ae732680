package preflight

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	acmtypes "github.com/aws/aws-sdk-go-v2/service/acm/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// RouteTablesAPI is what the load balancer's check asks of EC2.
type RouteTablesAPI interface {
	DescribeRouteTables(ctx context.Context, in *ec2.DescribeRouteTablesInput, opts ...func(*ec2.Options)) (*ec2.DescribeRouteTablesOutput, error)
}

// ACMAPI is what the load balancer's check asks of ACM; *acm.Client
// satisfies it.
type ACMAPI interface {
	DescribeCertificate(ctx context.Context, in *acm.DescribeCertificateInput, opts ...func(*acm.Options)) (*acm.DescribeCertificateOutput, error)
}

// LoadBalancerRequest is a group's load balancer about to be deployed.
type LoadBalancerRequest struct {
	Scheme      string // spec.SchemeInternetFacing or spec.SchemeInternal
	Certificate string // "" without tls ports
	// SubnetIDs are the group's subnets, the load balancer's too, in VpcID;
	// SubnetZones their zones (Report.SubnetZones).
	SubnetIDs   []string
	SubnetZones map[string]string
	VpcID       string
}

// CheckLoadBalancer checks a group's load balancer against the account:
// the certificate exists in the region and is issued; the subnets are in
// distinct zones (a load balancer takes one subnet per zone); an
// internet-facing one has subnets with a route to an internet gateway. What
// it finds wrong is a usage error naming all of it on one line; errors
// calling AWS are returned as they are.
func CheckLoadBalancer(ctx context.Context, ec2api RouteTablesAPI, acmapi ACMAPI, req LoadBalancerRequest) error {
	// One list per check, joined in a fixed order whatever ran first.
	var certBad, publicBad, zonesBad problems
	err := parallel(
		func() error { return checkCertificate(ctx, acmapi, req.Certificate, &certBad) },
		func() error {
			if req.Scheme != spec.SchemeInternetFacing {
				return nil
			}
			return checkPublicSubnets(ctx, ec2api, req, &publicBad)
		},
	)
	if err != nil {
		return err
	}
	checkOneSubnetPerZone(req, &zonesBad)
	all := slices.Concat(certBad.list, publicBad.list, zonesBad.list)
	if len(all) > 0 {
		return errs.Usage("pre-flight: %s", strings.Join(all, "; "))
	}
	return nil
}

func checkCertificate(ctx context.Context, api ACMAPI, arn string, bad *problems) error {
	if arn == "" {
		return nil
	}
	out, err := api.DescribeCertificate(ctx, &acm.DescribeCertificateInput{CertificateArn: aws.String(arn)})
	var nf *acmtypes.ResourceNotFoundException
	if errors.As(err, &nf) {
		bad.add("certificate %s does not exist in this region (the load balancer's certificate must be in ACM in the group's region)", arn)
		return nil
	}
	if err != nil {
		return fmt.Errorf("describing certificate %s: %w", arn, err)
	}
	if s := out.Certificate.Status; s != acmtypes.CertificateStatusIssued {
		bad.add("certificate %s is %s, not ISSUED", arn, s)
	}
	return nil
}

// checkPublicSubnets refuses the subnets whose route table (their own, or
// the VPC's main one) has no route to an internet gateway: an
// internet-facing load balancer there is unreachable from the internet.
func checkPublicSubnets(ctx context.Context, api RouteTablesAPI, req LoadBalancerRequest, bad *problems) error {
	if len(req.SubnetIDs) == 0 {
		return nil
	}
	public, err := reachInternet(ctx, api, req.VpcID, req.SubnetIDs)
	if err != nil {
		return err
	}
	var private []string
	for _, id := range req.SubnetIDs {
		if !public[id] {
			private = append(private, id)
		}
	}
	if len(private) > 0 {
		bad.add("an internet-facing load balancer needs subnets with a route to an internet gateway, and %s %s none (give public subnets with --subnet-ids, or --load-balancer internal)",
			strings.Join(private, ", "), plural(len(private), "has", "have"))
	}
	return nil
}

// checkOneSubnetPerZone refuses two subnets in one zone: a load balancer
// takes one subnet per zone.
func checkOneSubnetPerZone(req LoadBalancerRequest, bad *problems) {
	in := map[string][]string{}
	for _, id := range req.SubnetIDs {
		if z, ok := req.SubnetZones[id]; ok {
			in[z] = append(in[z], id)
		}
	}
	var zones []string
	for z, ids := range in {
		if len(ids) > 1 {
			zones = append(zones, fmt.Sprintf("%s (%s)", z, strings.Join(ids, ", ")))
		}
	}
	sort.Strings(zones)
	if len(zones) > 0 {
		bad.add("a load balancer takes one subnet per zone, and these zones have several: %s (give one subnet per zone with --subnet-ids)", strings.Join(zones, "; "))
	}
}
