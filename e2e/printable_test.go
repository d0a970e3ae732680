package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/names"
)

// Text the swarm reports (a node's hostname, state and engine labels,
// a service's name and a task's error: all set by whoever runs on a node)
// reaches the tables escaped: no terminal escape sequence, control
// character or bidi override gets to the terminal; JSON keeps the data.
func TestSwarmTextEscapedInTables(t *testing.T) {
	parallel(t)
	c, bucket := newCluster(t)
	hostile := "\x1b]0;owned\x07\x1b[2J\u202eevil\nforged"
	node := map[string]any{
		"nodeId": "node99", "instanceId": "i-0123456789abcdef0", "hostname": "ip-" + hostile, "address": "172.31.9.9",
		"role": "worker", "state": "down" + hostile, "availability": "active",
		"engineLabels": map[string]string{names.EngineLabelGroup: "web", names.EngineLabelInstanceID: "i-0123456789abcdef0", "tier": hostile},
	}
	body, err := json.Marshal(map[string]any{
		"version": 1, "cluster": "core", "time": time.Now().UTC().Format(time.RFC3339), "publisher": "i-0123456789abcdef0",
		"caDigest": strings.Repeat("ab", 32), "lastBackup": time.Now().UTC().Format(time.RFC3339), "nodes": []any{node},
		"services": []map[string]any{{"ID": "svc1", "Name": "api" + hostile, "Mode": map[string]any{"Replicated": map[string]any{"Replicas": 1}}, "Image": "busybox" + hostile}},
		"tasks":    []map[string]any{{"ServiceID": "svc1", "NodeID": "", "DesiredState": "running", "Status": map[string]any{"State": "pending", "Err": "no suitable node" + hostile}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(names.StatusKey), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"list-nodes", "-j", "core", "-o", "wide"},
		{"services", "-j", "core"},
		{"services", "-j", "core", "-o", "wide"},
	} {
		r := must(t, args...)
		if strings.ContainsAny(r.stdout, "\x1b\x07\u202e") || strings.Contains(r.stdout, "\nforged") {
			t.Errorf("%s passes the swarm's control characters through:\n%q", strings.Join(args, " "), r.stdout)
		}
		if !strings.Contains(r.stdout, `\x1b]0;owned\x07\x1b[2J\u202eevil\x0aforged`) {
			t.Errorf("%s does not show the text escaped:\n%s", strings.Join(args, " "), r.stdout)
		}
	}
	if got := decode[[]struct{ Name string }](t, must(t, "services", "-j", "core", "-o", "json")); len(got) != 1 || got[0].Name != "api"+hostile {
		t.Errorf("JSON does not keep the data: %+v", got)
	}
}
