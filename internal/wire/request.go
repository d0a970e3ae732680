package wire

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
)

// The core's queue brings the managers' housekeeping the events
// EventBridge puts there (termination notices of the lifecycle hooks,
// spot interruption warnings, rebalance recommendations) and the requests
// clusterctl sends. A request has the envelope of those events, so that
// housekeeping reads every message the same way.

// Detail types of the events on the core's queue (EventBridge's words);
// a request's is names.RequestNodeAvailability.
const (
	DetailTerminate = "EC2 Instance-terminate Lifecycle Action"
	DetailSpot      = "EC2 Spot Instance Interruption Warning"
	DetailRebalance = "EC2 Instance Rebalance Recommendation"
	// TransitionTerminating is a termination notice's LifecycleTransition.
	TransitionTerminating = "autoscaling:EC2_INSTANCE_TERMINATING"
)

// LifecycleActionMaxAge is how long Auto Scaling keeps a lifecycle action
// at the most: a notice older than that has no action left.
const LifecycleActionMaxAge = 48 * time.Hour

// Availabilities a request may ask for, in Docker's words.
const (
	AvailabilityDrain  = "drain"
	AvailabilityActive = "active"
)

// Event is a message of the core's queue in EventBridge's envelope; Detail
// is read according to DetailType.
type Event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// ParseEvent reads a message body of the core's queue.
func ParseEvent(body string) (Event, error) {
	var e Event
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return Event{}, fmt.Errorf("not an event: %s", oneLine(err.Error()))
	}
	return e, nil
}

// AvailabilityDetail is what a node availability request asks: set the
// swarm nodes of the instance to the availability. RequestedBy is the
// principal that sent it, as it says itself: for the people reading the
// queue.
type AvailabilityDetail struct {
	RequestID    string `json:"request-id"`
	Time         string `json:"time"`
	Cluster      string `json:"cluster"`
	InstanceID   string `json:"instance-id"`
	Availability string `json:"availability"`
	RequestedBy  string `json:"requested-by,omitempty"`
}

// LifecycleDetail is a termination notice's detail.
type LifecycleDetail struct {
	AutoScalingGroupName string `json:"AutoScalingGroupName"`
	LifecycleHookName    string `json:"LifecycleHookName"`
	LifecycleActionToken string `json:"LifecycleActionToken"`
	LifecycleTransition  string `json:"LifecycleTransition"`
	EC2InstanceID        string `json:"EC2InstanceId"`
}

// InterruptionDetail is a spot interruption warning's or a rebalance
// recommendation's detail.
type InterruptionDetail struct {
	InstanceID string `json:"instance-id"`
}

