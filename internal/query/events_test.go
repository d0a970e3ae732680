package query

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/stacks"
)

var sampleEvents = []stacks.Event{
	{ID: "e1", StackName: "core-r3", LogicalID: "core-r3", ResourceType: "AWS::CloudFormation::Stack", Status: "CREATE_IN_PROGRESS", Reason: "User Initiated", Token: "run-1-create", Time: time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)},
	{ID: "e2", StackName: "core-r3", LogicalID: "Nodes", PhysicalID: "core-r3-Nodes-1", ResourceType: "AWS::AutoScaling::AutoScalingGroup", Status: "CREATE_FAILED", Reason: "Received 0 SUCCESS signals\n out of 1", Time: time.Date(2024, 5, 1, 9, 0, 4, 0, time.UTC)},
	{ID: "e3", StackName: "core-r3", LogicalID: "core-r3", ResourceType: "AWS::CloudFormation::Stack", Status: "ROLLBACK_COMPLETE", Time: time.Date(2024, 5, 1, 9, 0, 5, 0, time.UTC)},
}

func TestEventLine(t *testing.T) {
	want := []string{
		"2024-05-01T09:00:00Z  core-r3                   AWS::CloudFormation::Stack          CREATE_IN_PROGRESS    User Initiated",
		"2024-05-01T09:00:04Z  Nodes                     AWS::AutoScaling::AutoScalingGroup  CREATE_FAILED         Received 0 SUCCESS signals out of 1",
		"2024-05-01T09:00:05Z  core-r3                   AWS::CloudFormation::Stack          ROLLBACK_COMPLETE",
	}
	for i, e := range sampleEvents {
		if got := EventLine(e, false); got != want[i] {
			t.Errorf("EventLine:\n%q\nwant\n%q", got, want[i])
		}
	}
	if got := EventLine(sampleEvents[1], true); !strings.Contains(got, "\x1b[31mCREATE_FAILED\x1b[0m") {
		t.Errorf("coloured line %q", got)
	}
}

func TestEventsJSON(t *testing.T) {
	out, err := NewOutput("json", "")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := out.Write(&buf, EventsFrom(sampleEvents), nil); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, buf.String())
	}
	if len(got) != 3 {
		t.Fatalf("%d events, want 3", len(got))
	}
	first := got[0]
	for k, v := range map[string]any{"time": "2024-05-01T09:00:00Z", "stack": "core-r3", "logicalId": "core-r3", "resourceType": "AWS::CloudFormation::Stack",
		"status": "CREATE_IN_PROGRESS", "reason": "User Initiated", "clientRequestToken": "run-1-create", "eventId": "e1", "physicalId": ""} {
		if first[k] != v {
			t.Errorf("%s = %v, want %v", k, first[k], v)
		}
	}
	buf.Reset()
	if err := out.Write(&buf, EventsFrom(nil), nil); err != nil || strings.TrimSpace(buf.String()) != "[]" {
		t.Errorf("no events = %q, %v; want []", buf.String(), err)
	}
}
