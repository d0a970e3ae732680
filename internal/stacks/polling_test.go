package stacks_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// checkLatency asserts that the operation's end was noticed within 2s of
// the fake reaching it, at ≤ 1 read per second.
func checkLatency(t *testing.T, f *cfnfake.Server, start, final time.Time, maxLag time.Duration) {
	t.Helper()
	noticed := f.Clock.Now()
	if lag := noticed.Sub(final); lag < 0 || lag > maxLag {
		t.Errorf("final state noticed %v after it was reached, want ≤ %v", lag, maxLag)
	}
	// Polling starts fast (250ms, 500ms, 1s), so allow a few extra reads
	// in the first seconds, and the final confirmation.
	elapsed := noticed.Sub(start)
	if reads := readsBetween(f, start, noticed); float64(len(reads)) > elapsed.Seconds()+3 {
		t.Errorf("%d reads in %v, want ≤ one per second (+3)", len(reads), elapsed)
	}
	if elapsed > 10*time.Second {
		steady := readsBetween(f, start.Add(2*time.Second), noticed)
		if rate := float64(len(steady)) / (elapsed - 2*time.Second).Seconds(); rate > 1.0 {
			t.Errorf("%d reads in %v after the first 2s = %.2f/s, want ≤ 1/s", len(steady), elapsed-2*time.Second, rate)
		}
	}
}

func TestDetectionLatencyCreate(t *testing.T) {
	for total := 5 * time.Second; total < 65*time.Second; total += 3*time.Second + 170*time.Millisecond {
		t.Run(total.String(), func(t *testing.T) {
			e := setup(t, quietOpts)
			e.fake.Script("core", cfnfake.Create, cfnfake.SlowCreate(total, nil, bucket, node)...)
			start := e.fake.Clock.Now()
			if _, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)}); err != nil {
				t.Fatal(err)
			}
			checkLatency(t, e.fake, start, start.Add(total), 2*time.Second)
		})
	}
}

func TestDetectionLatencyUpdateAndDelete(t *testing.T) {
	e := setup(t, quietOpts)
	seedGroup(e, "", "", groupResources...)
	const upd = 93*time.Second + 400*time.Millisecond
	e.fake.Script("core-r3", cfnfake.Update,
		cfnfake.Step{Status: "UPDATE_IN_PROGRESS", Reason: "User Initiated"},
		cfnfake.Step{At: 10 * time.Second, Events: []cfnfake.Ev{{LogicalID: "Nodes", Status: "UPDATE_IN_PROGRESS"}}},
		cfnfake.Step{At: 90 * time.Second, Events: []cfnfake.Ev{{LogicalID: "Nodes", Status: "UPDATE_COMPLETE"}}},
		cfnfake.Step{At: 91 * time.Second, Status: "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS"},
		cfnfake.Step{At: upd, Status: "UPDATE_COMPLETE"})
	plan, err := e.m.Plan(t.Context(), stacks.Spec{Name: "core-r3", Template: []byte(tpl + " ")})
	if err != nil {
		t.Fatal(err)
	}
	start := e.fake.Clock.Now()
	if _, err := e.m.Apply(t.Context(), plan); err != nil {
		t.Fatal(err)
	}
	checkLatency(t, e.fake, start, start.Add(upd), 2*time.Second)

	const del = 41*time.Second + 900*time.Millisecond
	e.fake.Script("core-r3", cfnfake.Delete,
		cfnfake.Step{Status: "DELETE_IN_PROGRESS", Reason: "User Initiated"},
		cfnfake.Step{At: del, Status: "DELETE_COMPLETE"})
	start = e.fake.Clock.Now()
	if err := e.m.Delete(t.Context(), "core-r3"); err != nil {
		t.Fatal(err)
	}
	checkLatency(t, e.fake, start, start.Add(del), 2*time.Second)
}

