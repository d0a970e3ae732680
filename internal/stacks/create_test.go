package stacks_test

import (
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

func TestCreateSlowDetectsCompletionQuickly(t *testing.T) {
	e := setup(t)
	const total = 47*time.Second + 300*time.Millisecond
	e.fake.Script("core", cfnfake.Create, cfnfake.SlowCreate(total, map[string]string{"BucketName": "core-bucket"}, bucket, node)...)
	start := e.fake.Clock.Now()
	st, err := e.m.Create(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl), Tags: coreTags("core")})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if st.Status != "CREATE_COMPLETE" || st.Outputs["BucketName"] != "core-bucket" {
		t.Fatalf("stack = %+v", st)
	}
	done := start.Add(total)
	noticed := e.fake.Clock.Now()
	if lag := noticed.Sub(done); lag < 0 || lag > 2*time.Second {
		t.Errorf("final state noticed %v after CloudFormation reached it, want ≤ 2s", lag)
	}
	reads := readsBetween(e.fake, start, noticed)
	rate := float64(len(reads)) / noticed.Sub(start).Seconds()
	if rate > 1.0 {
		t.Errorf("%d reads in %v = %.2f/s, want ≤ 1/s", len(reads), noticed.Sub(start), rate)
	}
	t.Logf("%d reads in %v (%.2f/s), noticed after %v", len(reads), noticed.Sub(start), rate, noticed.Sub(done))
	t.Log("\n" + e.out.String())
}

// CreateStarted hands over the stack's id once CloudFormation has accepted
// the creation, while it is still in progress, before waiting for it.
func TestCreateStartedCallsBackBeforeWaiting(t *testing.T) {
	e := setup(t)
	e.fake.Script("core", cfnfake.Create, cfnfake.SlowCreate(30*time.Second, nil, bucket, node)...)
	var id, status string
	st, err := e.m.CreateStarted(t.Context(), stacks.Spec{Name: "core", Template: []byte(tpl), Tags: coreTags("core")}, func(got string) {
		id, status = got, e.fake.Status("core")
	})
	if err != nil || st.Status != "CREATE_COMPLETE" {
		t.Fatalf("CreateStarted: %v %+v", err, st)
	}
	if id == "" || id != st.ID || status != "CREATE_IN_PROGRESS" {
		t.Errorf("called back with %q while the stack was %s; the stack is %q", id, status, st.ID)
	}
}
