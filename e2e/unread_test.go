package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// deniedProxy stands between the binary and moto and refuses, as AWS
// refuses a principal without the permission, the query-protocol calls
// of one service whose parameter param is value; the rest reach moto.
func deniedProxy(t *testing.T, denials map[string]func(url.Values) bool) string {
	t.Helper()
	target, _ := url.Parse(endpointOf(t))
	next := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		svc := serviceOf(r)
		if deny := denials[svc]; deny != nil && deny(form) {
			w.Header().Set("Content-Type", "text/xml")
			w.WriteHeader(http.StatusForbidden)
			action := form.Get("Action")
			if svc == "ec2" {
				fmt.Fprintf(w, `<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not authorized to perform this operation. User: ro is not authorized to perform: ec2:%s</Message></Error></Errors><RequestID>denied-%p</RequestID></Response>`, action, r)
				return
			}
			fmt.Fprintf(w, `<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>User: ro is not authorized to perform: elasticloadbalancing:%s</Message></Error><RequestId>denied-%p</RequestId></ErrorResponse>`, action, r)
			return
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// One group whose load balancer's target groups, or whose launch template,
// cannot be read hides no other: list-groups and describe show every row,
// "?" where a value could not be read, say why once on stderr, and exit 0.
func TestUnreadGroupHidesNoOther(t *testing.T) {
	parallel(t)
	c, _ := newCluster(t, "plain")
	must(t, "add-agents", "-n", "web", "-t", "t3.small", "-j", "core", "--publish", "8080", "--load-balancer", "internal", "-q")
	must(t, "add-agents", "-n", "broken", "-t", "t3.small", "-j", "core", "--publish", "8081", "--load-balancer", "internal", "-q")
	brokenLB := outputs(describeStack(t, c, "core-broken"))["LoadBalancerArn"]
	if brokenLB == "" {
		t.Fatal("core-broken has no LoadBalancerArn output")
	}
	lt := groupASG(t, c, "core", "broken").LaunchTemplate
	if lt == nil {
		t.Fatal("core-broken's Auto Scaling group has no launch template")
	}
	proxy := deniedProxy(t, map[string]func(url.Values) bool{
		"elasticloadbalancing": func(f url.Values) bool {
			return f.Get("Action") == "DescribeTargetGroups" && f.Get("LoadBalancerArn") == brokenLB
		},
		"ec2": func(f url.Values) bool {
			return f.Get("Action") == "DescribeLaunchTemplateVersions" && f.Get("LaunchTemplateId") == aws.ToString(lt.LaunchTemplateId)
		},
	})
	denied := "clusterctl: the load balancer of core-broken could not be read: AccessDenied: User: ro is not authorized to perform: elasticloadbalancing:DescribeTargetGroups (shown as ?)\n"

	r := clusterctlAt(t, proxy, "list-groups", "-j", "core", "-o", "wide")
	if r.code != 0 || strings.Count(r.stderr, "could not be read") != 1 || !strings.Contains(r.stderr, denied) {
		t.Errorf("list-groups with one load balancer unreadable: want exit 0 and the reason once:\n%s", r)
	}
	for _, want := range []string{`(?m)^core\s+broken\s.*\s\?$`, `(?m)^core\s+web\s.*\s8080 \(\d/\d healthy\)$`, `(?m)^core\s+plain\s.*\s-$`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("list-groups lacks %s:\n%s", want, r.stdout)
		}
	}
	type group struct {
		Group        string
		LoadBalancer *struct{ Unread string }
	}
	groups := decode[[]group](t, clusterctlAt(t, proxy, "list-groups", "-j", "core", "-o", "json"))
	unread := map[string]string{}
	for _, g := range groups {
		if g.LoadBalancer != nil {
			unread[g.Group] = g.LoadBalancer.Unread
		}
	}
	if len(groups) != 3 || !strings.HasPrefix(unread["broken"], "AccessDenied: ") || unread["web"] != "" {
		t.Errorf("list-groups -o json: %+v", groups)
	}

	r = clusterctlAt(t, proxy, "describe", "core")
	if r.code != 0 || !strings.Contains(r.stderr, denied) ||
		!strings.Contains(r.stderr, "clusterctl: the health of core-broken could not be read: UnauthorizedOperation: ") {
		t.Errorf("describe with one group unreadable: want exit 0 and the reasons:\n%s", r)
	}
	for _, want := range []string{`(?m)^broken\s+\S+\s+\?\s`, `(?m)^broken: load balancer \S+ \(internal\): \?$`, `(?m)^web: load balancer \S+ \(internal\): 8080 \(\d/\d healthy\)$`, `(?m)^plain\s`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("describe lacks %s:\n%s", want, r.stdout)
		}
	}
}
