package stacks

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Off a terminal, re-attaching says once what it waits for: the events
// seen before are not printed again, and silence would read as a hang.
func TestWaitOffTerminalSaysWhatItWaitsFor(t *testing.T) {
	var out bytes.Buffer
	p := newSink(Options{Progress: &out}, realClock{})
	p.begin(&op{name: "core-g", kind: "wait", status: "UPDATE_IN_PROGRESS", start: time.Now()})
	got := strings.Join(strings.Fields(out.String()), " ")
	if want := "core-g 0:00 - AWS::CloudFormation::Stack UPDATE_IN_PROGRESS waiting for it to end"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// Another operation begins silently: its events follow at once.
	out.Reset()
	p.begin(&op{name: "core-h", kind: "update", status: "UPDATE_IN_PROGRESS", start: time.Now()})
	if out.Len() != 0 {
		t.Errorf("an update's begin printed %q", out.String())
	}
}
