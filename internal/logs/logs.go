// Package logs reads a cluster's CloudWatch log group: the events of a
// service's tasks, of a node, or of the whole cluster, in time order, once
// or following new ones.
//
// The streams are named by the nodes (see names.LogStreamService and the
// engines' daemon.json): <role>/service/<service>/<task>@<instance>,
// <role>/container/<name>@<instance> and <role>/node/<instance>, where
// role (managers or agents) is the writer's, as IAM enforces it; nodes
// of older versions wrote the same names without the role, and those
// streams are read too. A service's streams are found by prefix (one per
// role); a node's by listing the streams, as its instance id ends their
// names.
package logs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"github.com/clusterctl/clusterctl/internal/names"
)

// API is what reading logs needs of CloudWatch Logs.
type API interface {
	FilterLogEvents(ctx context.Context, in *cloudwatchlogs.FilterLogEventsInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error)
	DescribeLogStreams(ctx context.Context, in *cloudwatchlogs.DescribeLogStreamsInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogStreamsOutput, error)
}

// Request says which events to read.
type Request struct {
	Group   string // the log group
	Service string // only this service's tasks ("": every stream)
	Node    string // only this instance's streams ("": every node)
	// Since and Until bound the events' timestamps (zero: unbounded).
	Since, Until time.Time
	Grep         string // a CloudWatch Logs filter pattern
	Tail         int    // only the last Tail events of the range (0: all)
	Follow       bool   // then keep polling for new events until ctx ends
	// PollMin and PollMax bound the wait between polls while following: it
	// starts at PollMin, doubles while nothing new comes, up to PollMax.
	PollMin, PollMax time.Duration
	// Lookback is how far before the newest event seen a poll reads again,
	// for events that reach CloudWatch late (they are shown once).
	Lookback time.Duration
	// StreamRefresh is how often, following a node, its streams are
	// listed again (a container started since has a new one; 0:
	// DefaultStreamRefresh): listing them pages through every stream of
	// the group.
	StreamRefresh time.Duration
	// Now is the clock (nil: the system's).
	Now func() time.Time
}

// Defaults of a Request's polling.
const (
	DefaultPollMin  = time.Second
	DefaultPollMax  = 10 * time.Second
	DefaultLookback = 2 * time.Minute
	// DefaultStreamRefresh is how often a followed node's streams are
	// listed again.
	DefaultStreamRefresh = time.Minute
	// tailWindow is the first span --tail reads back from the end; each
	// next one is four times longer, until enough events are found.
	tailWindow = time.Minute
	// tailAll is how far back --tail goes in windows; past it, the last
	// window reaches the start of the group.
	tailAll = 2 * 365 * 24 * time.Hour
	// maxStreamNames is what FilterLogEvents takes in logStreamNames.
	maxStreamNames = 100
)

// Event is one log event and where it came from.
type Event struct {
	Time    time.Time `json:"time"`
	Service string    `json:"service,omitempty"`
	// Task is the swarm task's container name (service.slot.id), or the
	// container's name for a container of no service; "" for the node's
	// own programs.
	Task string `json:"task,omitempty"`
	Node string `json:"node"` // the instance id
	// Role is the role of the node that wrote the stream (managers or
	// agents: each role may write its own streams only); "" for a stream
	// of a node of an older version.
	Role    string `json:"role,omitempty"`
	Message string `json:"message"`
	Stream  string `json:"stream"`
	ID      string `json:"id"`
}

// Source says where the event came from, as docker service logs does:
// task@node, or clusterctl@node for the node's own programs.
func (e Event) Source() string {
	if e.Task == "" {
		return "clusterctl@" + e.Node
	}
	return e.Task + "@" + e.Node
}

// source is where an event came from, as its stream's name says.
type source struct{ role, service, task, node string }

// parseStream reads where an event came from out of its stream's name,
// its role's prefix first (none: an older node's); ok is false for a
// stream that is none of the cluster's.
func parseStream(stream string) (source, bool) {
	var role string
	for _, p := range []string{names.LogStreamManagers, names.LogStreamAgents} {
		if rest, found := strings.CutPrefix(stream, p); found {
			role, stream = strings.TrimSuffix(p, "/"), rest
			break
		}
	}
	service, task, node, ok := parseName(stream)
	return source{role, service, task, node}, ok
}

