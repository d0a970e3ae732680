package logs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
)

// fakeLogs plays CloudWatch Logs where moto does not: pages of two events,
// the stream prefix honoured, and events that arrive late (with a
// timestamp older than events already returned).
type fakeLogs struct {
	mu     sync.Mutex
	events []types.FilteredLogEvent // in arrival order
	calls  int
	// starts are the StartTime of each FilterLogEvents call (-1: none),
	// returned how many events were handed out, describes how many pages
	// of streams.
	starts    []int64
	returned  int
	describes int
	// ignorePrefix plays moto, which ignores logStreamNamePrefix.
	ignorePrefix bool
}

func (f *fakeLogs) put(stream string, ms int64, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, types.FilteredLogEvent{LogStreamName: aws.String(stream), Timestamp: aws.Int64(ms),
		Message: aws.String(msg), EventId: aws.String(strconv.Itoa(len(f.events)))})
}

func (f *fakeLogs) FilterLogEvents(_ context.Context, in *cloudwatchlogs.FilterLogEventsInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if in.NextToken == nil {
		f.starts = append(f.starts, aws.ToInt64(in.StartTime))
		if in.StartTime == nil {
			f.starts[len(f.starts)-1] = -1
		}
	}
	var match []types.FilteredLogEvent
	for _, e := range f.events {
		ts := aws.ToInt64(e.Timestamp)
		if in.StartTime != nil && ts < *in.StartTime || in.EndTime != nil && ts > *in.EndTime {
			continue
		}
		if p := aws.ToString(in.LogStreamNamePrefix); !f.ignorePrefix && p != "" && (len(aws.ToString(e.LogStreamName)) < len(p) || aws.ToString(e.LogStreamName)[:len(p)] != p) {
			continue
		}
		if len(in.LogStreamNames) > 0 && !slices.Contains(in.LogStreamNames, aws.ToString(e.LogStreamName)) {
			continue
		}
		match = append(match, e)
	}
	slices.SortStableFunc(match, func(a, b types.FilteredLogEvent) int { return int(aws.ToInt64(a.Timestamp) - aws.ToInt64(b.Timestamp)) })
	start := 0
	if in.NextToken != nil {
		start, _ = strconv.Atoi(*in.NextToken)
	}
	end := min(start+2, len(match))
	out := &cloudwatchlogs.FilterLogEventsOutput{Events: match[start:end]}
	f.returned += end - start
	if end < len(match) {
		out.NextToken = aws.String(strconv.Itoa(end))
	}
	return out, nil
}

func (f *fakeLogs) DescribeLogStreams(context.Context, *cloudwatchlogs.DescribeLogStreamsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogStreamsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.describes++
	seen := map[string]bool{}
	var out cloudwatchlogs.DescribeLogStreamsOutput
	for _, e := range f.events {
		if name := aws.ToString(e.LogStreamName); !seen[name] {
			seen[name] = true
			out.LogStreams = append(out.LogStreams, types.LogStream{LogStreamName: aws.String(name)})
		}
	}
	return &out, nil
}

