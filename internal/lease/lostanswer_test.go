package lease

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// lostAnswers is S3 as the SDK meets it when a put's answer is lost after
// S3 wrote (a connection cut): the put is sent again, and the second
// attempt, under the same condition, meets the first's object.
type lostAnswers struct {
	S3API
	lose atomic.Bool
}

func (l *lostAnswers) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if !l.lose.Load() {
		return l.S3API.PutObject(ctx, in, opts...)
	}
	body, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	first, second := *in, *in
	first.Body, second.Body = bytes.NewReader(body), bytes.NewReader(body)
	if _, err := l.S3API.PutObject(ctx, &first, opts...); err != nil {
		return nil, err
	}
	return l.S3API.PutObject(ctx, &second, opts...)
}

// A run whose own write S3 made, the answer lost, holds the lease: it is
// neither refused by itself nor told that another run took it over.
func TestOwnWriteWithItsAnswerLost(t *testing.T) {
	bucket := newBucket(t, true)
	api := &lostAnswers{S3API: s3c}
	api.lose.Store(true)
	m := manager(bucket, "upgrade -j core")
	m.api = api
	l, err := m.Acquire(t.Context(), Group("g"))
	if err != nil {
		t.Fatalf("Acquire, its put's answer lost: %v", err)
	}
	if err := l.Renew(t.Context()); err != nil {
		t.Fatalf("Renew, its put's answer lost: %v", err)
	}
	st, err := m.Current(t.Context(), Group("g"))
	if err != nil || st == nil || st.Record.ID != l.Record().ID || !st.Record.Renewed.Equal(l.Record().Renewed) {
		t.Fatalf("the bucket holds %+v, %v; want the renewed lease", st, err)
	}
	api.lose.Store(false)
	if err := l.Renew(t.Context()); err != nil {
		t.Fatalf("Renew after: %v (the lease's ETag is not the one in the bucket)", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st, err := m.Current(t.Context(), Group("g")); err != nil || st != nil {
		t.Errorf("after Release: %+v, %v", st, err)
	}
}
