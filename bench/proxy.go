package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// proxy sits on loopback between the tools and moto. It names every request
// (service:Action) so calls can be counted per operation for every tool
// alike, and it can hold stacks "in progress": moto completes stacks
// synchronously, so to measure how soon a tool notices that CloudFormation
// has finished (or how long creating several takes when each takes a
// while), the proxy makes a new stack look CREATE_IN_PROGRESS until a
// moment T after its CreateStack, then lets the truth through.
type proxy struct {
	url string
	srv *http.Server
	rp  *httputil.ReverseProxy

	mu   sync.Mutex
	ops  []string
	hold *hold
}

// hold makes each stack it covers look in progress until d after its
// CreateStack returned: one stack by name, or every stack whose name
// starts with a prefix.
type hold struct {
	stack  string // a name, or with prefix the start of names
	prefix bool
	d      time.Duration
	t      map[string]time.Time // per stack, T; none until CreateStack has returned
	// seen is, per stack, when the first truthful status read of it after
	// T went back to the tool: when it noticed.
	seen map[string]time.Time
}

func (h *hold) covers(stack string) bool {
	if h.prefix {
		return strings.HasPrefix(stack, h.stack)
	}
	return stack == h.stack
}

type opKey struct{}

type reqInfo struct {
	service, action string
	stack           string // StackName of a CreateStack
}

func startProxy(target string) (*proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{url: "http://" + l.Addr().String()}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host
		},
		Transport:      &http.Transport{MaxIdleConnsPerHost: 32, IdleConnTimeout: time.Minute},
		ModifyResponse: p.modify,
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

func (p *proxy) close() { _ = p.srv.Close() }

var credScope = regexp.MustCompile(`Credential=[^/,]+/[^/,]+/[^/,]+/([^/,]+)/`)

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	info := reqInfo{service: "?"}
	if m := credScope.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		info.service = m[1]
	}
	switch {
	case r.Header.Get("X-Amz-Target") != "":
		t := r.Header.Get("X-Amz-Target")
		info.action = t[strings.LastIndexByte(t, '.')+1:]
	case strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded"):
		if v, err := url.ParseQuery(string(body)); err == nil {
			info.action, info.stack = v.Get("Action"), v.Get("StackName")
		}
	}
	if info.action == "" {
		info.action = restAction(r.Method, r.URL.Path)
	}
	p.mu.Lock()
	p.ops = append(p.ops, info.service+":"+info.action)
	p.mu.Unlock()
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), opKey{}, info)))
}

// restAction names an S3 (path-style) request by its operation.
func restAction(method, path string) string {
	object := strings.Contains(strings.Trim(path, "/"), "/")
	switch {
	case object && method == http.MethodPut:
		return "PutObject"
	case object && method == http.MethodGet:
		return "GetObject"
	case object && method == http.MethodHead:
		return "HeadObject"
	case object && method == http.MethodDelete:
		return "DeleteObject"
	case object:
		return method + " object"
	}
	return method + " bucket"
}

// mark and since count the requests between two moments.
func (p *proxy) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ops)
}

func (p *proxy) since(mark int) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for _, op := range p.ops[mark:] {
		out[op]++
	}
	return out
}

// holdStack starts holding stack; the returned func stops holding and
// tells T (zero if the stack was never created through the proxy) and when
// the tool first read the truth after T.
func (p *proxy) holdStack(stack string, d time.Duration) func() (t, seen time.Time) {
	release := p.holdStacks(&hold{stack: stack, d: d})
	return func() (time.Time, time.Time) {
		h := release()
		return h.t[stack], h.seen[stack]
	}
}

// holdPrefix starts holding every stack whose name starts with prefix,
// each until d after its own CreateStack; the returned func stops holding
// and tells each held stack's T.
func (p *proxy) holdPrefix(prefix string, d time.Duration) func() map[string]time.Time {
	release := p.holdStacks(&hold{stack: prefix, prefix: true, d: d})
	return func() map[string]time.Time { return release().t }
}

func (p *proxy) holdStacks(h *hold) func() *hold {
	h.t, h.seen = map[string]time.Time{}, map[string]time.Time{}
	p.mu.Lock()
	p.hold = h
	p.mu.Unlock()
	return func() *hold {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.hold = nil
		return h
	}
}

func (p *proxy) modify(resp *http.Response) error {
	info, _ := resp.Request.Context().Value(opKey{}).(reqInfo)
	if info.service != "cloudformation" {
		return nil
	}
	now := time.Now()
	p.mu.Lock()
	h := p.hold
	if h != nil && info.action == "CreateStack" && resp.StatusCode == http.StatusOK && h.covers(info.stack) {
		if _, ok := h.t[info.stack]; !ok {
			h.t[info.stack] = now.Add(h.d)
		}
	}
	p.mu.Unlock()
	if h == nil || (info.action != "DescribeStacks" && info.action != "DescribeStackEvents") {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	// The stacks still held, and the first truthful read of each after
	// its T.
	var held []string
	p.mu.Lock()
	for stack, t := range h.t {
		switch {
		case now.Before(t):
			held = append(held, stack)
		case h.seen[stack].IsZero() && bytes.Contains(body, []byte("<StackName>"+stack+"</StackName>")):
			h.seen[stack] = time.Now()
		}
	}
	p.mu.Unlock()
	for _, stack := range held {
		if info.action == "DescribeStacks" {
			body = holdStatus(body, stack)
		} else {
			body = dropFinalEvents(body, stack)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// holdStatus rewrites the status of stack in a DescribeStacks response from
// CREATE_COMPLETE to CREATE_IN_PROGRESS.
func holdStatus(body []byte, stack string) []byte {
	name := []byte("<StackName>" + stack + "</StackName>")
	status := []byte("<StackStatus>")
	done := []byte("<StackStatus>CREATE_COMPLETE</StackStatus>")
	inProgress := []byte("<StackStatus>CREATE_IN_PROGRESS</StackStatus>")
	var out []byte
	rest := body
	for {
		i := bytes.Index(rest, name)
		if i < 0 {
			break
		}
		j := i + len(name)
		k := bytes.Index(rest[j:], status)
		if k < 0 {
			break
		}
		out = append(out, rest[:j+k]...)
		rest = rest[j+k:]
		if bytes.HasPrefix(rest, done) {
			out = append(out, inProgress...)
			rest = rest[len(done):]
		}
	}
	return append(out, rest...)
}

// Stack events have no nested members, so a lazy match is one event.
var eventMember = regexp.MustCompile(`(?s)<member>.*?</member>`)

// dropFinalEvents removes stack's own final-status events from a
// DescribeStackEvents response, as if CloudFormation had not written them yet.
func dropFinalEvents(body []byte, stack string) []byte {
	name := []byte("<StackName>" + stack + "</StackName>")
	return eventMember.ReplaceAllFunc(body, func(ev []byte) []byte {
		if bytes.Contains(ev, name) &&
			bytes.Contains(ev, []byte("<ResourceType>AWS::CloudFormation::Stack</ResourceType>")) &&
			!bytes.Contains(ev, []byte("_IN_PROGRESS</ResourceStatus>")) {
			return nil
		}
		return ev
	})
}

// formatOps prints per-operation counts, most frequent first.
func formatOps(ops map[string]int) string {
	keys := make([]string, 0, len(ops))
	for k := range ops {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if ops[keys[i]] != ops[keys[j]] {
			return ops[keys[i]] > ops[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, ops[k])
	}
	return strings.Join(parts, " ")
}