// Every page is read, the service's streams only, in time order.
func TestReadPagesInOrder(t *testing.T) {
	f := &fakeLogs{}
	base := time.Now().Add(-time.Hour).UnixMilli()
	for i := range 5 {
		f.put(fmt.Sprintf("service/web/web.%d.t@i-0aaaaaaaa", i%2+1), base+int64(10*(5-i)), fmt.Sprint("web ", 5-i))
	}
	f.put("service/webapi/webapi.1.t@i-0aaaaaaaa", base, "not web")
	f.put("node/i-0aaaaaaaa", base, "a decision")
	var got []string
	err := Read(context.Background(), f, Request{Group: "/clusterctl/c", Service: "web"}, func(e Event) error {
		got = append(got, e.Message)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"web 1", "web 2", "web 3", "web 4", "web 5"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	got = nil
	if err := Read(context.Background(), f, Request{Group: "/clusterctl/c", Node: "i-0aaaaaaaa", Tail: 2}, func(e Event) error {
		got = append(got, e.Source()+" "+e.Message)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"web.2.t@i-0aaaaaaaa web 4", "web.1.t@i-0aaaaaaaa web 5"}; !slices.Equal(got, want) {
		t.Errorf("--node --tail 2: got %q, want %q", got, want)
	}
}

// Following: a new event and one that arrives late, with a timestamp
// before the newest printed, are each printed once; nothing twice.
func TestFollowNoGapNoDuplicate(t *testing.T) {
	f := &fakeLogs{}
	now := time.Now().UnixMilli()
	f.put("service/web/web.1.t@i-0aaaaaaaa", now-5000, "first")
	f.put("service/web/web.1.t@i-0aaaaaaaa", now-4000, "second")
	f.put("service/web/web.1.t@i-0aaaaaaaa", now-3000, "third")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines := make(chan string, 20)
	done := make(chan error, 1)
	go func() {
		done <- Read(ctx, f, Request{Group: "/clusterctl/c", Service: "web", Follow: true, PollMin: 5 * time.Millisecond, PollMax: 20 * time.Millisecond},
			func(e Event) error {
				lines <- e.Message
				return nil
			})
	}()
	var got []string
	wait := func(n int) {
		t.Helper()
		for len(got) < n {
			select {
			case l := <-lines:
				got = append(got, l)
			case <-time.After(5 * time.Second):
				t.Fatalf("got %q, waiting for %d lines", got, n)
			}
		}
	}
	wait(3)
	f.put("service/web/web.2.t@i-0aaaaaaaa", now-1000, "new")
	wait(4)
	// Sent before "new" was, received after: CloudWatch has it late.
	f.put("service/web/web.2.t@i-0aaaaaaaa", now-2000, "late")
	wait(5)
	time.Sleep(100 * time.Millisecond) // several polls
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Read ended with %v, want context.Canceled", err)
	}
	close(lines)
	for l := range lines {
		got = append(got, l)
	}
	if want := []string{"first", "second", "third", "new", "late"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// --tail without --since reads back from the end only as far as it needs:
// not the whole retention.
func TestTailReadsOnlyWhatItPrints(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name  string
		req   Request
		want  []string
		reads int // events handed out, at most
	}{
		{"tail 3", Request{Tail: 3}, []string{"ev 2", "ev 1", "ev 0"}, 12},
		{"tail 3 of a node", Request{Tail: 3, Node: "i-0aaaaaaaa"}, []string{"ev 2", "ev 1", "ev 0"}, 12},
		{"tail 3 since 2h", Request{Tail: 3, Since: now.Add(-150 * time.Minute)}, []string{"ev 2", "ev 1", "ev 0"}, 12},
		{"tail 5 since 150m: only 3 in range", Request{Tail: 5, Since: now.Add(-150 * time.Minute)}, []string{"ev 2", "ev 1", "ev 0"}, 12},
		{"tail 2 of the first ones", Request{Tail: 2, Until: now.Add(-998 * time.Hour)}, []string{"ev 999", "ev 998"}, 12},
		{"tail over everything", Request{Tail: 2000}, nil, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeLogs{}
			// An event an hour, for a thousand hours.
			for i := 999; i >= 0; i-- {
				f.put("service/web/web.1.t@i-0aaaaaaaa", now.Add(-time.Duration(i)*time.Hour-30*time.Minute).UnixMilli(), fmt.Sprint("ev ", i))
			}
			req := tc.req
			req.Group, req.Now = "/clusterctl/c", func() time.Time { return now }
			var got []string
			if err := Read(context.Background(), f, req, func(e Event) error { got = append(got, e.Message); return nil }); err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if len(got) != 1000 || got[0] != "ev 999" || got[999] != "ev 0" {
					t.Errorf("got %d events (%q...)", len(got), got[:min(3, len(got))])
				}
			} else if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if f.returned > tc.reads {
				t.Errorf("%d events read to print %d", f.returned, len(got))
			}
		})
	}
}

// Following, a poll reads from a little before the previous one: not
// from the start of the group when nothing matched yet, nor from a day
// ago when the newest event is that old; following a node, its streams
// are listed once a refresh, not every poll.
func TestFollowReadsFromThePreviousPoll(t *testing.T) {
	for _, node := range []string{"", "i-0aaaaaaaa"} {
		f := &fakeLogs{}
		start := time.Now()
		f.put("service/api/api.1.t@i-0aaaaaaaa", start.Add(-24*time.Hour).UnixMilli(), "not web")
		f.put("service/web/web.1.t@i-0aaaaaaaa", start.Add(-24*time.Hour).UnixMilli(), "before --since")
		since := time.Time{}
		if node != "" {
			since = start.Add(-time.Hour)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		err := Read(ctx, f, Request{Group: "/clusterctl/c", Service: "web", Node: node, Since: since, Follow: true, PollMin: 5 * time.Millisecond, PollMax: 10 * time.Millisecond},
			func(e Event) error {
				if !since.IsZero() {
					t.Errorf("printed %+v", e)
				}
				return nil
			})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Read: %v", err)
		}
		f.mu.Lock()
		// A service's streams are read (and listed) under each role's
		// prefix and the older nodes' one.
		first := 1
		if node == "" {
			first = 3
		}
		if len(f.starts) < first+3 {
			t.Fatalf("%d reads", len(f.starts))
		}
		for i, s := range f.starts[first:] {
			if s < start.Add(-DefaultLookback-time.Second).UnixMilli() {
				t.Errorf("node %q: poll %d read from %d, %s before the follow began", node, i+1, s, start.Sub(time.UnixMilli(s)))
			}
		}
		// (Three prefixes of the service's, and the managers' node
		// streams, once each.)
		if node != "" && f.describes != 4 {
			t.Errorf("the node's streams listed %d times in %d polls", f.describes, len(f.starts))
		}
		f.mu.Unlock()
	}
}

// Following a node, a stream that appears later (a container started
// since) is read once its streams are listed again.
func TestFollowNodeFindsNewStreams(t *testing.T) {
	f := &fakeLogs{}
	now := time.Now()
	f.put("node/i-0aaaaaaaa", now.Add(-time.Second).UnixMilli(), "booted")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- Read(ctx, f, Request{Group: "/clusterctl/c", Node: "i-0aaaaaaaa", Follow: true, PollMin: 5 * time.Millisecond, PollMax: 10 * time.Millisecond, StreamRefresh: 30 * time.Millisecond},
			func(e Event) error { lines <- e.Message; return nil })
	}()
	for _, want := range []string{"booted", "a new container"} {
		select {
		case l := <-lines:
			if l != want {
				t.Fatalf("got %q, want %q", l, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %q", want)
		}
		f.put("container/web@i-0aaaaaaaa", time.Now().UnixMilli(), "a new container")
	}
	cancel()
	<-done
}

func TestParseStream(t *testing.T) {
	for _, tc := range []struct {
		stream, role, service, task, node string
		ok                                bool
	}{
		{"service/web/web.1.abc@i-0123", "", "web", "web.1.abc", "i-0123", true},
		{"service/my.svc/my.svc.1.abc@i-0123", "", "my.svc", "my.svc.1.abc", "i-0123", true},
		{"container/builder@i-0123", "", "", "builder", "i-0123", true},
		{"node/i-0123", "", "", "", "i-0123", true},
		{"managers/node/i-0123", "managers", "", "", "i-0123", true},
		{"agents/service/web/web.1.abc@i-0123", "agents", "web", "web.1.abc", "i-0123", true},
		{"agents/container/builder@i-0123", "agents", "", "builder", "i-0123", true},
		{"service/web", "", "", "", "", false},
		{"service//x@i-1", "", "", "", "", false},
		{"other/x@i-1", "", "", "", "", false},
		{"node/", "", "", "", "", false},
		{"agents/node/", "", "", "", "", false},
		{"agents/managers/node/i-1", "", "", "", "", false},
		{"operators/node/i-1", "", "", "", "", false},
	} {
		src, ok := parseStream(tc.stream)
		if ok != tc.ok || ok && src != (source{tc.role, tc.service, tc.task, tc.node}) {
			t.Errorf("parseStream(%q) = %+v, %v", tc.stream, src, ok)
		}
	}
}

// A service's and a node's events are read from the streams of either
// role and of older nodes (named without a role) alike, each once, in time
// order, with the role that wrote them; also where the prefix is ignored.
// An agents' stream that names a manager's instance (one with a managers'
// node stream, which only a manager may create) is not shown as its.
func TestReadEveryRole(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		f := &fakeLogs{ignorePrefix: ignore}
		base := time.Now().Add(-time.Hour).UnixMilli()
		f.put("service/web/web.1.t@i-0aaaaaaaa", base, "web before the upgrade")
		f.put("agents/service/web/web.1.t@i-0aaaaaaaa", base+1, "web on an agent")
		f.put("managers/service/web/web.2.t@i-0bbbbbbbb", base+2, "web on a manager")
		f.put("agents/service/webapi/webapi.1.t@i-0aaaaaaaa", base+3, "not web")
		f.put("managers/node/i-0bbbbbbbb", base+4, "a decision")
		f.put("agents/container/builder@i-0aaaaaaaa", base+5, "builder")
		// An agent naming a manager's instance in its role's streams.
		f.put("agents/node/i-0bbbbbbbb", base+6, "clusterctl: forged decision")
		f.put("agents/service/web/web.9.t@i-0bbbbbbbb", base+7, "forged web")
		read := func(req Request) []string {
			t.Helper()
			var got []string
			req.Group = "/clusterctl/c"
			if err := Read(context.Background(), f, req, func(e Event) error {
				got = append(got, e.Role+" "+e.Source()+" "+e.Message)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			return got
		}
		for _, c := range []struct {
			req  Request
			want []string
		}{
			{Request{Service: "web"}, []string{" web.1.t@i-0aaaaaaaa web before the upgrade", "agents web.1.t@i-0aaaaaaaa web on an agent", "managers web.2.t@i-0bbbbbbbb web on a manager"}},
			{Request{Service: "web", Tail: 2}, []string{"agents web.1.t@i-0aaaaaaaa web on an agent", "managers web.2.t@i-0bbbbbbbb web on a manager"}},
			{Request{Node: "i-0bbbbbbbb"}, []string{"managers web.2.t@i-0bbbbbbbb web on a manager", "managers clusterctl@i-0bbbbbbbb a decision"}},
			{Request{Node: "i-0aaaaaaaa", Service: "web"}, []string{" web.1.t@i-0aaaaaaaa web before the upgrade", "agents web.1.t@i-0aaaaaaaa web on an agent"}},
			{Request{Tail: 1}, []string{"agents builder@i-0aaaaaaaa builder"}},
			{Request{Since: time.UnixMilli(base + 4)}, []string{"managers clusterctl@i-0bbbbbbbb a decision", "agents builder@i-0aaaaaaaa builder"}},
		} {
			if got := read(c.req); !slices.Equal(got, c.want) {
				t.Errorf("prefix ignored %v, %+v: got %q, want %q", ignore, c.req, got, c.want)
			}
		}
	}
}
