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
