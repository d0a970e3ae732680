package network

import (
	"fmt"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// Prices are the hourly on-demand prices, in US dollars, of what a network
// is billed for by the hour: AWS's list prices in us-east-1 (other regions
// cost up to about a third more). Traffic is billed on top (NAT and
// interface endpoints per GB processed) and is not estimated: it depends on
// the workload. The S3 gateway endpoint, the VPC, subnets, route tables and
// the internet gateway cost nothing.
const (
	PriceNatGatewayHour        = 0.045 // one NAT gateway
	PricePublicIPv4Hour        = 0.005 // one public IPv4 address (a NAT gateway's Elastic IP)
	PriceInterfaceEndpointHour = 0.01  // one interface endpoint in one zone
	HoursPerMonth              = 730
)

// Billed is one kind of thing a network is billed for by the hour.
type Billed struct {
	What       string  `json:"what"`
	Count      int     `json:"count"`
	HourlyUSD  float64 `json:"hourlyUsd"`  // all of them
	MonthlyUSD float64 `json:"monthlyUsd"` // all of them, HoursPerMonth hours
}

// Billing lists what network n (defaulted) is billed for by the hour.
func Billing(n spec.Network) []Billed {
	var out []Billed
	add := func(what string, count int, each float64) {
		if count > 0 {
			h := float64(count) * each
			out = append(out, Billed{What: what, Count: count, HourlyUSD: h, MonthlyUSD: h * HoursPerMonth})
		}
	}
	zones := n.ZoneCount()
	switch n.Nat {
	case names.NatNone:
		eps := len(render.NodeEndpoints())
		add(fmt.Sprintf("interface endpoints (%d services × %d zones)", eps, zones), eps*zones, PriceInterfaceEndpointHour)
	case names.NatPerZone:
		add("NAT gateways", zones, PriceNatGatewayHour)
		add("public IPv4 addresses (the NAT gateways')", zones, PricePublicIPv4Hour)
	default:
		add("NAT gateway", 1, PriceNatGatewayHour)
		add("public IPv4 address (the NAT gateway's)", 1, PricePublicIPv4Hour)
	}
	return out
}

// Monthly is the sum of billed's monthly estimates.
func Monthly(billed []Billed) float64 {
	var sum float64
	for _, b := range billed {
		sum += b.MonthlyUSD
	}
	return sum
}