// parseName reads a stream's name after its role's prefix.
func parseName(stream string) (service, task, node string, ok bool) {
	if rest, found := strings.CutPrefix(stream, names.LogStreamNode); found {
		return "", "", rest, rest != ""
	}
	if rest, found := strings.CutPrefix(stream, names.LogStreamService); found {
		service, rest, found = strings.Cut(rest, "/")
		if !found {
			return "", "", "", false
		}
		task, node, found = cutLast(rest, "@")
		return service, task, node, found && service != ""
	}
	if rest, found := strings.CutPrefix(stream, names.LogStreamContainer); found {
		task, node, found = cutLast(rest, "@")
		return "", task, node, found
	}
	return "", "", "", false
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// Read reads the events req asks for and hands them to emit in time
// order, each once. Following, it returns when ctx ends, with ctx's error.
// What it reads is bounded by what it prints: --tail reads back from the
// end only as far as it needs, holding no more than it prints; a poll
// reads from a little before the newest event seen or the previous poll,
// whichever is later.
func Read(ctx context.Context, api API, req Request, emit func(Event) error) error {
	if req.Now == nil {
		req.Now = time.Now
	}
	if req.PollMin <= 0 {
		req.PollMin = DefaultPollMin
	}
	if req.PollMax < req.PollMin {
		req.PollMax = max(DefaultPollMax, req.PollMin)
	}
	if req.Lookback <= 0 {
		req.Lookback = DefaultLookback
	}
	if req.StreamRefresh <= 0 {
		req.StreamRefresh = DefaultStreamRefresh
	}
	r := reader{api: api, req: req, seen: map[string]int64{}}
	polled := req.Now()
	var evs []Event
	var err error
	if req.Tail > 0 {
		evs, err = r.tail(ctx)
	} else {
		evs, err = r.fetch(ctx, req.Since, req.Until, 0)
	}
	if err != nil {
		return err
	}
	if err := r.emit(evs, emit); err != nil {
		return err
	}
	if !req.Follow {
		return nil
	}
	if req.Tail > 0 && r.newest > 0 {
		// The events the tail left out within the lookback are seen all
		// the same: a poll must not bring them back.
		newest := time.UnixMilli(r.newest)
		hidden, err := r.fetch(ctx, later(newest.Add(-req.Lookback), req.Since), newest, 0)
		if err != nil {
			return err
		}
		for _, e := range hidden {
			r.mark(e)
		}
	}
	wait := req.PollMin
	for {
		if !req.Until.IsZero() && req.Now().After(req.Until) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		// From a little before the newest event seen or the previous
		// poll, whichever is later: an event reaching CloudWatch late is
		// read again, but not a day of them when the newest is old, nor
		// the whole group before anything matched.
		from := polled
		if r.newest > 0 {
			from = later(time.UnixMilli(r.newest), polled)
		}
		from = later(from.Add(-req.Lookback), req.Since)
		polled = req.Now()
		evs, err := r.fetch(ctx, from, req.Until, 0)
		if err != nil {
			return err
		}
		n := r.fresh(evs)
		if err := r.emit(n, emit); err != nil {
			return err
		}
		if len(n) > 0 {
			wait = req.PollMin
		} else {
			wait = min(2*wait, req.PollMax)
		}
		r.prune(req.Lookback)
	}
}

// later is the later of two times (zero: unbounded, the earliest).
func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// tail reads the last Tail events of the range: from its end back, in
// windows each four times longer than the one before, keeping of each
// only what is still missing, until Tail are found or the range (or the
// group) starts.
func (r *reader) tail(ctx context.Context) ([]Event, error) {
	hi := r.req.Until
	if hi.IsZero() {
		hi = r.req.Now()
	}
	floor := hi.Add(-tailAll)
	to := r.req.Until // the first window to the range's end
	var got []Event
	for w := tailWindow; ; w *= 4 {
		lo := hi.Add(-w)
		last := false
		switch {
		case !r.req.Since.IsZero() && !lo.After(r.req.Since):
			lo, last = r.req.Since, true
		case lo.Before(floor):
			lo, last = time.Time{}, true
		}
		evs, err := r.fetch(ctx, lo, to, r.req.Tail-len(got))
		if err != nil {
			return nil, err
		}
		got = append(evs, got...)
		if len(got) >= r.req.Tail || last {
			return got, nil
		}
		// EndTime is inclusive: the next window ends just before.
		hi, to = lo, lo.Add(-time.Millisecond)
	}
}

type reader struct {
	api    API
	req    Request
	seen   map[string]int64 // event id: timestamp (ms), within the lookback
	newest int64            // the newest timestamp seen (ms)
	// streams are the node's streams, as listed at listed.
	streams []string
	listed  time.Time
	// managers are the instances with a managers' node stream, as listed
	// at managersListed: only a manager may create one.
	managers       map[string]bool
	managersListed time.Time
}

func (r *reader) mark(e Event) {
	ms := e.Time.UnixMilli()
	r.seen[e.ID] = ms
	r.newest = max(r.newest, ms)
}

// fresh keeps the events not shown yet.
func (r *reader) fresh(evs []Event) []Event {
	return slices.DeleteFunc(evs, func(e Event) bool {
		_, ok := r.seen[e.ID]
		return ok
	})
}

func (r *reader) emit(evs []Event, emit func(Event) error) error {
	for _, e := range evs {
		if _, ok := r.seen[e.ID]; ok {
			continue
		}
		r.mark(e)
		if err := emit(e); err != nil {
			return err
		}
	}
	return nil
}

// prune forgets the events older than the lookback: no poll reads them
// again.
func (r *reader) prune(lookback time.Duration) {
	cut := r.newest - lookback.Milliseconds()
	for id, ms := range r.seen {
		if ms < cut {
			delete(r.seen, id)
		}
	}
}

// fetch reads the events from from to to (zero: unbounded), every page,
// in time order; keep > 0 keeps only the last keep of them, holding no
// more than twice that.
func (r *reader) fetch(ctx context.Context, from, to time.Time, keep int) ([]Event, error) {
	if err := r.listManagers(ctx); err != nil {
		return nil, err
	}
	base := cloudwatchlogs.FilterLogEventsInput{LogGroupName: aws.String(r.req.Group)}
	if !from.IsZero() {
		base.StartTime = aws.Int64(from.UnixMilli())
	}
	if !to.IsZero() {
		base.EndTime = aws.Int64(to.UnixMilli())
	}
	if r.req.Grep != "" {
		base.FilterPattern = aws.String(r.req.Grep)
	}
	// One filter per batch of stream names (the node's) or per prefix
	// (the service's), merged by time.
	var batches []cloudwatchlogs.FilterLogEventsInput
	if r.req.Node != "" {
		streams, err := r.nodeStreams(ctx)
		if err != nil {
			return nil, err
		}
		if len(streams) == 0 {
			return nil, nil
		}
		for len(streams) > 0 {
			n := min(len(streams), maxStreamNames)
			in := base
			in.LogStreamNames, streams = streams[:n], streams[n:]
			batches = append(batches, in)
		}
	} else if r.req.Service != "" {
		for _, p := range r.servicePrefixes() {
			in := base
			in.LogStreamNamePrefix = aws.String(p)
			batches = append(batches, in)
		}
	} else {
		batches = append(batches, base)
	}
	var out []Event
	for _, in := range batches {
		p := cloudwatchlogs.NewFilterLogEventsPaginator(r.api, &in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("reading log group %s: %w", r.req.Group, err)
			}
			for _, e := range page.Events {
				// A prefix is checked here too: not every implementation
				// applies it (moto ignores it).
				if in.LogStreamNamePrefix != nil && !strings.HasPrefix(aws.ToString(e.LogStreamName), *in.LogStreamNamePrefix) {
					continue
				}
				if ev, ok := r.event(e); ok {
					out = append(out, ev)
				}
			}
			if keep > 0 && len(out) > 2*keep {
				out = lastOf(out, keep)
			}
		}
	}
	if keep > 0 {
		return lastOf(out, keep), nil
	}
	sortEvents(out)
	return out, nil
}

