package enginetest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/clusterctl/clusterctl/internal/ssmfake"
)

// AWS is the endpoint the nodes use: every request goes on to moto, except
// the lifecycle actions of Auto Scaling groups, which moto does not model;
// those it answers as Auto Scaling does, for the actions the test began
// (the test plays AWS terminating an instance). It records every call.
type AWS struct {
	URL string

	srv   *http.Server
	proxy *httputil.ReverseProxy

	// runCommand plays Run Command's invocations, which moto does not
	// (see ssmagent.go).
	runCommand *ssmfake.RunCommand
	agents     agents

	// instanceAt is the instance a node's address is ("" for none).
	instanceAt func(netip.Addr) string

	mu         sync.Mutex
	actions    map[string]*LifecycleAction // by token
	calls      []Call
	onComplete map[string]func(LifecycleAction) // by instance
	denied     map[Call]bool                    // by node, service and action
}

// Call is one request the endpoint received.
type Call struct {
	Service, Action string     // e.g. autoscaling, CompleteLifecycleAction; s3, GET /bucket/key
	From            netip.Addr // the node that called
	KeyID           string     // the access key id it signed with
	Time            time.Time
}

// LifecycleAction is one instance waiting in a termination lifecycle hook.
type LifecycleAction struct {
	Token, Group, Hook, InstanceID string
	Heartbeats                     int
	Result                         string // "" while the instance waits; CONTINUE or ABANDON once completed
	// Completions counts the calls to complete it, those refused because
	// it was already completed included.
	Completions int
}

func newAWS(gateway netip.Addr, motoURL string) (*AWS, error) {
	target, err := url.Parse(motoURL)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gateway.String(), "0"))
	if err != nil {
		return nil, fmt.Errorf("AWS endpoint: %w", err)
	}
	a := &AWS{URL: "http://" + ln.Addr().String(), proxy: httputil.NewSingleHostReverseProxy(target),
		actions: map[string]*LifecycleAction{}, onComplete: map[string]func(LifecycleAction){}, denied: map[Call]bool{}}
	// Nodes are killed in the middle of calls: not worth a log line.
	a.proxy.ErrorLog = log.New(io.Discard, "", 0)
	a.runCommand = ssmfake.New(a.proxy)
	a.srv = &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	go a.srv.Serve(ln)
	return a, nil
}

func (a *AWS) close() { a.srv.Close() }

// OnComplete sets f to run when the lifecycle action of instance is
// completed, before the caller gets its answer: the test sees the swarm as
// it is at that moment. A nil f removes it.
func (a *AWS) OnComplete(instanceID string, f func(LifecycleAction)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f == nil {
		delete(a.onComplete, instanceID)
		return
	}
	a.onComplete[instanceID] = f
}

// Deny refuses the calls of one EC2 action from one node, as EC2 does
// when the caller's role does not allow it (UnauthorizedOperation).
func (a *AWS) Deny(from netip.Addr, action string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.denied[Call{Service: "ec2", Action: action, From: from}] = true
}

// BeginLifecycleAction puts instance into group's termination hook and
// returns the action's token, which the notice carries.
func (a *AWS) BeginLifecycleAction(group, hook, instanceID string) string {
	token := uuid()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.actions[token] = &LifecycleAction{Token: token, Group: group, Hook: hook, InstanceID: instanceID}
	return token
}

// Action returns the lifecycle action with token.
func (a *AWS) Action(token string) (LifecycleAction, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if act, ok := a.actions[token]; ok {
		return *act, true
	}
	return LifecycleAction{}, false
}

// Calls returns the calls received so far, in order.
func (a *AWS) Calls() []Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Call(nil), a.calls...)
}

// CountCalls returns how many calls of service and action were received
// from the node at address from: the lab is shared by the tests running in
// parallel.
func (a *AWS) CountCalls(from netip.Addr, service, action string) int {
	n := 0
	for _, c := range a.Calls() {
		if c.From == from && c.Service == service && c.Action == action {
			n++
		}
	}
	return n
}

