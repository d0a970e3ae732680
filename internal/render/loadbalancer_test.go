package render

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// The load balancer of every variant, checked resource by resource: one
// listener and one target group per port, the Auto Scaling group attached
// to them, the load balancer's security group open on the listeners'
// ports to the allowed CIDRs only and reaching the nodes on their node
// ports only, the nodes open to it alone. A group without one has none of
// it.
func TestLoadBalancerContent(t *testing.T) {
	seen := 0
	for _, v := range variants() {
		if v.group == nil {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			g := *v.group
			g.Default()
			r, err := v.render()
			if err != nil {
				t.Fatal(err)
			}
			doc := decode(t, r.Template)
			res := obj(doc["Resources"])
			if !g.Published() {
				for _, typ := range []string{"AWS::ElasticLoadBalancingV2::LoadBalancer", "AWS::ElasticLoadBalancingV2::Listener", "AWS::ElasticLoadBalancingV2::TargetGroup"} {
					if n := len(resourcesOfType(res, typ)); n > 0 {
						t.Errorf("%d %s without published ports", n, typ)
					}
				}
				if dig(res, "AutoScalingGroup", "Properties", "TargetGroupARNs") != nil {
					t.Error("target groups attached without published ports")
				}
				for k := range r.Parameters {
					if strings.Contains(k, "LoadBalancer") || k == names.ParamCertificateArn || k == names.ParamDeregistrationDelay {
						t.Errorf("parameter %s without published ports", k)
					}
				}
				return
			}
			seen++
			checkLoadBalancer(t, doc, r, g, v.join.VpcCidr)
		})
	}
	if seen < 3 {
		t.Errorf("%d variants with a load balancer, want at least 3", seen)
	}
}

