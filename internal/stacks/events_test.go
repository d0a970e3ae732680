package stacks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

func TestEventsOldestFirst(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.EventPageSize = 3
	seedGroup(e, "ROLLBACK_COMPLETE", "The following resource(s) failed to create: [Nodes].",
		cfnfake.Resource{LogicalID: "Nodes", Type: "AWS::AutoScaling::AutoScalingGroup", Status: "CREATE_FAILED", Reason: signalReason})
	var got []string
	err := e.m.Events(t.Context(), "core-r3", false, func(evs []stacks.Event) {
		for _, ev := range evs {
			got = append(got, ev.Time.UTC().Format(time.RFC3339)+" "+ev.LogicalID+" "+ev.ResourceType+" "+ev.Status+" "+ev.Reason)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"2024-05-01T09:00:00Z core-r3 AWS::CloudFormation::Stack CREATE_IN_PROGRESS User Initiated",
		"2024-05-01T09:00:01Z Nodes AWS::AutoScaling::AutoScalingGroup CREATE_IN_PROGRESS ",
		"2024-05-01T09:00:02Z Nodes AWS::AutoScaling::AutoScalingGroup CREATE_COMPLETE ",
		"2024-05-01T09:00:03Z core-r3 AWS::CloudFormation::Stack CREATE_COMPLETE ",
		"2024-05-01T09:00:04Z Nodes AWS::AutoScaling::AutoScalingGroup CREATE_FAILED " + signalReason,
		"2024-05-01T09:00:05Z core-r3 AWS::CloudFormation::Stack ROLLBACK_COMPLETE The following resource(s) failed to create: [Nodes].",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := e.m.Events(t.Context(), "nope", false, func([]stacks.Event) {}); !errors.Is(err, stacks.ErrNotFound) {
		t.Errorf("Events(missing) = %v", err)
	}
}

func TestEventsFollow(t *testing.T) {
	fake := cfnfake.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fake.Script("core", cfnfake.Create, cfnfake.SlowCreate(time.Minute, nil, bucket, node)...)
	m := stacks.NewManager(fake.Client(), stacks.Options{RunID: runID, Clock: &cancelAfter{Clock: fake.Clock, n: 8, cancel: cancel}})
	if _, err := m.Create(ctx, stacks.Spec{Name: "core", Template: []byte(tpl)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create = %v", err)
	}
	m2 := stacks.NewManager(fake.Client(), stacks.Options{RunID: "run-2", Clock: fake.Clock})
	var got []stacks.Event
	if err := m2.Events(t.Context(), "core", true, func(evs []stacks.Event) { got = append(got, evs...) }); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ev := range got {
		if seen[ev.ID] {
			t.Errorf("event %s emitted twice", ev.ID)
		}
		seen[ev.ID] = true
	}
	if n := len(got); n != 1+3*2+1 {
		t.Errorf("%d events emitted, want each once: %+v", n, got)
	}
	if last := got[len(got)-1]; !last.IsStack() || last.Status != "CREATE_COMPLETE" {
		t.Errorf("last event %+v", last)
	}
	// Following a finished stack returns at once.
	before := fake.Calls("")
	if err := m2.Events(t.Context(), "core", true, func([]stacks.Event) {}); err != nil {
		t.Fatal(err)
	}
	if n := fake.Calls("") - before; n != 2 {
		t.Errorf("%d calls to follow a finished stack, want 2", n)
	}
}

func TestEventsFollowCancelled(t *testing.T) {
	fake := cfnfake.New(t)
	fake.Script("core", cfnfake.Create, cfnfake.SlowCreate(time.Hour, nil, bucket)...)
	cctx, ccancel := context.WithCancel(t.Context())
	m := stacks.NewManager(fake.Client(), stacks.Options{RunID: runID, Clock: &cancelAfter{Clock: fake.Clock, n: 2, cancel: ccancel}})
	if _, err := m.Create(cctx, stacks.Spec{Name: "core", Template: []byte(tpl)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create = %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	m2 := stacks.NewManager(fake.Client(), stacks.Options{RunID: "run-2", Clock: &cancelAfter{Clock: fake.Clock, n: 5, cancel: cancel}})
	err := m2.Events(ctx, "core", true, func([]stacks.Event) {})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `following events of stack "core"`) {
		t.Errorf("Events = %v", err)
	}
}