var (
	instanceIDRE = regexp.MustCompile(`^i-[0-9a-f]{8}([0-9a-f]{9})?$`)
	requestIDRE  = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// ValidInstanceID tells whether id has the shape of an EC2 instance id.
func ValidInstanceID(id string) bool { return instanceIDRE.MatchString(id) }

// ValidRequestID tells whether id has the shape of a request id (a UUID).
func ValidRequestID(id string) bool { return requestIDRE.MatchString(id) }

// NewRequestID returns a random (version 4) UUID.
func NewRequestID() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// NewAvailabilityRequest builds the request id, made at, by caller (an
// ARN, or "" when unknown) in region, to set the swarm nodes of instance of
// cluster to availability; it refuses what housekeeping would drop (the
// cluster name is the caller's to check). The body is what is sent.
func NewAvailabilityRequest(id string, at time.Time, caller, region, cluster, instance, availability string) (body string, err error) {
	d := AvailabilityDetail{RequestID: id, Cluster: cluster, InstanceID: instance, Availability: availability, RequestedBy: caller}
	if err := d.check(); err != nil {
		return "", err
	}
	// The account and partition are the caller's (arn:PARTITION:sts::ACCOUNT:...).
	partition, account := "aws", ""
	if f := strings.Split(caller, ":"); len(f) >= 6 && f[0] == "arn" {
		partition, account = f[1], f[4]
	}
	t := at.UTC().Format(time.RFC3339)
	d.Time = t
	detail, _ := json.Marshal(d) // strings only: cannot fail
	b, _ := json.Marshal(Event{
		Version: "0", ID: id, DetailType: names.RequestNodeAvailability, Source: names.RequestSource,
		Account: account, Time: t, Region: region,
		Resources: []string{fmt.Sprintf("arn:%s:ec2:%s:%s:instance/%s", partition, region, account, instance)},
		Detail:    detail,
	})
	return string(b), nil
}

func (d AvailabilityDetail) check() error {
	switch {
	case !ValidRequestID(d.RequestID):
		return fmt.Errorf("invalid request id %q", d.RequestID)
	case !ValidInstanceID(d.InstanceID):
		return fmt.Errorf("invalid instance id %q: want i- and 8 or 17 hex digits, e.g. i-0123456789abcdef0", d.InstanceID)
	case d.Availability != AvailabilityDrain && d.Availability != AvailabilityActive:
		return fmt.Errorf("invalid availability %q: want %s or %s", d.Availability, AvailabilityDrain, AvailabilityActive)
	}
	return nil
}

// AvailabilityRequest reads the request in e for cluster: an error when it
// is of another shape, source or cluster (housekeeping drops it).
func (e Event) AvailabilityRequest(cluster string) (AvailabilityDetail, error) {
	var d AvailabilityDetail
	if e.DetailType != names.RequestNodeAvailability || e.Source != names.RequestSource {
		return d, fmt.Errorf("not a node availability request")
	}
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		return d, fmt.Errorf("a node availability request of another shape: %s", oneLine(err.Error()))
	}
	if d.Cluster != cluster {
		return d, fmt.Errorf("a node availability request for cluster %q, not %q", d.Cluster, cluster)
	}
	return d, d.check()
}

// Lifecycle reads the termination notice in e: an error when it is not an
// instance termination of a lifecycle hook.
func (e Event) Lifecycle() (LifecycleDetail, error) {
	var d LifecycleDetail
	if e.DetailType != DetailTerminate {
		return d, fmt.Errorf("not a termination notice")
	}
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		return d, fmt.Errorf("a termination notice of another shape: %s", oneLine(err.Error()))
	}
	switch {
	case d.LifecycleTransition != TransitionTerminating:
		return d, fmt.Errorf("a lifecycle notice of transition %q", d.LifecycleTransition)
	case len(d.AutoScalingGroupName) > maxASGName || !groupRE.MatchString(d.AutoScalingGroupName),
		len(d.LifecycleHookName) > maxASGName || !hookRE.MatchString(d.LifecycleHookName):
		return d, fmt.Errorf("a termination notice without its group or hook")
	case !requestIDRE.MatchString(d.LifecycleActionToken):
		return d, fmt.Errorf("a termination notice without a lifecycle action token")
	case !ValidInstanceID(d.EC2InstanceID):
		return d, fmt.Errorf("a termination notice of instance %q", d.EC2InstanceID)
	}
	return d, nil
}

// The shapes of an Auto Scaling group's and a lifecycle hook's names, of
// up to maxASGName characters each, bounded apart: a counted repetition
// compiles to a state per count, which every start of a program paid.
var (
	groupRE = regexp.MustCompile(`^[-_.a-zA-Z0-9]+$`)
	hookRE  = regexp.MustCompile(`^[-_/a-zA-Z0-9]+$`)
)

const maxASGName = 255 // Auto Scaling's bound on both names

// Interruption reads the instance of a spot interruption warning or a
// rebalance recommendation; "" when it names none.
func (e Event) Interruption() string {
	var d InterruptionDetail
	if json.Unmarshal(e.Detail, &d) != nil || !ValidInstanceID(d.InstanceID) {
		return ""
	}
	return d.InstanceID
}

// Sent is when the event says it was made; the zero time when it does not.
func (e Event) Sent() time.Time {
	t, err := time.Parse(time.RFC3339, e.Time)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
