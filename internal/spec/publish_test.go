package spec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v4"
)

const testCert = "arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-0000-1111-2222-333344445555"

func TestParsePort(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Port
		err  string
	}{
		{"80", Port{80, 80, "tcp"}, ""},
		{"443/tls", Port{443, 443, "tls"}, ""},
		{"8080:30080", Port{8080, 30080, "tcp"}, ""},
		{"53:30053/UDP", Port{53, 30053, "udp"}, ""},
		{" 1:65535/tcp ", Port{1, 65535, "tcp"}, ""},
		{"0", Port{}, "0 is out of 1-65535"},
		{"65536", Port{}, "65536 is out of 1-65535"},
		{"80:70000", Port{}, "70000 is out of 1-65535"},
		{"80/http", Port{}, "protocol http, expected tcp, udp or tls"},
		{"http", Port{}, "expected PORT[:NODEPORT][/tcp|udp|tls]"},
		{"80:", Port{}, "expected PORT[:NODEPORT]"},
		{"-1", Port{}, "expected PORT"},
		{"99999999999999999999", Port{}, "out of 1-65535"},
	} {
		got, err := ParsePort(tt.in)
		if tt.err == "" && (err != nil || got != tt.want) {
			t.Errorf("ParsePort(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ParsePort(%q) error = %v; want %q", tt.in, err, tt.err)
		}
	}
	for in, want := range map[string]string{"80": "80", "80:80/tcp": "80", "443:30443/tls": "443:30443/tls", "53/udp": "53/udp"} {
		p, _ := ParsePort(in)
		if p.String() != want {
			t.Errorf("ParsePort(%q).String() = %q, want %q", in, p.String(), want)
		}
	}
}

