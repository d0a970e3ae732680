package query

import (
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/stacks"
)

// Event is one stack event. The JSON keys are a public interface.
type Event struct {
	Time               time.Time `json:"time"`
	Stack              string    `json:"stack"`
	LogicalID          string    `json:"logicalId"`
	PhysicalID         string    `json:"physicalId"`
	ResourceType       string    `json:"resourceType"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason"`
	ClientRequestToken string    `json:"clientRequestToken"`
	EventID            string    `json:"eventId"`
}

// EventsFrom converts stack events, keeping their order; never nil, so an
// empty list prints as [].
func EventsFrom(evs []stacks.Event) []Event {
	out := make([]Event, 0, len(evs))
	for _, e := range evs {
		out = append(out, Event{
			Time: e.Time.UTC(), Stack: e.StackName, LogicalID: e.LogicalID, PhysicalID: e.PhysicalID,
			ResourceType: e.ResourceType, Status: e.Status, Reason: e.Reason, ClientRequestToken: e.Token, EventID: e.ID,
		})
	}
	return out
}

// Column widths of the table form: wide enough for the usual logical ids,
// types and statuses, fixed so that followed events line up as they come.
const (
	eventLogicalWidth = 24
	eventTypeWidth    = 34
	eventStatusWidth  = 20
)

// EventLine is the table form of one event, for printing as it arrives:
//
//	2024-05-01T10:00:03Z  Bucket                    AWS::S3::Bucket                     CREATE_COMPLETE
func EventLine(e stacks.Event, color bool) string {
	var b strings.Builder
	b.WriteString(e.Time.UTC().Format(time.RFC3339))
	b.WriteString("  " + padRight(e.LogicalID, eventLogicalWidth))
	b.WriteString("  " + padRight(e.ResourceType, eventTypeWidth))
	b.WriteString("  " + stacks.PaintStatus(e.Status, color))
	if e.Reason != "" {
		b.WriteString(strings.Repeat(" ", max(0, eventStatusWidth-len(e.Status))))
		b.WriteString("  " + oneLine(e.Reason))
	}
	return b.String()
}

func padRight(s string, w int) string {
	return s + strings.Repeat(" ", max(0, w-len(s)))
}
