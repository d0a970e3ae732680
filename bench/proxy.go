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
// alike, and it can hold one stack "in progress": moto completes stacks
// synchronously, so to measure how soon a tool notices that CloudFormation
// has finished, the proxy makes the stack look CREATE_IN_PROGRESS until a
// moment T it chooses, then lets the truth through.
type proxy struct {
	url string
	srv *http.Server
	rp  *httputil.ReverseProxy

	mu   sync.Mutex
	ops  []string
	hold *hold
}

// hold makes stack look in progress until d after its CreateStack returned.
type hold struct {
	stack string
	d     time.Duration
	t     time.Time // zero until CreateStack has returned
	// seen is when the first truthful status read of the stack after T
	// went back to the tool: when it noticed.
	seen time.Time
}

type opKey struct{}

type reqInfo struct {
	service, action string
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
			info.action = v.Get("Action")
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
	h := &hold{stack: stack, d: d}
	p.mu.Lock()
	p.hold = h
	p.mu.Unlock()
	return func() (time.Time, time.Time) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.hold = nil
		return h.t, h.seen
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
	var stack string
	if h != nil {
		stack = h.stack
		if info.action == "CreateStack" && resp.StatusCode == http.StatusOK && h.t.IsZero() {
			h.t = now.Add(h.d)
		}
	}
	p.mu.Unlock()
	if stack == "" || (info.action != "DescribeStacks" && info.action != "DescribeStackEvents") {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	p.mu.Lock()
	if !h.t.IsZero() && !now.Before(h.t) {
		// T has passed: the truth goes through, and the first read of it
		// is when the tool noticed.
		if h.seen.IsZero() && bytes.Contains(body, []byte("<StackName>"+stack+"</StackName>")) {
			h.seen = time.Now()
		}
		stack = ""
	}
	p.mu.Unlock()
	if stack == "" {
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return nil
	}
	if info.action == "DescribeStacks" {
		body = holdStatus(body, stack)
	} else {
		body = dropFinalEvents(body, stack)
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
