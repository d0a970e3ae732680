package awsn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
)

// fakeLogs is CloudWatch Logs: the batches it took, refusing some, or
// hanging until the call's context ends.
type fakeLogs struct {
	mu      sync.Mutex
	streams []string
	batches [][]string
	refuse  int // the next calls refused
	hang    bool
	put     chan struct{}
}

func (f *fakeLogs) CreateLogStream(_ context.Context, in *cloudwatchlogs.CreateLogStreamInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.CreateLogStreamOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streams = append(f.streams, aws.ToString(in.LogGroupName)+" "+aws.ToString(in.LogStreamName))
	return &cloudwatchlogs.CreateLogStreamOutput{}, nil
}

func (f *fakeLogs) PutLogEvents(ctx context.Context, in *cloudwatchlogs.PutLogEventsInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.PutLogEventsOutput, error) {
	defer func() {
		select {
		case f.put <- struct{}{}:
		default:
		}
	}()
	f.mu.Lock()
	hang := f.hang
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse > 0 {
		f.refuse--
		return nil, errors.New("ThrottlingException")
	}
	var b []string
	last := int64(0)
	for _, e := range in.LogEvents {
		if *e.Timestamp < last {
			return nil, errors.New("InvalidParameterException: not in chronological order")
		}
		last = *e.Timestamp
		b = append(b, *e.Message)
	}
	f.batches = append(f.batches, b)
	return &cloudwatchlogs.PutLogEventsOutput{}, nil
}

func (f *fakeLogs) got() ([][]string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.batches...), f.streams
}

// Lines go in batches of 50, or what came within the interval; a batch
// refused is dropped and the next ones go; what is left is sent at exit.
func TestShipperBatches(t *testing.T) {
	f := &fakeLogs{put: make(chan struct{}, 100), refuse: 1}
	s := NewShipper(f, "/clusterctl/core", "node/i-1")
	s.Every = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx, time.Second); close(done) }()
	for i := 0; i < 3; i++ {
		s.Log("refused " + fmt.Sprint(i))
	}
	<-f.put // the first batch, after the interval: refused
	for i := 0; i < 53; i++ {
		s.Log(fmt.Sprint(i))
	}
	<-f.put // 50 at once
	<-f.put // the 3 left, after the interval
	s.Log("last")
	cancel()
	<-done
	batches, streams := f.got()
	if len(streams) != 1 || streams[0] != "/clusterctl/core node/i-1" {
		t.Errorf("streams %v", streams)
	}
	if len(batches) != 3 || len(batches[0]) != 50 || batches[0][0] != "0" || len(batches[1]) != 3 || batches[1][2] != "52" ||
		len(batches[2]) != 1 || batches[2][0] != "last" {
		t.Errorf("batches %v", batches)
	}
	if s.Dropped() != 3 {
		t.Errorf("dropped %d, want the refused batch's 3", s.Dropped())
	}
}

// A CloudWatch that does not answer never holds a line up: Log returns
// (this test would hang otherwise), lines beyond the queue are dropped,
// and Run ends at its flush bound.
func TestShipperNeverWaits(t *testing.T) {
	f := &fakeLogs{put: make(chan struct{}, 100), hang: true}
	s := NewShipper(f, "/clusterctl/core", "node/i-1")
	s.Lines = 1
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx, 10*time.Millisecond); close(done) }()
	for i := 0; i < 3*shipQueue; i++ {
		s.Log("line")
	}
	if s.Dropped() == 0 {
		t.Error("no line dropped with the queue full")
	}
	cancel()
	<-done
	if batches, _ := f.got(); len(batches) != 0 {
		t.Errorf("batches %v", batches)
	}
}
