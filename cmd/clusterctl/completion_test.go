package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

func testParser(t *testing.T) *kong.Kong {
	t.Helper()
	var cli CLI
	p, err := kong.New(&cli, kong.Name("clusterctl"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Commands and flags complete from kong's model, so every command is
// offered; names need AWS and are silent without it.
func TestCompleteLine(t *testing.T) {
	// No AWS at all: name completion must offer nothing, quietly.
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	p := testParser(t)
	var all []string
	for _, n := range p.Model.Children {
		all = append(all, n.Name)
	}
	tests := []struct {
		line string
		want []string
	}{
		{"clusterctl ", all},
		{"clusterctl list-n", []string{"list-nodes"}},
		{"clusterctl render ", []string{"core", "group", "network", "node-config", "operator-policy"}},
		{"clusterctl completion ", []string{"bash", "fish", "zsh"}},
		{"clusterctl list-nodes --cl", []string{"--cluster"}},
		{"clusterctl list-nodes --ti", []string{"--timeout"}},
		{"clusterctl list-nodes -o ", []string{"table", "wide", "json", "yaml"}},
		{"clusterctl add-agents --spot-allocation ", []string{"price-capacity-optimized", "capacity-optimized", "lowest-price"}},
		{"clusterctl update-group --dry", []string{"--dry-run"}},
		{"clusterctl help list-g", []string{"list-groups"}},
		{"clusterctl list-nodes -n ", []string{"control"}},
		{"clusterctl describe ", nil},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		t.Setenv("COMP_LINE", tt.line)
		asked, err := completeLine(context.Background(), p, &out)
		if !asked || err != nil {
			t.Errorf("%q: asked %v, err %v", tt.line, asked, err)
		}
		got := strings.Fields(out.String())
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%q: %q, want %q", tt.line, got, want)
		}
	}
	t.Setenv("COMP_LINE", "")
	if asked, _ := completeLine(context.Background(), p, &bytes.Buffer{}); asked {
		t.Error("no COMP_LINE taken for a completion request")
	}
}

func TestClusterOnLine(t *testing.T) {
	value := valueFlags(testParser(t).Model.Node)
	for _, tt := range []struct {
		words []string
		want  string
	}{
		{[]string{"-j", "core", "-n"}, "core"},
		{[]string{"--join=prod", "-n"}, "prod"},
		{[]string{"core", "-n"}, "core"},
		{[]string{"--region", "eu-west-1", "core", "-n"}, "core"},
		{[]string{"-q", "core", "-n"}, "core"},
		{[]string{"-o", "json", "-n"}, ""},
		{nil, ""},
	} {
		if got := clusterOnLine(tt.words, value); got != tt.want {
			t.Errorf("clusterOnLine(%q) = %q, want %q", tt.words, got, tt.want)
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "complete -o default -o bashdefault -C '/opt/it'\\''s/clusterctl' clusterctl\n",
		"zsh":  "compdef _clusterctl clusterctl\n",
		"fish": "complete -f -c clusterctl -a \"(__clusterctl_complete)\"\n",
	} {
		if got := completionScript(shell, "clusterctl", "/opt/it's/clusterctl"); !strings.HasSuffix(got, want) {
			t.Errorf("%s script:\n%s\nwant it to end with:\n%s", shell, got, want)
		}
	}
}

// For zsh each word comes with its description, the form _describe takes.
func TestCompleteLineDescribed(t *testing.T) {
	p := testParser(t)
	t.Setenv(describeEnv, "1")
	for line, want := range map[string]string{
		"clusterctl list-n":           "list-nodes:List the nodes of a cluster (all clusters without -j)\n",
		"clusterctl list-nodes --clu": "--cluster:Cluster (default: every cluster in the region)\n",
		"clusterctl list-nodes -o w":  "wide\n",
	} {
		var out bytes.Buffer
		t.Setenv("COMP_LINE", line)
		if _, err := completeLine(context.Background(), p, &out); err != nil || out.String() != want {
			t.Errorf("%q: %q, %v; want %q", line, out.String(), err, want)
		}
	}
}

// CLUSTERCTL_COMPLETION_TIMEOUT bounds the names' read when it is a
// positive duration; anything else leaves the 2 s, silently, as a
// completion says nothing.
func TestCompletionTimeout(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  time.Duration
	}{
		{"", 2 * time.Second},
		{"5s", 5 * time.Second},
		{"1m30s", 90 * time.Second},
		{"250ms", 250 * time.Millisecond},
		{"5", 2 * time.Second},
		{"0s", 2 * time.Second},
		{"-3s", 2 * time.Second},
		{"soon", 2 * time.Second},
	} {
		if got := completionTimeout(tt.value); got != tt.want {
			t.Errorf("%q: %v, want %v", tt.value, got, tt.want)
		}
	}
}

// An answer cut off after its headers is asked once more: the names still
// complete. (A loaded machine cut answers off now and then, and the one
// attempt of name completion then offered nothing.)
func TestCompleteNamesAfterACutOffAnswer(t *testing.T) {
	const stacks = `<DescribeStacksResponse><DescribeStacksResult><Stacks><member><StackName>core</StackName>` +
		`<StackStatus>CREATE_COMPLETE</StackStatus><Tags><member><Key>clusterctl:cluster</Key><Value>core</Value></member>` +
		`<member><Key>clusterctl:role</Key><Value>core</Value></member></Tags></member></Stacks></DescribeStacksResult></DescribeStacksResponse>`
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) == 1 {
			// The headers, part of the body, then the connection closed.
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: %d\r\n\r\n%s", len(stacks), stacks[:40])
			buf.Flush()
			conn.Close()
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		io.WriteString(w, stacks)
	}))
	defer srv.Close()
	testCredentials(t)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("COMP_LINE", "clusterctl describe --endpoint-url "+srv.URL+" ")
	var out bytes.Buffer
	if _, err := completeLine(context.Background(), testParser(t), &out); err != nil || out.String() != "core\n" {
		t.Errorf("%q, %v; want core, after %d requests", out.String(), err, asked.Load())
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("%d requests, want 2: the cut-off one and one more", n)
	}
}
