package motoserver

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Listing a bucket's object versions while objects come and go answers
// with what the bucket holds, as S3 does, never an error. clusterctl lists
// versions (its lease, a request's answers, a bucket emptied at deletion)
// while the nodes write and delete; moto copied its key list, then read
// each key's versions afresh, and a key deleted in between failed the
// listing (a 500 with a TypeError, seen once in a whole run, where the
// SDK's retry hid it).
func TestListVersionsWhileKeysGo(t *testing.T) {
	ctx, cfg := started(t)
	// No retry: a failed listing must show, not be retried away.
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true; o.RetryMaxAttempts = 1 })
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("churn")}); err != nil {
		t.Fatal(err)
	}
	// Many keys that stay make each listing long (moto copies every
	// version), and the churning keys are deleted in the middle of it.
	const staying = 200
	var fill sync.WaitGroup
	for w := 0; w < 8; w++ {
		fill.Add(1)
		go func() {
			defer fill.Done()
			for i := w; i < staying; i += 8 {
				if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("churn"), Key: aws.String(fmt.Sprintf("stay/%04d", i)), Body: bytes.NewReader([]byte("x"))}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	fill.Wait()
	stop := make(chan struct{})
	var writers sync.WaitGroup
	for w := 0; w < runtime.NumCPU(); w++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := aws.String(fmt.Sprintf("k/%d-%d", w, i%20))
				c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("churn"), Key: key, Body: bytes.NewReader([]byte("x"))})
				c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("churn"), Key: key})
			}
		}()
	}
	const listings = 10
	failed := 0
	for i := 0; i < listings; i++ {
		out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("churn")})
		if err != nil {
			failed++
			if failed == 1 {
				t.Errorf("listing %d: %v", i, err)
			}
			continue
		}
		stayed := 0
		for _, v := range out.Versions {
			if strings.HasPrefix(aws.ToString(v.Key), "stay/") {
				stayed++
			}
		}
		if stayed != staying {
			t.Errorf("listing %d: %d of the %d keys that stay", i, stayed, staying)
		}
	}
	close(stop)
	writers.Wait()
	if failed > 0 {
		t.Errorf("%d of %d listings failed", failed, listings)
	}
}
