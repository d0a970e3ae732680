package stacks_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestProgressLines(t *testing.T) {
	e := setup(t)
	e.fake.Script("core-r3", cfnfake.Create, cfnfake.CreateRollback(30*time.Second, asg, signalReason, lt)...)
	_, err := e.m.Create(t.Context(), stacks.Spec{Name: "core-r3", Template: []byte(tpl)})
	if err == nil {
		t.Fatal("Create succeeded")
	}
	if strings.Contains(e.out.String(), "\x1b[") {
		t.Error("escape sequences in non-TTY output")
	}
	golden(t, "create_rollback.txt", e.out.String())
}

func TestProgressLinesDeleteMany(t *testing.T) {
	e := setup(t)
	for _, n := range []string{"core-a", "core-bb"} {
		e.fake.Seed(cfnfake.Seed{Name: n, Template: tpl, Resources: []cfnfake.Resource{{LogicalID: "Nodes", Type: "AWS::AutoScaling::AutoScalingGroup"}}})
	}
	if _, err := e.m.DeleteMany(t.Context(), []string{"core-a", "core-bb"}, 1); err != nil {
		t.Fatal(err)
	}
	golden(t, "delete_many.txt", e.out.String())
}

var cursorUp = regexp.MustCompile(`\x1b\[(\d+)A\r\x1b\[J`)

func TestProgressTTY(t *testing.T) {
	e := setup(t, func(o *stacks.Options) { o.TTY, o.Color, o.Width = true, true, 80 })
	e.fake.Script("core-r3", cfnfake.Create, cfnfake.CreateRollback(30*time.Second, asg, signalReason, lt)...)
	if _, err := e.m.Create(t.Context(), stacks.Spec{Name: "core-r3", Template: []byte(tpl)}); err == nil {
		t.Fatal("Create succeeded")
	}
	out := e.out.String()
	ups := cursorUp.FindAllStringSubmatch(out, -1)
	if len(ups) < 10 {
		t.Fatalf("%d redraws, want the block redrawn on every tick:\n%q", len(ups), out)
	}
	// Each redraw moves up exactly over the previous block.
	frames := cursorUp.Split(out, -1)
	for i, up := range ups {
		if n := strings.Count(frames[i], "\n"); up[1] != itoa(n) {
			t.Errorf("redraw %d moves up %s lines over a block of %d", i, up[1], n)
		}
	}
	last := frames[len(frames)-1]
	plain := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(last, "")
	if !strings.HasPrefix(plain, "core-r3  ROLLBACK_COMPLETE  0:5") {
		t.Errorf("final block:\n%s", plain)
	}
	for _, l := range lines(plain) {
		if len([]rune(l)) >= 80 {
			t.Errorf("line wider than the terminal: %q", l)
		}
	}
	if !strings.Contains(out, "\x1b[31mROLLBACK_COMPLETE\x1b[0m") {
		t.Error("failed status not coloured")
	}
	golden(t, "create_rollback_tty_final.txt", plain)
}

func TestProgressTTYShowsFailureReason(t *testing.T) {
	e := setup(t, func(o *stacks.Options) { o.TTY = true })
	e.fake.Script("core", cfnfake.Create, cfnfake.CreateFailedKept(10*time.Second, node, "Instance i-0abc failed to stabilize")...)
	_, _ = e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl), DisableRollback: true})
	frames := cursorUp.Split(e.out.String(), -1)
	if last := frames[len(frames)-1]; !strings.Contains(last, "CREATE_FAILED") || !strings.Contains(last, "Instance i-0abc failed to stabilize") {
		t.Errorf("final block:\n%s", last)
	}
}

func TestProgressTTYManyStacks(t *testing.T) {
	e := setup(t, func(o *stacks.Options) { o.TTY = true })
	var names []string
	for _, n := range []string{"core-a", "core-b", "core-c"} {
		names = append(names, n)
		e.fake.Seed(cfnfake.Seed{Name: n, Template: tpl})
	}
	if _, err := e.m.DeleteMany(t.Context(), names, 2); err != nil {
		t.Fatal(err)
	}
	out := e.out.String()
	if !strings.Contains(out, "waiting") {
		t.Error("the third stack is not shown waiting for its turn")
	}
	frames := cursorUp.Split(out, -1)
	last := frames[len(frames)-1]
	for _, n := range names {
		if !strings.Contains(last, n+"  DELETE_COMPLETE") {
			t.Errorf("final block lacks %s:\n%s", n, last)
		}
	}
}