func TestPollingSchedule(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.Script("core", cfnfake.Create, cfnfake.SlowCreate(2*time.Minute, nil, bucket)...)
	if _, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)}); err != nil {
		t.Fatal(err)
	}
	waits := e.fake.Clock.Waits()
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}
	for i, w := range want {
		if waits[i] != w {
			t.Errorf("wait %d = %v, want %v (fast first)", i, waits[i], w)
		}
	}
	for i, w := range waits {
		if w > 1500*time.Millisecond {
			t.Errorf("wait %d = %v, want ≤ 1.5s", i, w)
		}
	}
	// One call per tick: the extra reads are the final confirmation and
	// the last events.
	reads := e.fake.Calls("DescribeStacks") + e.fake.Calls("DescribeStackEvents")
	if reads > len(waits)+2 {
		t.Errorf("%d reads for %d ticks", reads, len(waits))
	}
}

// moto writes stack events only: the logic must not need resource events.
func TestStackEventsOnly(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.Script("core", cfnfake.Create,
		cfnfake.Step{Status: "CREATE_IN_PROGRESS", Reason: "User Initiated"},
		cfnfake.Step{At: 20 * time.Second, Status: "ROLLBACK_IN_PROGRESS", Reason: "The following resource(s) failed to create: [Node]."},
		cfnfake.Step{At: 30 * time.Second, Status: "ROLLBACK_COMPLETE"})
	start := e.fake.Clock.Now()
	_, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)})
	var oe *stacks.OperationError
	if !asOp(err, &oe) || oe.RootCause == nil || oe.RootCause.Reason != "The following resource(s) failed to create: [Node]." {
		t.Fatalf("err = %v", err)
	}
	checkLatency(t, e.fake, start, start.Add(30*time.Second), 2*time.Second)
}

// A final status without its event is still noticed, through the
// periodic DescribeStacks.
func TestFinalStatusWithoutEvent(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.Script("core", cfnfake.Create,
		cfnfake.Step{Status: "CREATE_IN_PROGRESS", Reason: "User Initiated"},
		cfnfake.Step{At: 17 * time.Second, Status: "CREATE_COMPLETE", Silent: true})
	start := e.fake.Clock.Now()
	st, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)})
	if err != nil || st.Status != "CREATE_COMPLETE" {
		t.Fatalf("Create = %+v, %v", st, err)
	}
	checkLatency(t, e.fake, start, start.Add(17*time.Second), 6*time.Second)
}

// Scripts can advance per read instead of per second.
func TestAdvancePerRead(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.Script("core", cfnfake.Create,
		cfnfake.Step{Status: "CREATE_IN_PROGRESS", Reason: "User Initiated"},
		cfnfake.Step{AfterReads: 4, Events: []cfnfake.Ev{{LogicalID: "Bucket", Type: "AWS::S3::Bucket", Status: "CREATE_COMPLETE"}}},
		cfnfake.Step{AfterReads: 7, Status: "CREATE_COMPLETE"})
	if _, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)}); err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Calls("DescribeStackEvents") + e.fake.Calls("DescribeStacks"); n < 7 || n > 9 {
		t.Errorf("%d reads, want the 7th read to see the end", n)
	}
}

func TestEventPagination(t *testing.T) {
	e := setup(t, quietOpts)
	e.fake.EventPageSize = 2
	var res []cfnfake.Res
	for i := range 9 {
		res = append(res, cfnfake.Res{LogicalID: fmt.Sprintf("R%d", i), Type: "AWS::SQS::Queue"})
	}
	e.fake.Script("core", cfnfake.Create, cfnfake.SlowCreate(30*time.Second, nil, res...)...)
	var buf = &progressBuf{}
	m := stacks.NewManager(e.fake.Client(), stacks.Options{RunID: runID, Clock: e.fake.Clock, Progress: buf})
	if _, err := m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)}); err != nil {
		t.Fatal(err)
	}
	// Every event printed once: 1 + 3 per resource + 1.
	if got, want := len(lines(buf.String())), 1+3*9+1; got != want {
		t.Errorf("%d progress lines, want %d:\n%s", got, want, buf)
	}
}

func asOp(err error, target **stacks.OperationError) bool {
	oe, ok := err.(*stacks.OperationError)
	*target = oe
	return ok
}
