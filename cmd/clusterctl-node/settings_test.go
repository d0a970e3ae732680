package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/clusterctl/clusterctl/internal/node"
)

func TestSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.env")
	os.WriteFile(path, []byte("CLUSTER_NAME=core\nAWS_REGION='eu-west-1'\nBUCKET_NAME=core-bucket-1\nNODE_LABELS=tier=db,app=x\nSTACK_NAME=bad;rm\n# comment\n"), 0o600)
	s, err := readSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.need("CLUSTER_NAME", "AWS_REGION", "BUCKET_NAME"); err != nil {
		t.Error(err)
	}
	if err := s.need("STACK_NAME"); err == nil || !strings.Contains(err.Error(), "not the shape of one") {
		t.Errorf("a stack name with a semicolon: %v", err)
	}
	if err := s.need("MANAGERS_KEY"); err == nil {
		t.Error("a missing setting taken")
	}
	if l := s.labels(); l["tier"] != "db" || l["app"] != "x" || len(l) != 2 {
		t.Errorf("labels %v", l)
	}
	t.Setenv("CLUSTERCTL_DRAIN_POLL", "1")
	t.Setenv("CLUSTERCTL_REJOIN_AFTER", "x")
	if managerTimings().DrainPoll != time.Second || agentTimings().RejoinAfter != 2*time.Minute {
		t.Error("timings from the environment")
	}
}

// The engine's log settings from the node's settings, as the scripts
// choose them.
func TestEngineLogs(t *testing.T) {
	base := settings{"CLUSTER_NAME": "core", "AWS_REGION": "eu-west-1"}
	with := func(kv ...string) settings {
		s := settings{}
		for k, v := range base {
			s[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			s[kv[i]] = kv[i+1]
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		s        settings
		endpoint string
		want     *node.EngineLogs
		err      string
	}{
		{"an older core", base, "", nil, ""},
		{"driver none", with("LOG_GROUP", "/clusterctl/core", "LOG_DRIVER", "none"), "", nil, ""},
		{"an agent", with("LOG_GROUP", "/clusterctl/core", "LOG_DRIVER", "awslogs"), "", &node.EngineLogs{Group: "/clusterctl/core", Region: "eu-west-1", InstanceID: "i-1"}, ""},
		{"a manager: its cluster's group", with("LOG_DRIVER", "awslogs", "NODE_GROUP", "control"), "http://10.0.0.1:5000", &node.EngineLogs{Group: "/clusterctl/core", Region: "eu-west-1", InstanceID: "i-1", Endpoint: "http://10.0.0.1:5000", Manager: true}, ""},
		{"an agent of a group", with("LOG_GROUP", "/clusterctl/core", "LOG_DRIVER", "awslogs", "NODE_GROUP", "web"), "", &node.EngineLogs{Group: "/clusterctl/core", Region: "eu-west-1", InstanceID: "i-1"}, ""},
		{"an endpoint not of the shape", with("LOG_DRIVER", "awslogs"), "http://x/\"a", &node.EngineLogs{Group: "/clusterctl/core", Region: "eu-west-1", InstanceID: "i-1"}, ""},
		{"a driver unknown", with("LOG_DRIVER", "syslog"), "", nil, "refusing LOG_DRIVER"},
		{"a group with a quote", with("LOG_GROUP", `a"b`, "LOG_DRIVER", "awslogs"), "", nil, "refusing LOG_GROUP"},
	} {
		got, err := tc.s.engineLogs("i-1", tc.endpoint)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// The node's lines are shipped whenever the settings name a log group,
// whatever the engines' driver, as the agents' shell service does.
func TestLogGroup(t *testing.T) {
	for _, tc := range []struct {
		s    settings
		want string
	}{
		{settings{"CLUSTER_NAME": "core"}, ""},
		{settings{"CLUSTER_NAME": "core", "LOG_GROUP": "", "LOG_DRIVER": ""}, ""},
		{settings{"CLUSTER_NAME": "core", "LOG_GROUP": "/clusterctl/core", "LOG_DRIVER": "none"}, "/clusterctl/core"},
		{settings{"CLUSTER_NAME": "core", "LOG_DRIVER": "awslogs"}, "/clusterctl/core"},
	} {
		if got, err := tc.s.logGroup(); got != tc.want || err != nil {
			t.Errorf("%v: %q, %v", tc.s, got, err)
		}
	}
}

type fakeLogs struct {
	stream string
	lines  []string
}

func (f *fakeLogs) CreateLogStream(_ context.Context, in *cloudwatchlogs.CreateLogStreamInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.CreateLogStreamOutput, error) {
	f.stream = *in.LogGroupName + " " + *in.LogStreamName
	return &cloudwatchlogs.CreateLogStreamOutput{}, nil
}

func (f *fakeLogs) PutLogEvents(_ context.Context, in *cloudwatchlogs.PutLogEventsInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.PutLogEventsOutput, error) {
	for _, e := range in.LogEvents {
		f.lines = append(f.lines, *e.Message)
	}
	return &cloudwatchlogs.PutLogEventsOutput{}, nil
}

// A line logged goes to the node's stream, under its role's prefix, as it
// goes to the journal; what is left is sent at exit.
func TestNodeLogShips(t *testing.T) {
	for _, c := range []struct {
		manager bool
		stream  string
	}{
		{true, "/clusterctl/core managers/node/i-0123456789abcdef0"},
		{false, "/clusterctl/core agents/node/i-0123456789abcdef0"},
	} {
		f := &fakeLogs{}
		nl := &nodeLog{}
		nl.shipTo(f, "/clusterctl/core", "i-0123456789abcdef0", c.manager)
		nl.logf("drained node %s", "n1")
		nl.close()
		if f.stream != c.stream || len(f.lines) != 1 || f.lines[0] != "clusterctl: drained node n1" {
			t.Errorf("stream %q, lines %q; want stream %q", f.stream, f.lines, c.stream)
		}
	}
}