// lastOf keeps the last keep events, in time order.
func lastOf(evs []Event, keep int) []Event {
	sortEvents(evs)
	if len(evs) > keep {
		evs = slices.Clone(evs[len(evs)-keep:])
	}
	return evs
}

func sortEvents(evs []Event) {
	slices.SortStableFunc(evs, func(a, b Event) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Stream, b.Stream)
	})
}

// servicePrefixes are the prefixes of the service's streams: the
// managers', the agents' and those of older nodes.
func (r *reader) servicePrefixes() []string {
	p := names.LogStreamService + r.req.Service + "/"
	return []string{names.LogStreamManagers + p, names.LogStreamAgents + p, p}
}

// ofService says whether stream is one of the service's.
func (r *reader) ofService(stream string) bool {
	for _, p := range r.servicePrefixes() {
		if strings.HasPrefix(stream, p) {
			return true
		}
	}
	return false
}

// event reads one filtered event; ok is false for one of a stream the
// request does not cover (the prefix is checked here too, as the streams'
// names are what says where an event came from).
func (r *reader) event(e types.FilteredLogEvent) (Event, bool) {
	stream := aws.ToString(e.LogStreamName)
	src, ok := parseStream(stream)
	if !ok || r.req.Service != "" && !r.ofService(stream) || r.req.Node != "" && src.node != r.req.Node {
		return Event{}, false
	}
	// An agents' stream naming a manager is an agent's claim to be one:
	// not shown as the manager's.
	if src.role+"/" == names.LogStreamAgents && r.managers[src.node] {
		return Event{}, false
	}
	return Event{
		Time: time.UnixMilli(aws.ToInt64(e.Timestamp)).UTC(), Service: src.service, Task: src.task, Node: src.node, Role: src.role,
		Message: strings.TrimRight(aws.ToString(e.Message), "\r\n"), Stream: stream, ID: aws.ToString(e.EventId),
	}, true
}

