package preflight

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/clusterctl/clusterctl/internal/errs"
)

// reachInternet tells, for each of subnets (in vpc; "" when unknown),
// whether its route table (its own, or the VPC's main one) routes to an
// internet gateway: whether it is a public subnet.
func reachInternet(ctx context.Context, api RouteTablesAPI, vpc string, subnets []string) (map[string]bool, error) {
	filter := []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}}
	if vpc == "" {
		filter = []ec2types.Filter{{Name: aws.String("association.subnet-id"), Values: subnets}}
	}
	p := ec2.NewDescribeRouteTablesPaginator(api, &ec2.DescribeRouteTablesInput{Filters: filter})
	own := map[string]bool{}     // subnet → its route table reaches an internet gateway
	var mainPublic, hasMain bool // the VPC's main route table
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing route tables: %w", err)
		}
		for _, rt := range page.RouteTables {
			public := slices.ContainsFunc(rt.Routes, func(r ec2types.Route) bool {
				return strings.HasPrefix(aws.ToString(r.GatewayId), "igw-") && r.State != ec2types.RouteStateBlackhole
			})
			for _, a := range rt.Associations {
				switch {
				case aws.ToBool(a.Main):
					mainPublic, hasMain = public, true
				case a.SubnetId != nil:
					own[aws.ToString(a.SubnetId)] = public
				}
			}
		}
	}
	out := map[string]bool{}
	for _, id := range subnets {
		public, ok := own[id]
		if !ok {
			public = hasMain && mainPublic
		}
		out[id] = public
	}
	return out, nil
}

// PublicIPsRequest is where nodes are about to run, and whether they get
// public IPs.
type PublicIPsRequest struct {
	What      string // "the managers", "group web's nodes"
	Flag      string // the flag that gives public IPs: --public-ips
	SubnetIDs []string
	VpcID     string
	PublicIPs bool
}

// CheckPublicIPs checks nodes' public IPs against their subnets. Nodes
// without a public IP in a public subnet (a route to an internet gateway,
// no NAT) reach neither AWS nor a registry, so they would never signal:
// that is refused, naming the flag and the way to a private network. Nodes
// given public IPs in public subnets are what was asked: the note returned
// says so (the caller says it once). Private subnets need nothing.
func CheckPublicIPs(ctx context.Context, api RouteTablesAPI, req PublicIPsRequest) (note string, err error) {
	if len(req.SubnetIDs) == 0 {
		return "", nil
	}
	reach, err := reachInternet(ctx, api, req.VpcID, req.SubnetIDs)
	if err != nil {
		return "", err
	}
	var public []string
	for _, id := range req.SubnetIDs {
		if reach[id] {
			public = append(public, id)
		}
	}
	switch {
	case len(public) == 0:
		return "", nil
	case !req.PublicIPs:
		return "", errs.Usage("pre-flight: %s would run in public %s %s (a route to an internet gateway, no NAT), where a node without a public IP reaches neither AWS nor a registry: pass %s, or run the cluster in a private network of its own (clusterctl create-network NAME, then create-core --network NAME)",
			req.What, plural(len(public), "subnet", "subnets"), strings.Join(public, ", "), req.Flag)
	}
	return fmt.Sprintf("Note: %s get public IPs in public %s %s: reachable from the internet wherever their security groups allow; for nodes without public IPs, use a network of the cluster's own (clusterctl create-network)\n",
		req.What, plural(len(public), "subnet", "subnets"), strings.Join(public, ", ")), nil
}
