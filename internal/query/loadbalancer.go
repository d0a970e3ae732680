package query

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"golang.org/x/sync/errgroup"

	"github.com/clusterctl/clusterctl/internal/names"
)

// ELBAPI is what inventory asks of Elastic Load Balancing: a group's
// listeners and the health of their targets.
type ELBAPI interface {
	DescribeListeners(ctx context.Context, in *elbv2.DescribeListenersInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeListenersOutput, error)
	DescribeTargetGroups(ctx context.Context, in *elbv2.DescribeTargetGroupsInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupsOutput, error)
	DescribeTargetHealth(ctx context.Context, in *elbv2.DescribeTargetHealthInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeTargetHealthOutput, error)
}

// LoadBalancer is a group's load balancer as Elastic Load Balancing has
// it: its endpoint and, for each listener, how many of the group's nodes
// are healthy targets.
type LoadBalancer struct {
	DNSName string       `json:"dnsName"`
	Scheme  string       `json:"scheme"`
	ARN     string       `json:"arn"`
	Ports   []PortHealth `json:"ports"`
	// Unread says why its listeners and targets could not be read ("":
	// they were); its ports then show "?".
	Unread string `json:"unread,omitempty"`
}

// PortHealth is one listener of a load balancer and its target group's
// health.
type PortHealth struct {
	Port     int    `json:"port"`
	NodePort int    `json:"nodePort"`
	Protocol string `json:"protocol"` // tcp, udp, tls
	Healthy  int    `json:"healthy"`
	Targets  int    `json:"targets"` // registered, in any state
}

func (p PortHealth) String() string {
	s := strconv.Itoa(p.Port)
	if p.NodePort != p.Port && p.NodePort != 0 {
		s += ":" + strconv.Itoa(p.NodePort)
	}
	if p.Protocol != "tcp" {
		s += "/" + p.Protocol
	}
	return fmt.Sprintf("%s (%d/%d healthy)", s, p.Healthy, p.Targets)
}

// PortsText is a load balancer's ports for a table: "80 (2/2 healthy),
// 443/tls (2/2 healthy)"; "-" without a load balancer.
func (lb *LoadBalancer) PortsText() string {
	if lb == nil {
		return "-"
	}
	if lb.Unread != "" {
		return "?"
	}
	var out []string
	for _, p := range lb.Ports {
		out = append(out, p.String())
	}
	return dash(strings.Join(out, ", "))
}

// EndpointText is a load balancer's DNS name for a table, "-" without one.
func (lb *LoadBalancer) EndpointText() string {
	if lb == nil {
		return "-"
	}
	return dash(lb.DNSName)
}

// loadBalancerOf is the load balancer a group stack's outputs name, nil
// when it has none.
func loadBalancerOf(outputs, params map[string]string) *LoadBalancer {
	arn := outputs[names.OutputLoadBalancerArn]
	if arn == "" {
		return nil
	}
	return &LoadBalancer{ARN: arn, DNSName: outputs[names.OutputLoadBalancerDNSName], Scheme: params[names.ParamLoadBalancerScheme], Ports: []PortHealth{}}
}

// WithLoadBalancers reads, for every group with a load balancer, its
// listeners and the health of their targets (groups without one cost no
// call). One that cannot be read (a group half created or rolling back,
// a principal without ELB read) hides no other: it is marked Unread and
// returned.
func WithLoadBalancers(ctx context.Context, api ELBAPI, groups []Group) []Unread {
	var eg errgroup.Group
	eg.SetLimit(4)
	for i := range groups {
		lb := groups[i].LoadBalancer
		if lb == nil {
			continue
		}
		eg.Go(func() error {
			ports, err := portHealth(ctx, api, lb.ARN)
			var nf *elbtypes.LoadBalancerNotFoundException
			switch {
			case errors.As(err, &nf):
				// Gone (removed by an update, or by hand): the group has
				// no load balancer, whatever a stale output says.
				groups[i].LoadBalancer = nil
			case err != nil:
				lb.Unread = Reason(err)
			default:
				lb.Ports = ports
			}
			return nil
		})
	}
	_ = eg.Wait()
	var unread []Unread
	for _, g := range groups {
		if lb := g.LoadBalancer; lb != nil && lb.Unread != "" {
			unread = append(unread, Unread{Row: g.Stack, What: "load balancer", Reason: lb.Unread})
		}
	}
	return unread
}

func portHealth(ctx context.Context, api ELBAPI, arn string) ([]PortHealth, error) {
	var listeners []elbtypes.Listener
	lp := elbv2.NewDescribeListenersPaginator(api, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(arn)})
	for lp.HasMorePages() {
		page, err := lp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing listeners: %w", err)
		}
		listeners = append(listeners, page.Listeners...)
	}
	tgPort := map[string]int{}
	tp := elbv2.NewDescribeTargetGroupsPaginator(api, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(arn)})
	for tp.HasMorePages() {
		page, err := tp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing target groups: %w", err)
		}
		for _, tg := range page.TargetGroups {
			tgPort[aws.ToString(tg.TargetGroupArn)] = int(aws.ToInt32(tg.Port))
		}
	}
	out := make([]PortHealth, len(listeners))
	var eg errgroup.Group
	for i, l := range listeners {
		out[i] = PortHealth{Port: int(aws.ToInt32(l.Port)), Protocol: strings.ToLower(string(l.Protocol))}
		var tg string
		for _, a := range l.DefaultActions {
			if a.Type == elbtypes.ActionTypeEnumForward && a.TargetGroupArn != nil {
				tg = aws.ToString(a.TargetGroupArn)
			}
		}
		if tg == "" {
			continue
		}
		out[i].NodePort = tgPort[tg]
		eg.Go(func() error {
			h, err := api.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(tg)})
			if err != nil {
				return fmt.Errorf("describing the health of the targets of port %d: %w", out[i].Port, err)
			}
			for _, d := range h.TargetHealthDescriptions {
				out[i].Targets++
				if d.TargetHealth != nil && d.TargetHealth.State == elbtypes.TargetHealthStateEnumHealthy {
					out[i].Healthy++
				}
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out, nil
}
