package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
