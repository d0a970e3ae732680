package cluster

import (
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// The managers are private: clusterctl reaches the swarm through the
// core's queue, where EventBridge puts the termination notices and the
// spot warnings the managers' housekeeping handles. A request has the
// envelope of those events, so housekeeping reads it as it reads them
// (internal/wire; its shape is documented in docs/design.md).

// Availabilities a request may ask for, in Docker's words.
const (
	AvailabilityDrain  = wire.AvailabilityDrain
	AvailabilityActive = wire.AvailabilityActive
)

// CheckInstanceID checks the shape of an EC2 instance id given by the
// operator, before any AWS call.
func CheckInstanceID(id string) error {
	if !wire.ValidInstanceID(id) {
		return errs.Usage("invalid instance id %q: want i- and 8 or 17 hex digits, e.g. i-0123456789abcdef0", id)
	}
	return nil
}

// availabilityRequest builds the body of the request, made at, by caller
// (an ARN, or "" when unknown) in region, to set the swarm nodes of
// instance of cluster to availability. It refuses what housekeeping would
// drop.
func availabilityRequest(id string, at time.Time, caller, region, cluster, instance, availability string) (string, error) {
	if spec.CheckClusterName(cluster) != nil {
		return "", fmt.Errorf("invalid cluster name %q", cluster)
	}
	if err := CheckInstanceID(instance); err != nil {
		return "", err
	}
	return wire.NewAvailabilityRequest(id, at, caller, region, cluster, instance, availability)
}