// listManagers lists the instances that have a managers' node stream
// (names.LogStreamManagers + LogStreamNode: every manager's agent writes
// one), few streams under one prefix, again once a StreamRefresh.
func (r *reader) listManagers(ctx context.Context) error {
	if r.managers != nil && r.req.Now().Sub(r.managersListed) < r.req.StreamRefresh {
		return nil
	}
	listed := r.req.Now()
	prefix := names.LogStreamManagers + names.LogStreamNode
	managers := map[string]bool{}
	p := cloudwatchlogs.NewDescribeLogStreamsPaginator(r.api, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: aws.String(r.req.Group), LogStreamNamePrefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing the managers' streams of log group %s: %w", r.req.Group, err)
		}
		for _, s := range page.LogStreams {
			if node, ok := strings.CutPrefix(aws.ToString(s.LogStreamName), prefix); ok && node != "" {
				managers[node] = true
			}
		}
	}
	r.managers, r.managersListed = managers, listed
	return nil
}

// nodeStreams lists the node's streams: its own (without a service) and
// its containers', of the service only when one is asked for. The list is
// kept for StreamRefresh: following, a poll does not page through every
// stream of the group.
func (r *reader) nodeStreams(ctx context.Context) ([]string, error) {
	if r.streams != nil && r.req.Now().Sub(r.listed) < r.req.StreamRefresh {
		return r.streams, nil
	}
	listed := r.req.Now()
	prefixes := []string{""}
	if r.req.Service != "" {
		prefixes = r.servicePrefixes()
	}
	var out []string
	for _, prefix := range prefixes {
		in := &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: aws.String(r.req.Group)}
		if prefix != "" {
			in.LogStreamNamePrefix = aws.String(prefix)
		}
		p := cloudwatchlogs.NewDescribeLogStreamsPaginator(r.api, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("listing the streams of log group %s: %w", r.req.Group, err)
			}
			for _, s := range page.LogStreams {
				name := aws.ToString(s.LogStreamName)
				if src, ok := parseStream(name); ok && src.node == r.req.Node && strings.HasPrefix(name, prefix) && (r.req.Service == "" || r.ofService(name)) {
					out = append(out, name)
				}
			}
		}
	}
	if out == nil {
		out = []string{}
	}
	r.streams, r.listed = out, listed
	return out, nil
}
