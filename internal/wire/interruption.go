package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Kinds of an instance's interruption notice, as its instance metadata
// gives them.
const (
	InterruptionSpot      = "spot"      // spot/instance-action
	InterruptionRebalance = "rebalance" // events/recommendations/rebalance
)

// InterruptionConfirmation is what an agent read from its own instance
// metadata and wrote to the bucket: EC2 told the instance itself.
type InterruptionConfirmation struct {
	InstanceID string `json:"instanceId"`
	Kind       string `json:"kind"`
	// Action is the spot instance-action's (terminate, stop, hibernate).
	Action string `json:"action,omitempty"`
	// Time is the metadata's: the spot action's time, or the rebalance
	// recommendation's noticeTime.
	Time time.Time `json:"time"`
}

// Marshal is the confirmation's JSON.
func (c InterruptionConfirmation) Marshal() []byte {
	b, _ := json.Marshal(c)
	return b
}

// ParseInterruptionConfirmation reads a confirmation and checks its shape.
func ParseInterruptionConfirmation(b []byte) (InterruptionConfirmation, error) {
	var c InterruptionConfirmation
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("interruption confirmation: %w", err)
	}
	if !ValidInstanceID(c.InstanceID) || c.Kind != InterruptionSpot && c.Kind != InterruptionRebalance || c.Time.IsZero() {
		return c, fmt.Errorf("interruption confirmation: not an instance id, a kind and a time")
	}
	return c, nil
}

// Confirms tells whether c confirms a warning of kind for instance that
// the queue received at sent: the same instance, a spot interruption for
// either kind (it is the stronger), and metadata time within window of
// sent (a spot action's time is two minutes after its warning; a
// recommendation's is when it was made). The window keeps an old
// confirmation from vouching for a warning made up later.
func (c InterruptionConfirmation) Confirms(instance, kind string, sent time.Time, window time.Duration) bool {
	if c.InstanceID != instance || c.Kind != kind && c.Kind != InterruptionSpot {
		return false
	}
	d := c.Time.Sub(sent)
	return d <= window && d >= -window
}

// ConfirmationOwner is the instance id a confirmation's key names: the
// part of the writer's aws:userid after its colon ("" when it has none).
func ConfirmationOwner(key string) string {
	i := strings.LastIndexByte(key, ':')
	if i < 0 || !ValidInstanceID(key[i+1:]) {
		return ""
	}
	return key[i+1:]
}

// InterruptionKind is the kind of a queue event's detail type ("" for
// another).
func InterruptionKind(detailType string) string {
	switch detailType {
	case DetailSpot:
		return InterruptionSpot
	case DetailRebalance:
		return InterruptionRebalance
	}
	return ""
}