var credentialScope = regexp.MustCompile(`Credential=([^/]+)/[0-9]+/[^/]+/([^/]+)/aws4_request`)

func (a *AWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	service, keyID := "", ""
	if m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		keyID, service = m[1], m[2]
	}
	action := ""
	var form url.Values
	switch {
	case r.Header.Get("X-Amz-Target") != "":
		_, action, _ = strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	case service == "s3":
		action = r.Method + " " + r.URL.Path
	default:
		form, _ = url.ParseQuery(string(body))
		action = form.Get("Action")
	}
	from, _ := netip.ParseAddrPort(r.RemoteAddr)
	a.mu.Lock()
	a.calls = append(a.calls, Call{Service: service, Action: action, From: from.Addr(), KeyID: keyID, Time: time.Now()})
	denied := a.denied[Call{Service: service, Action: action, From: from.Addr()}]
	a.mu.Unlock()
	if denied {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not authorized to perform this operation.</Message></Error></Errors><RequestID>%s</RequestID></Response>`, uuid())
		return
	}
	if service == "autoscaling" && (action == "CompleteLifecycleAction" || action == "RecordLifecycleActionHeartbeat") {
		a.lifecycleAction(w, action, form)
		return
	}
	if service == "autoscaling" && action == "DescribeAutoScalingInstances" && a.waitingInstances(w, form) {
		return
	}
	if service == "sts" && action == "GetCallerIdentity" && a.instanceAt != nil {
		if id := a.instanceAt(from.Addr()); id != "" {
			callerIdentity(w, id)
			return
		}
	}
	if service == "ssm" {
		a.runCommand.ServeHTTP(w, r)
		return
	}
	a.proxy.ServeHTTP(w, r)
}

// lifecycleAction answers CompleteLifecycleAction and
// RecordLifecycleActionHeartbeat as Auto Scaling does: only for an action
// that is waiting, found by its token or by its instance.
func (a *AWS) lifecycleAction(w http.ResponseWriter, action string, form url.Values) {
	token, instance := form.Get("LifecycleActionToken"), form.Get("InstanceId")
	a.mu.Lock()
	if c := a.actions[token]; c != nil && action == "CompleteLifecycleAction" {
		c.Completions++
	}
	var act *LifecycleAction
	for _, c := range a.actions {
		if c.Result == "" && c.Group == form.Get("AutoScalingGroupName") && c.Hook == form.Get("LifecycleHookName") &&
			(token != "" && c.Token == token || token == "" && c.InstanceID == instance) {
			act = c
		}
	}
	if act == nil {
		a.mu.Unlock()
		what := "token " + token
		if token == "" {
			what = "instance ID " + instance
		}
		awsError(w, "ValidationError", "No active Lifecycle Action found with "+what)
		return
	}
	if action == "RecordLifecycleActionHeartbeat" {
		act.Heartbeats++
		a.mu.Unlock()
		awsResult(w, action)
		return
	}
	result := form.Get("LifecycleActionResult")
	if result != "CONTINUE" && result != "ABANDON" {
		a.mu.Unlock()
		awsError(w, "ValidationError", "Invalid LifecycleActionResult "+result)
		return
	}
	done, f := *act, a.onComplete[act.InstanceID]
	done.Result = result
	a.mu.Unlock()
	if f != nil {
		f(done)
	}
	a.mu.Lock()
	act.Result = result
	a.mu.Unlock()
	awsResult(w, action)
}

// waitingInstances answers DescribeAutoScalingInstances as Auto Scaling
// does for one instance waiting in a termination hook of an action the
// test began (Terminating:Wait); false for any other, which moto answers.
func (a *AWS) waitingInstances(w http.ResponseWriter, form url.Values) bool {
	id := form.Get("InstanceIds.member.1")
	if id == "" || form.Get("InstanceIds.member.2") != "" {
		return false
	}
	a.mu.Lock()
	var act *LifecycleAction
	for _, c := range a.actions {
		if c.InstanceID == id && c.Result == "" {
			act = c
		}
	}
	a.mu.Unlock()
	if act == nil {
		return false
	}
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<DescribeAutoScalingInstancesResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><DescribeAutoScalingInstancesResult><AutoScalingInstances><member>`+
		`<InstanceId>%s</InstanceId><AutoScalingGroupName>%s</AutoScalingGroupName><AvailabilityZone>us-east-1a</AvailabilityZone><LifecycleState>Terminating:Wait</LifecycleState>`+
		`<HealthStatus>HEALTHY</HealthStatus><ProtectedFromScaleIn>false</ProtectedFromScaleIn></member></AutoScalingInstances></DescribeAutoScalingInstancesResult>`+
		`<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></DescribeAutoScalingInstancesResponse>`, html.EscapeString(id), html.EscapeString(act.Group), uuid())
	return true
}