// Every rule of the load balancer's settings, at the path it reports.
func TestValidateLoadBalancer(t *testing.T) {
	web := func(g *Group) {
		*g = Group{Name: "web", InstanceType: InstanceTypes{"m5.large"}, Publish: Ports{"80", "443/tls"}, Certificate: testCert}
	}
	bare := func(g *Group) { *g = Group{Name: "web", InstanceType: InstanceTypes{"m5.large"}} }
	tests := []struct {
		name   string
		change func(*Group)
		path   string
		want   string
	}{
		{"bad entry", func(g *Group) { web(g); g.Publish = Ports{"80", "https"} }, "publish", `invalid port "https"`},
		{"port 0", func(g *Group) { web(g); g.Publish = Ports{"0"} }, "publish", "0 is out of 1-65535"},
		{"port too large", func(g *Group) { web(g); g.Publish = Ports{"80:65536"} }, "publish", "65536 is out of 1-65535"},
		{"empty entry", func(g *Group) { web(g); g.Publish = Ports{"80", ""} }, "publish", `invalid port ""`},
		{"duplicate", func(g *Group) { web(g); g.Publish = Ports{"80", "443/tls", "80:30080"} }, "publish", "port 80 published twice (80 and 80:30080)"},
		{"duplicate across protocols", func(g *Group) { bare(g); g.Publish = Ports{"53", "53/udp"} }, "publish", "port 53 published twice"},
		{"swarm manager port", func(g *Group) { bare(g); g.Publish = Ports{"2377"} }, "publish", "node port 2377 is the swarm's own"},
		{"gossip port as node port", func(g *Group) { bare(g); g.Publish = Ports{"80:7946"} }, "publish", "node port 7946 is the swarm's own"},
		{"overlay port", func(g *Group) { bare(g); g.Publish = Ports{"4789/udp"} }, "publish", "node port 4789"},
		{"sshd", func(g *Group) { bare(g); g.Publish = Ports{"22"} }, "publish", "node port 22 is the nodes' sshd"},
		{"sshd as node port", func(g *Group) { bare(g); g.Publish = Ports{"80", "2222:22"} }, "publish", "node port 22 is the nodes' sshd (SSH is closed; open it with --ssh-cidr)"},
		{"engine API", func(g *Group) { bare(g); g.Publish = Ports{"2375"} }, "publish", "node port 2375 is the engine's API"},
		{"engine API over TLS", func(g *Group) { bare(g); g.Publish = Ports{"443:2376/tls"} }, "publish", "node port 2376 is the engine's API (TLS)"},
		{"too many listeners", func(g *Group) {
			bare(g)
			for i := range MaxListeners + 1 {
				g.Publish = append(g.Publish, fmt.Sprint(8000+i))
			}
		}, "publish", "51 ports published, at most 50"},
		{"tls without certificate", func(g *Group) { web(g); g.Certificate = "" }, "certificate", "give the certificate's ACM ARN with --certificate"},
		{"certificate without tls", func(g *Group) { web(g); g.Publish = Ports{"80"} }, "certificate", "applies to tls ports only"},
		{"certificate not an ACM ARN", func(g *Group) { web(g); g.Certificate = "arn:aws:iam::123456789012:server-certificate/x" }, "certificate", "expected an ACM certificate ARN"},
		{"scheme", func(g *Group) { web(g); g.LoadBalancer = "public" }, "loadBalancer", `invalid load balancer "public": expected internet-facing or internal`},
		{"allow-from garbage", func(g *Group) { web(g); g.AllowFrom = []string{"office"} }, "allowFrom", `invalid CIDR "office"`},
		{"allow-from host bits", func(g *Group) { web(g); g.AllowFrom = []string{"10.1.2.3/16"} }, "allowFrom", "did you mean 10.1.0.0/16?"},
		{"allow-from IPv6", func(g *Group) { web(g); g.AllowFrom = []string{"2001:db8::/32"} }, "allowFrom", "expected an IPv4"},
		{"allow-from twice", func(g *Group) { web(g); g.AllowFrom = []string{"10.0.0.0/8", "10.0.0.0/8"} }, "allowFrom", "given twice"},
		{"too many rules", func(g *Group) {
			web(g)
			for i := range 31 {
				g.AllowFrom = append(g.AllowFrom, fmt.Sprintf("10.%d.0.0/16", i))
			}
		}, "allowFrom", "2 ports from 31 CIDRs need 62 security group rules, over the 60"},
		{"negative delay", func(g *Group) { web(g); g.DeregistrationDelay = intp(-1) }, "deregistrationDelay", "invalid deregistration delay -1"},
		{"long delay", func(g *Group) { web(g); g.DeregistrationDelay = intp(3601) }, "deregistrationDelay", "expected 0 to 3600 seconds"},
		{"access logs bucket", func(g *Group) { web(g); g.AccessLogs = "Logs_Bucket" }, "accessLogs", `invalid bucket name "Logs_Bucket"`},
		{"scheme without publish", func(g *Group) { bare(g); g.LoadBalancer = SchemeInternal }, "loadBalancer", "applies to a group with a load balancer only"},
		{"allow-from without publish", func(g *Group) { bare(g); g.AllowFrom = []string{"10.0.0.0/8"} }, "allowFrom", "give the ports to publish with --publish"},
		{"certificate without publish", func(g *Group) { bare(g); g.Certificate = testCert }, "certificate", "applies to a group with a load balancer only"},
		{"delay without publish", func(g *Group) { bare(g); g.DeregistrationDelay = intp(10) }, "deregistrationDelay", "applies to a group with a load balancer only"},
		{"access logs without publish", func(g *Group) { bare(g); g.AccessLogs = "logs" }, "accessLogs", "applies to a group with a load balancer only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g Group
			tt.change(&g)
			checkFieldError(t, g.Complete("core"), tt.path, tt.want)
		})
	}
	var g Group
	web(&g)
	g.AllowFrom = []string{"203.0.113.0/24"}
	if err := g.Complete("core"); err != nil {
		t.Fatalf("valid group refused: %v", err)
	}
	// Port 22 of the load balancer to another node port is the service's.
	g.Publish = Ports{"22:30022", "2375:32375"}
	g.Certificate = ""
	if err := g.Complete("core"); err != nil {
		t.Fatalf("port 22 to node port 30022 refused: %v", err)
	}
}

func TestLoadBalancerDefaults(t *testing.T) {
	g := Group{Name: "web", InstanceType: InstanceTypes{"m5.large"}, Publish: Ports{"80:80/tcp", "443:443/TLS"}, Certificate: testCert}
	g.Default()
	if !slices.Equal(g.Publish, Ports{"80", "443/tls"}) || g.LoadBalancer != SchemeInternetFacing || *g.DeregistrationDelay != 30 || g.AllowFrom != nil {
		t.Errorf("defaults: %+v", g)
	}
	if got := g.AllowFromOr("10.0.0.0/16"); !slices.Equal(got, []string{"0.0.0.0/0"}) {
		t.Errorf("internet-facing allows %q", got)
	}
	g.LoadBalancer = SchemeInternal
	if got := g.AllowFromOr("10.0.0.0/16"); !slices.Equal(got, []string{"10.0.0.0/16"}) {
		t.Errorf("internal allows %q", got)
	}
	g.AllowFrom = []string{"10.1.0.0/16"}
	if got := g.AllowFromOr("10.0.0.0/16"); !slices.Equal(got, []string{"10.1.0.0/16"}) {
		t.Errorf("given allow-from: %q", got)
	}
	g.Trim()
	if g.LoadBalancer != SchemeInternal || g.DeregistrationDelay != nil {
		t.Errorf("trimmed: %+v", g)
	}
	// A group without a load balancer has none of its settings.
	b := Group{Name: "b", InstanceType: InstanceTypes{"m5.large"}}
	b.Default()
	if b.LoadBalancer != "" || b.DeregistrationDelay != nil || b.Publish != nil {
		t.Errorf("no publish: %+v", b)
	}
}

