package cluster

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// The managers are private: clusterctl reaches the swarm through the
// core's queue, where EventBridge puts the termination notices and the
// spot warnings the managers' housekeeping handles. A request has the
// envelope of those events, so housekeeping reads it as it reads them;
// its shape is documented in docs/design.md and read by handle_request in
// templates/core/control.sh.tmpl.

// Availabilities a request may ask for, in Docker's words.
const (
	AvailabilityDrain  = "drain"
	AvailabilityActive = "active"
)

// nodeRequest is a request in EventBridge's event envelope.
type nodeRequest struct {
	Version    string        `json:"version"`
	ID         string        `json:"id"`
	DetailType string        `json:"detail-type"`
	Source     string        `json:"source"`
	Account    string        `json:"account"`
	Time       string        `json:"time"`
	Region     string        `json:"region"`
	Resources  []string      `json:"resources"`
	Detail     requestDetail `json:"detail"`
}

// requestDetail is what a node availability request asks: set the swarm
// nodes of the instance to the availability. RequestedBy is the principal
// that sent it, as it says itself: for the people reading the queue.
type requestDetail struct {
	RequestID    string `json:"request-id"`
	Time         string `json:"time"`
	Cluster      string `json:"cluster"`
	InstanceID   string `json:"instance-id"`
	Availability string `json:"availability"`
	RequestedBy  string `json:"requested-by,omitempty"`
}

var (
	instanceIDRE = regexp.MustCompile(`^i-[0-9a-f]{8}([0-9a-f]{9})?$`)
	requestIDRE  = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// CheckInstanceID checks the shape of an EC2 instance id given by the
// operator, before any AWS call.
func CheckInstanceID(id string) error {
	if !instanceIDRE.MatchString(id) {
		return errs.Usage("invalid instance id %q: want i- and 8 or 17 hex digits, e.g. i-0123456789abcdef0", id)
	}
	return nil
}

// newRequestID returns a random (version 4) UUID.
func newRequestID() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// availabilityRequest builds the request, made at, by caller (an ARN, or
// "" when unknown) in region, to set the swarm nodes of instance of
// cluster to availability. It refuses what housekeeping would drop.
func availabilityRequest(id string, at time.Time, caller, region, cluster, instance, availability string) (nodeRequest, error) {
	switch {
	case !requestIDRE.MatchString(id):
		return nodeRequest{}, fmt.Errorf("invalid request id %q", id)
	case spec.CheckClusterName(cluster) != nil:
		return nodeRequest{}, fmt.Errorf("invalid cluster name %q", cluster)
	case CheckInstanceID(instance) != nil:
		return nodeRequest{}, CheckInstanceID(instance)
	case availability != AvailabilityDrain && availability != AvailabilityActive:
		return nodeRequest{}, fmt.Errorf("invalid availability %q: want %s or %s", availability, AvailabilityDrain, AvailabilityActive)
	}
	// The account and partition are the caller's (arn:PARTITION:sts::ACCOUNT:...).
	partition, account := "aws", ""
	if f := strings.Split(caller, ":"); len(f) >= 6 && f[0] == "arn" {
		partition, account = f[1], f[4]
	}
	t := at.UTC().Format(time.RFC3339)
	return nodeRequest{
		Version: "0", ID: id, DetailType: names.RequestNodeAvailability, Source: names.RequestSource,
		Account: account, Time: t, Region: region,
		Resources: []string{fmt.Sprintf("arn:%s:ec2:%s:%s:instance/%s", partition, region, account, instance)},
		Detail: requestDetail{
			RequestID: id, Time: t, Cluster: cluster, InstanceID: instance, Availability: availability, RequestedBy: caller,
		},
	}, nil
}

// body is the message the request is sent as.
func (r nodeRequest) body() string {
	b, _ := json.Marshal(r) // strings only: cannot fail
	return string(b)
}
