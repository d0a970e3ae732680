package motoserver

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// Of conditional writes of one key racing (If-None-Match: *), exactly one
// succeeds, as in S3: the managers claim the swarm's initialisation that
// way, and moto checked and wrote in two steps, so under load two claims
// both won and two managers initialised two swarms.
func TestConditionalPutsRaceToOneWinner(t *testing.T) {
	ctx, cfg := started(t)
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("claims")}); err != nil {
		t.Fatal(err)
	}
	// The race is lost only when the server's threads are preempted
	// between the check and the write: every core is kept busy meanwhile,
	// as on a loaded CI machine (where two managers won).
	stop := make(chan struct{})
	defer close(stop)
	for i := 0; i < 2*runtime.NumCPU(); i++ {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	const keys, racers = 50, 32
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("control/swarm-init-%d", k)
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for r := 0; r < racers; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := c.PutObject(ctx, &s3.PutObjectInput{
					Bucket: aws.String("claims"), Key: aws.String(key),
					Body: bytes.NewReader([]byte(fmt.Sprint(r))), IfNoneMatch: aws.String("*"),
				})
				var api smithy.APIError
				switch {
				case err == nil:
					mu.Lock()
					won++
					mu.Unlock()
				case errors.As(err, &api) && api.ErrorCode() == "PreconditionFailed":
				default:
					t.Errorf("%s: %v", key, err)
				}
			}()
		}
		wg.Wait()
		if won != 1 {
			t.Fatalf("%s: %d of %d conditional writes succeeded, want exactly 1", key, won, racers)
		}
	}
}
