package awsn

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwltypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
)

// LogsAPI is what shipping the node's lines needs of CloudWatch Logs.
type LogsAPI interface {
	CreateLogStream(ctx context.Context, in *cloudwatchlogs.CreateLogStreamInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.CreateLogStreamOutput, error)
	PutLogEvents(ctx context.Context, in *cloudwatchlogs.PutLogEventsInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.PutLogEventsOutput, error)
}

// Batches of the node's lines, as the agents' shell service sends its own:
// every 5 s at most, or 50 lines; a call bounded to 10 s.
const (
	ShipEvery   = 5 * time.Second
	ShipLines   = 50
	shipTimeout = 10 * time.Second
	// shipQueue bounds the lines waiting: beyond it, lines are dropped
	// (the journal has them all).
	shipQueue = 1000
	// maxMessage is below CloudWatch's 256 KiB an event, with room for
	// its overhead.
	maxMessage = 200 << 10
	// maxBatch is below CloudWatch's 1 MiB a call: a batch this large is
	// sent at once.
	maxBatch = 900 << 10
)

// Shipper sends the node's own lines to its stream of the cluster's log
// group (names.LogStreamNode + instance id) in batches. Log never waits:
// a line that finds the queue full is dropped, and a batch CloudWatch does
// not take is dropped too; the journal keeps every line.
type Shipper struct {
	API           LogsAPI
	Group, Stream string
	Now           func() time.Time // time.Now when nil
	// Every and Lines: a batch is sent Every after its first line, or
	// once it has Lines (ShipEvery and ShipLines when zero).
	Every time.Duration
	Lines int

	lines   chan cwltypes.InputLogEvent
	dropped atomic.Int64
}

// NewShipper returns a shipper of the lines to stream of group.
func NewShipper(api LogsAPI, group, stream string) *Shipper {
	return &Shipper{API: api, Group: group, Stream: stream, lines: make(chan cwltypes.InputLogEvent, shipQueue)}
}

// Log queues a line, stamped now; never blocks.
func (s *Shipper) Log(line string) {
	if len(line) > maxMessage {
		line = line[:maxMessage]
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	select {
	case s.lines <- cwltypes.InputLogEvent{Message: aws.String(line), Timestamp: aws.Int64(now().UnixMilli())}:
	default:
		s.dropped.Add(1)
	}
}

// Dropped counts the lines and events not shipped.
func (s *Shipper) Dropped() int64 { return s.dropped.Load() }

// Run ships the queued lines until ctx ends, then what is left within
// flush (a last batch at exit).
func (s *Shipper) Run(ctx context.Context, flush time.Duration) {
	every, max := s.Every, s.Lines
	if every <= 0 {
		every = ShipEvery
	}
	if max <= 0 {
		max = ShipLines
	}
	// The stream may exist (the node's earlier services): an error here
	// shows in the puts.
	cctx, cancel := context.WithTimeout(ctx, shipTimeout)
	s.API.CreateLogStream(cctx, &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(s.Group), LogStreamName: aws.String(s.Stream)})
	cancel()
	var batch []cwltypes.InputLogEvent
	var due <-chan time.Time
	size := 0
	for {
		select {
		case e := <-s.lines:
			if batch == nil {
				due = time.After(every)
			}
			batch = append(batch, e)
			size += len(*e.Message) + 26 // CloudWatch's count of an event
			if len(batch) < max && size < maxBatch {
				continue
			}
		case <-due:
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flush)
			defer cancel()
			for {
				select {
				case e := <-s.lines:
					batch = append(batch, e)
					if len(batch) == max || len(batch) == shipQueue {
						s.put(fctx, batch)
						batch = nil
					}
					continue
				default:
				}
				break
			}
			s.put(fctx, batch)
			return
		}
		s.put(ctx, batch)
		batch, due, size = nil, nil, 0
	}
}

// put sends a batch, dropping it when CloudWatch does not take it.
func (s *Shipper) put(ctx context.Context, batch []cwltypes.InputLogEvent) {
	if len(batch) == 0 {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, shipTimeout)
	defer cancel()
	_, err := s.API.PutLogEvents(pctx, &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(s.Group), LogStreamName: aws.String(s.Stream), LogEvents: batch})
	if err != nil {
		s.dropped.Add(int64(len(batch)))
	}
}