// Stacks announced together show waiting until their turn; a message said
// meanwhile goes above the block, which is drawn again below it, so every
// redraw still moves up over exactly the block.
func TestProgressTTYExpectAndSay(t *testing.T) {
	e := setup(t, func(o *stacks.Options) { o.TTY = true })
	e.m.Expect([]string{"core-a", "core-b"})
	if !e.m.Say("Uploading node configuration s3://b/k") {
		t.Fatal("Say did not print")
	}
	if _, err := e.m.Create(t.Context(), stacks.Spec{Name: "core-a", Template: []byte(tpl)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Create(t.Context(), stacks.Spec{Name: "core-b", Template: []byte(tpl)}); err != nil {
		t.Fatal(err)
	}
	out := e.out.String()
	ups := cursorUp.FindAllStringSubmatch(out, -1)
	frames := cursorUp.Split(out, -1)
	for i, up := range ups {
		// A message printed above the block is not part of it.
		block := strings.TrimPrefix(frames[i], "Uploading node configuration s3://b/k\n")
		if n := strings.Count(block, "\n"); up[1] != itoa(n) {
			t.Errorf("redraw %d moves up %s lines over a block of %d:\n%q", i, up[1], n, out)
		}
	}
	if !strings.Contains(frames[1], "Uploading node configuration s3://b/k\ncore-a  waiting") {
		t.Errorf("the message is not above the block:\n%q", frames[1])
	}
	last := frames[len(frames)-1]
	if !strings.Contains(last, "core-a  CREATE_COMPLETE") || !strings.Contains(last, "core-b  CREATE_COMPLETE") {
		t.Errorf("final block:\n%s", last)
	}
	// Without progress, Say leaves the printing to the caller.
	quiet := stacks.NewManager(e.fake.Client(), stacks.Options{Clock: e.fake.Clock})
	if quiet.Say("x") {
		t.Error("Say printed without a Progress writer")
	}
}

func TestQuiet(t *testing.T) {
	e := setup(t)
	var buf bytes.Buffer
	m := stacks.NewManager(e.fake.Client(), stacks.Options{Clock: e.fake.Clock})
	if _, err := m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)}); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 || e.out.Len() != 0 {
		t.Error("output without a Progress writer")
	}
}

func itoa(n int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(n)) }

func fmtInt(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return fmtInt(n/10) + string(rune('0'+n%10))
}

func TestProgressTTYBlockIsBounded(t *testing.T) {
	e := setup(t, func(o *stacks.Options) { o.TTY = true })
	var res []cfnfake.Res
	for i := range 60 {
		res = append(res, cfnfake.Res{LogicalID: "Queue" + itoa(i), Type: "AWS::SQS::Queue"})
	}
	e.fake.Script("core", cfnfake.Create, cfnfake.SlowCreate(2*time.Minute, nil, res...)...)
	if _, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl)}); err != nil {
		t.Fatal(err)
	}
	for i, frame := range cursorUp.Split(e.out.String(), -1) {
		if n := strings.Count(frame, "\n"); n > 40 {
			t.Fatalf("frame %d has %d lines, want ≤ 40", i, n)
		}
	}
	folded := 0
	for _, frame := range cursorUp.Split(e.out.String(), -1) {
		if !strings.Contains(frame, "more\n") {
			continue
		}
		folded++
		// Until 1:56 one queue is always being created: it stays
		// visible while completed ones fold.
		head, body, _ := strings.Cut(frame, "\n")
		if strings.HasPrefix(head, "core  CREATE_IN_PROGRESS  ") && head < "core  CREATE_IN_PROGRESS  1:56" && !strings.Contains(body, "CREATE_IN_PROGRESS") {
			t.Fatalf("folded frame lost the resource in progress:\n%s", frame)
		}
	}
	if folded == 0 {
		t.Error("60 resources never folded")
	}
}