// update-group --publish "" removes the load balancer with its settings;
// a port added keeps the others.
func TestUpdateLoadBalancer(t *testing.T) {
	g := Group{Name: "web", InstanceType: InstanceTypes{"m5.large"}, Publish: Ports{"80", "443/tls"}, Certificate: testCert,
		LoadBalancer: SchemeInternal, AllowFrom: []string{"10.0.0.0/8"}, DeregistrationDelay: intp(5), AccessLogs: "logs"}
	var flags Group
	_ = flags.Publish.UnmarshalText([]byte(""))
	off := g.Update(flags, []string{"publish"})
	off.Default()
	if off.Published() || off.LoadBalancer != "" || off.AllowFrom != nil || off.Certificate != "" || off.DeregistrationDelay != nil || off.AccessLogs != "" {
		t.Errorf("removed: %+v", off)
	}
	if err := off.Check("core"); err != nil {
		t.Errorf("group without its load balancer refused: %v", err)
	}
	_ = flags.Publish.UnmarshalText([]byte("80,443/tls,8080"))
	more := g.Update(flags, []string{"publish"})
	if !slices.Equal(more.Publish, Ports{"80", "443/tls", "8080"}) || more.Certificate != testCert || more.DeregistrationDelay == nil || !slices.Equal(g.Publish, Ports{"80", "443/tls"}) {
		t.Errorf("port added: %+v (was %+v)", more, g)
	}
	d := Diff(g, more)
	if len(d) != 1 || d[0].Path != "publish" || d[0].OldText != "80,443/tls" || d[0].NewText != "80,443/tls,8080" {
		t.Errorf("plan: %+v", d)
	}
	g.Default()
	for _, c := range Diff(g, off) {
		if c.Path == "publish" && c.NewText != "(none)" || c.Path == "loadBalancer" && c.OldText+" → "+c.NewText != "internal → (none)" {
			t.Errorf("plan of the removal: %+v", c)
		}
	}
}

func TestPortsForms(t *testing.T) {
	var flag Ports
	if err := flag.UnmarshalText([]byte("80, 443/tls")); err != nil || !slices.Equal(flag, Ports{"80", "443/tls"}) {
		t.Errorf("flag: %q, %v", flag, err)
	}
	for _, tt := range []struct{ json, yaml string }{
		{`[80, "443/tls"]`, `[80, 443/tls]`},
		{`"80,443/tls"`, `80,443/tls`},
	} {
		var j, y struct {
			P Ports `json:"publish" yaml:"publish"`
		}
		if err := json.Unmarshal([]byte(`{"publish":`+tt.json+`}`), &j); err != nil || !slices.Equal(j.P, Ports{"80", "443/tls"}) {
			t.Errorf("JSON %s: %q, %v", tt.json, j.P, err)
		}
		if err := yaml.Unmarshal([]byte("publish: "+tt.yaml), &y); err != nil || !slices.Equal(y.P, Ports{"80", "443/tls"}) {
			t.Errorf("YAML %s: %q, %v", tt.yaml, y.P, err)
		}
	}
	var j struct {
		P Ports `json:"publish"`
	}
	if err := json.Unmarshal([]byte(`{"publish": 8080}`), &j); err != nil || !slices.Equal(j.P, Ports{"8080"}) {
		t.Errorf("one number: %q, %v", j.P, err)
	}
	if err := json.Unmarshal([]byte(`{"publish": [{"port": 80}]}`), &j); err == nil {
		t.Error("an object read as a port")
	}
	out, _ := json.Marshal(Ports{"80", "443/tls"})
	if string(out) != `["80","443/tls"]` {
		t.Errorf("written as %s", out)
	}
}