// callerIdentity answers GetCallerIdentity as STS does for the session of
// an instance profile's role on instance id: its aws:userid is the role's
// id and the instance id.
func callerIdentity(w http.ResponseWriter, id string) {
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>`+
		`<Arn>arn:aws:sts::123456789012:assumed-role/%s/%s</Arn><UserId>AROALABNODEROLE0000:%s</UserId><Account>123456789012</Account>`+
		`</GetCallerIdentityResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></GetCallerIdentityResponse>`, NodeRole, id, id, uuid())
}

func awsResult(w http.ResponseWriter, action string) {
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<%[1]sResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><%[1]sResult/><ResponseMetadata><RequestId>%[2]s</RequestId></ResponseMetadata></%[1]sResponse>`, action, uuid())
}

func awsError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `<ErrorResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>`,
		code, html.EscapeString(msg), uuid())
}

func uuid() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// TerminationNotice is the event Auto Scaling sends to EventBridge when an
// instance enters a termination lifecycle hook ("EC2 Instance-terminate
// Lifecycle Action", as documented), for the given action.
func TerminationNotice(account, region string, act LifecycleAction) string {
	detail := map[string]string{
		"LifecycleActionToken": act.Token,
		"AutoScalingGroupName": act.Group,
		"LifecycleHookName":    act.Hook,
		"EC2InstanceId":        act.InstanceID,
		"LifecycleTransition":  "autoscaling:EC2_INSTANCE_TERMINATING",
		"NotificationMetadata": "",
		"Origin":               "AutoScalingGroup",
		"Destination":          "EC2",
	}
	ev := map[string]any{
		"version":     "0",
		"id":          uuid(),
		"detail-type": "EC2 Instance-terminate Lifecycle Action",
		"source":      "aws.autoscaling",
		"account":     account,
		"time":        time.Now().UTC().Format(time.RFC3339),
		"region":      region,
		"resources": []string{fmt.Sprintf("arn:aws:autoscaling:%s:%s:autoScalingGroup:%s:autoScalingGroupName/%s",
			region, account, uuid(), act.Group)},
		"detail": detail,
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

// InterruptionWarning is the event EC2 sends to EventBridge two minutes
// before it takes back a spot instance ("EC2 Spot Instance Interruption
// Warning", as documented).
func InterruptionWarning(account, region, instanceID string) string {
	return ec2Event(account, region, "EC2 Spot Instance Interruption Warning",
		map[string]string{"instance-id": instanceID, "instance-action": "terminate"}, instanceID)
}

// RebalanceRecommendation is the event EC2 sends to EventBridge when a
// spot instance is at an elevated risk of interruption ("EC2 Instance
// Rebalance Recommendation", as documented).
func RebalanceRecommendation(account, region, instanceID string) string {
	return ec2Event(account, region, "EC2 Instance Rebalance Recommendation",
		map[string]string{"instance-id": instanceID}, instanceID)
}

func ec2Event(account, region, detailType string, detail map[string]string, instanceID string) string {
	b, _ := json.Marshal(map[string]any{
		"version":     "0",
		"id":          uuid(),
		"detail-type": detailType,
		"source":      "aws.ec2",
		"account":     account,
		"time":        time.Now().UTC().Format(time.RFC3339),
		"region":      region,
		"resources":   []string{fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", region, account, instanceID)},
		"detail":      detail,
	})
	return string(b)
}