func checkLoadBalancer(t *testing.T, doc map[string]any, r *Rendered, g spec.Group, vpcCIDR string) {
	t.Helper()
	res := obj(doc["Resources"])
	lb := obj(res[names.ResourceLoadBalancer])
	props := obj(lb["Properties"])
	if props["Type"] != "network" || dig(props, "Scheme", "Ref") != names.ParamLoadBalancerScheme || dig(props, "Subnets", "Ref") != names.ParamLoadBalancerSubnetIDs {
		t.Errorf("load balancer %v", props)
	}
	if sgs := list(props["SecurityGroups"]); len(sgs) != 1 || dig(sgs[0], "Ref") != names.ResourceLoadBalancerSecurityGroup {
		t.Errorf("load balancer security groups %v", sgs)
	}
	attrs := map[string]any{}
	for _, a := range list(props["LoadBalancerAttributes"]) {
		if k, ok := obj(a)["Key"].(string); ok {
			attrs[k] = obj(a)["Value"]
		}
	}
	if attrs["load_balancing.cross_zone.enabled"] != "true" {
		t.Errorf("cross-zone load balancing %v", attrs["load_balancing.cross_zone.enabled"])
	}
	if r.Parameters[names.ParamLoadBalancerScheme] != g.Scheme() || r.Parameters[names.ParamDeregistrationDelay] != fmt.Sprint(g.Deregistration()) ||
		r.Parameters[names.ParamAccessLogsBucket] != g.AccessLogs {
		t.Errorf("parameters %v", r.Parameters)
	}
	allow := g.AllowFromOr(vpcCIDR)
	if r.Parameters[names.ParamLoadBalancerAllowFrom] != strings.Join(allow, ",") {
		t.Errorf("allow-from parameter %q, want %q", r.Parameters[names.ParamLoadBalancerAllowFrom], allow)
	}
	if _, ok := r.Parameters[names.ParamCertificateArn]; ok != g.TLS() || ok && r.Parameters[names.ParamCertificateArn] != g.Certificate {
		t.Errorf("certificate parameter %q (tls %v)", r.Parameters[names.ParamCertificateArn], g.TLS())
	}

	ports := g.Publish.Parsed()
	var wantTGs, gotTGs []string
	for _, p := range ports {
		l := obj(res[names.ResourceListener(p.Port)])
		lp := obj(l["Properties"])
		tgID := names.ResourceTargetGroup(p.Port)
		if l["Type"] != "AWS::ElasticLoadBalancingV2::Listener" || lp["Port"] != float64(p.Port) || lp["Protocol"] != strings.ToUpper(p.Protocol) ||
			dig(lp, "LoadBalancerArn", "Ref") != names.ResourceLoadBalancer {
			t.Errorf("listener of %s: %v", p, l)
		}
		acts := list(lp["DefaultActions"])
		if len(acts) != 1 || dig(acts[0], "Type") != "forward" || dig(acts[0], "TargetGroupArn", "Ref") != tgID {
			t.Errorf("listener of %s forwards %v", p, acts)
		}
		if p.Protocol == spec.ProtocolTLS {
			certs := list(lp["Certificates"])
			if len(certs) != 1 || dig(certs[0], "CertificateArn", "Ref") != names.ParamCertificateArn || lp["SslPolicy"] != SslPolicy {
				t.Errorf("tls listener of %s: %v", p, lp)
			}
		} else if lp["Certificates"] != nil {
			t.Errorf("%s listener with certificates", p.Protocol)
		}
		tg := obj(res[tgID])
		tp := obj(tg["Properties"])
		if tg["Type"] != "AWS::ElasticLoadBalancingV2::TargetGroup" || tp["Port"] != float64(p.NodePort) || tp["Protocol"] != strings.ToUpper(p.NodeProtocol()) ||
			tp["TargetType"] != "instance" || tp["HealthCheckProtocol"] != "TCP" || tp["HealthCheckPort"] != fmt.Sprint(p.NodePort) {
			t.Errorf("target group of %s: %v", p, tp)
		}
		ta := list(tp["TargetGroupAttributes"])
		if len(ta) != 1 || dig(ta[0], "Key") != "deregistration_delay.timeout_seconds" || dig(ta[0], "Value", "Ref") != names.ParamDeregistrationDelay {
			t.Errorf("target group attributes of %s: %v", p, ta)
		}
		wantTGs = append(wantTGs, tgID)
	}
	for _, x := range list(dig(res, "AutoScalingGroup", "Properties", "TargetGroupARNs")) {
		gotTGs = append(gotTGs, fmt.Sprint(dig(x, "Ref")))
	}
	if !slices.Equal(gotTGs, wantTGs) {
		t.Errorf("Auto Scaling group attached to %v, want %v", gotTGs, wantTGs)
	}
	if n := len(resourcesOfType(res, "AWS::ElasticLoadBalancingV2::Listener")); n != len(ports) {
		t.Errorf("%d listeners for %d ports", n, len(ports))
	}

	// Who reaches the load balancer: each listener's port from each CIDR
	// allowed, nothing else.
	sg := obj(dig(res, names.ResourceLoadBalancerSecurityGroup, "Properties"))
	var got, want []string
	for _, in := range list(sg["SecurityGroupIngress"]) {
		sel := list(dig(in, "CidrIp", "Fn::Select"))
		if len(sel) != 2 || dig(sel[1], "Ref") != names.ParamLoadBalancerAllowFrom || obj(in)["FromPort"] != obj(in)["ToPort"] {
			t.Errorf("load balancer ingress %v", in)
			continue
		}
		got = append(got, fmt.Sprintf("%v/%v from %s", obj(in)["IpProtocol"], obj(in)["FromPort"], allow[int(sel[0].(float64))]))
	}
	// Where the load balancer reaches: the nodes' security group, on the
	// node ports (and TCP for the health checks).
	var egress, ingress, wantNode []string
	for _, out := range list(sg["SecurityGroupEgress"]) {
		if dig(out, "DestinationSecurityGroupId", "Ref") != names.OutputAgentSecurityGroupID || obj(out)["CidrIp"] != nil {
			t.Errorf("load balancer egress %v", out)
		}
		egress = append(egress, fmt.Sprintf("%v/%v", obj(out)["IpProtocol"], obj(out)["FromPort"]))
	}
	for id, x := range res {
		rp := obj(obj(x)["Properties"])
		if obj(x)["Type"] != "AWS::EC2::SecurityGroupIngress" || dig(rp, "SourceSecurityGroupId", "Ref") != names.ResourceLoadBalancerSecurityGroup {
			continue
		}
		if dig(rp, "GroupId", "Ref") != names.OutputAgentSecurityGroupID || rp["FromPort"] != rp["ToPort"] || rp["CidrIp"] != nil {
			t.Errorf("node rule %s: %v", id, rp)
		}
		ingress = append(ingress, fmt.Sprintf("%v/%v", rp["IpProtocol"], rp["FromPort"]))
	}
	for _, p := range ports {
		for _, c := range allow {
			want = append(want, fmt.Sprintf("%s/%d from %s", p.NodeProtocol(), p.Port, c))
		}
		for _, w := range []string{fmt.Sprintf("%s/%d", p.NodeProtocol(), p.NodePort), fmt.Sprintf("tcp/%d", p.NodePort)} {
			if !slices.Contains(wantNode, w) {
				wantNode = append(wantNode, w)
			}
		}
	}
	for _, l := range [][]string{got, want, egress, ingress, wantNode} {
		sort.Strings(l)
	}
	if !slices.Equal(got, want) {
		t.Errorf("load balancer admits %v, want %v", got, want)
	}
	if !slices.Equal(egress, wantNode) || !slices.Equal(ingress, wantNode) {
		t.Errorf("load balancer reaches the nodes on %v, the nodes admit it on %v; want %v", egress, ingress, wantNode)
	}
	outs := obj(doc["Outputs"])
	if dig(outs, names.OutputLoadBalancerDNSName, "Value", "Fn::GetAtt") == nil || dig(outs, names.OutputLoadBalancerArn, "Value", "Ref") != names.ResourceLoadBalancer {
		t.Errorf("outputs %v", outs)
	}
}

// A group publishing more ports than its template body can hold is
// refused at render time, saying why.
func TestTooManyPortsForTheTemplate(t *testing.T) {
	g := spec.Group{Name: "web", InstanceType: spec.InstanceTypes{"m5.large"}, Certificate: testCertificate}
	for i := range spec.MaxListeners {
		g.Publish = append(g.Publish, fmt.Sprintf("%d:%d/tls", 1000+i, 31000+i))
	}
	_, err := Group("prod", g, testJoin, build(testVersion))
	if err == nil || !strings.Contains(err.Error(), "limit 51200: 50 published ports are more than one group's template holds") {
		t.Errorf("50 tls ports: %v", err)
	}
	g.Publish = g.Publish[:8]
	if _, err := Group("prod", g, testJoin, build(testVersion)); err != nil {
		t.Errorf("8 tls ports: %v", err)
	}
}
