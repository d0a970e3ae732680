package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/logs"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// LogsCmd is `clusterctl logs -j CLUSTER [SERVICE]`.
type LogsCmd struct {
	Service    string `arg:"" optional:"" help:"Only this swarm service's tasks."`
	Cluster    string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" required:"" help:"Cluster whose log group to read."`
	Node       string `name:"node" placeholder:"INSTANCE_ID" help:"Only this node: its clusterctl programs and its containers."`
	Since      string `placeholder:"10m|TIME" help:"Only events since then: a duration ago (30s, 10m, 2h) or an RFC 3339 time."`
	Until      string `placeholder:"10m|TIME" help:"Only events until then: a duration ago or an RFC 3339 time."`
	Grep       string `placeholder:"PATTERN" help:"Only events matching this CloudWatch Logs filter pattern (e.g. ERROR, \"connection refused\")."`
	Tail       int    `placeholder:"N" help:"Only the last N events of the range (then the new ones, with --follow)."`
	Follow     bool   `short:"f" help:"Keep printing new events until interrupted (Ctrl-C)."`
	Timestamps bool   `short:"t" help:"Show each event's time (as -o wide does)."`
}

var serviceNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

// request checks the flags and turns them into a logs.Request, given the
// time now.
func (c *LogsCmd) request(now time.Time) (logs.Request, error) {
	req := logs.Request{Service: c.Service, Node: c.Node, Grep: c.Grep, Tail: c.Tail, Follow: c.Follow}
	if c.Service != "" && !serviceNameRE.MatchString(c.Service) {
		return req, errs.Usage("invalid service name %q: letters, digits, '.', '_' and '-', starting with a letter or digit", c.Service)
	}
	if c.Node != "" && !wire.ValidInstanceID(c.Node) {
		return req, errs.Usage("invalid --node %q: expected an instance id, i- and 8 or 17 hex digits, e.g. i-0123456789abcdef0", c.Node)
	}
	if c.Tail < 0 {
		return req, errs.Usage("invalid --tail %d: negative", c.Tail)
	}
	var err error
	if req.Since, err = parseWhen("--since", c.Since, now); err != nil {
		return req, err
	}
	if req.Until, err = parseWhen("--until", c.Until, now); err != nil {
		return req, err
	}
	if !req.Since.IsZero() && !req.Until.IsZero() && req.Until.Before(req.Since) {
		return req, errs.Usage("--until %s is before --since %s", c.Until, c.Since)
	}
	return req, nil
}

// parseWhen reads a point in time: a duration ago, or an RFC 3339 time.
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, errs.Usage("invalid %s %q: a duration ago is not negative", flag, s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, errs.Usage("invalid %s %q: expected a duration ago (30s, 10m, 2h) or an RFC 3339 time (e.g. 2026-11-28T09:30:00Z)", flag, s)
}

func (c *LogsCmd) Run(app *App) error {
	req, check := c.request(time.Now())
	if check == nil {
		check = checkNames(c.Cluster, "-j/--cluster", "")
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	table, stamps := out.TableForm(), c.Timestamps || out.Format == "wide"
	seen := 0
	err = cluster.NewInspector(svc).Logs(app.Context(), c.Cluster, req, func(e logs.Event) error {
		seen++
		if !table {
			return out.WriteEach(app.IO.Out, e)
		}
		_, err := fmt.Fprintln(app.IO.Out, logLine(e, stamps))
		return err
	})
	if c.Follow && errors.Is(err, context.DeadlineExceeded) {
		err = nil // --timeout: as long as the operator wanted to follow
	}
	if err == nil && seen == 0 {
		// Silence would read as a hang or a broken pipe.
		fmt.Fprintln(app.IO.ErrOut, noEvents(c.Cluster, req))
	}
	return err
}

// logLine is an event as text: where it came from and its message, made
// printable as table cells are (query.Printable: a container's output
// must not drive the operator's terminal, nor pass for another line with a
// newline or a carriage return), tabs kept, as they move nothing but the
// cursor forward. The reader has cut the message's trailing newline; -o
// json keeps the message as it is.
func logLine(e logs.Event, stamps bool) string {
	var b strings.Builder
	if stamps {
		b.WriteString(e.Time.Format(time.RFC3339Nano) + " ")
	}
	b.WriteString(query.Printable(e.Source()) + " | ")
	for i, part := range strings.Split(e.Message, "\t") {
		if i > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(query.Printable(part))
	}
	return b.String()
}

// noEvents says, on stderr, that a logs request found nothing, and what it
// asked for.
func noEvents(clusterName string, req logs.Request) string {
	what := "cluster " + clusterName
	switch {
	case req.Service != "":
		what = "service " + req.Service + " of " + what
	case req.Node != "":
		what = "node " + req.Node + " of " + what
	}
	msg := "No events of " + what
	if req.Grep != "" {
		msg += fmt.Sprintf(" matching %q", req.Grep)
	}
	if !req.Since.IsZero() {
		return msg + " since " + req.Since.UTC().Format(time.RFC3339)
	}
	return msg + " in its log group"
}
