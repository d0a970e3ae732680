package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/clusterctl/clusterctl/internal/iostreams"
	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/motoserver"
	"github.com/clusterctl/clusterctl/internal/names"
)

// leafCommands lists every command of the CLI that runs ("render core",
// not "render"), from kong's model.
func leafCommands(t *testing.T) []string {
	t.Helper()
	var out []string
	var walk func(n *kong.Node, path string)
	walk = func(n *kong.Node, path string) {
		leaf := true
		for _, c := range n.Children {
			if c.Type == kong.CommandNode {
				leaf = false
				walk(c, strings.TrimSpace(path+" "+c.Name))
			}
		}
		if leaf && path != "" {
			out = append(out, path)
		}
	}
	walk(testParser(t).Model.Node, "")
	return out
}

// Every command either honours -o json and --query or refuses them with
// exit 2; none ignores them. The table must name every command of kong's
// model, so a new command cannot be forgotten. Commands that change things
// run once per flag, on things of their own, in an order that builds and
// then tears down a cluster on moto.
func TestEveryCommandHonoursOrRefusesOutputFlags(t *testing.T) {
	moto, err := motoserver.Start(nil)
	if err != nil {
		t.Fatal(err) // never a skip: without moto this says nothing
	}
	defer moto.Close()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": moto.URL, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "COMP_LINE": "",
	} {
		t.Setenv(k, v)
	}
	type row struct {
		command string
		// json and query are the arguments of the run with -o json and of
		// the run with --query.
		json, query []string
		refuses     bool
		before      func(t *testing.T) // sets up what the command acts on
	}
	same := func(args ...string) ([]string, []string) { return args, args }
	clusterFile := filepath.Join(t.TempDir(), "c5.yaml")
	if err := os.WriteFile(clusterFile, []byte("apiVersion: clusterctl/v1\nkind: Cluster\nname: c5\ngroups:\n  - name: g\n    instanceType: t3.small\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := []row{
		{command: "create-core", json: []string{"create-core", "c1"}, query: []string{"create-core", "c2"}},
		{command: "create-network", json: []string{"create-network", "n1", "--zones", "1"}, query: []string{"create-network", "n2", "--zones", "1"}},
		{command: "add-agents", json: []string{"add-agents", "-n", "g1", "-t", "t3.small", "-j", "c1"}, query: []string{"add-agents", "-n", "g2", "-t", "t3.small", "-j", "c1"}},
		{command: "update-group", json: []string{"update-group", "-n", "g1", "-j", "c1", "-c", "2"}, query: []string{"update-group", "-n", "g1", "-j", "c1", "-c", "3"}},
		{command: "update-core", json: []string{"update-core", "c1", "--ssh-cidr", "203.0.113.0/24", "--yes"}, query: []string{"update-core", "c1", "--managers", "3", "--yes"}},
	}
	for _, r := range []struct {
		command string
		args    []string
		refuses bool
	}{
		{"list-nodes", []string{"list-nodes", "-j", "c1"}, false},
		{"list-groups", []string{"list-groups"}, false},
		{"describe", []string{"describe", "c1"}, false},
		{"events", []string{"events", "c1", "-n", "g1"}, false},
		{"wait", []string{"wait", "c1", "-n", "g1"}, false},
		{"upgrade", []string{"upgrade", "-j", "c1", "--dry-run"}, false},
		{"render core", []string{"render", "core", "c9"}, false},
		{"render group", []string{"render", "group", "-n", "g9", "-t", "m7g.large"}, false},
		{"render node-config", []string{"render", "node-config", "-n", "g9", "-t", "m7g.large", "-j", "c1"}, false},
		{"render network", []string{"render", "network", "n9"}, false},
		{"render operator-policy", []string{"render", "operator-policy", "--read-only"}, false},
		{"version", []string{"version"}, false},
		// The first apply creates the cluster, the second finds no changes.
		{"apply", []string{"apply", "-f", clusterFile}, false},
		{"export", []string{"export", "c1"}, false},
		{"schema", []string{"schema"}, false},
		{"list-clusters", []string{"list-clusters"}, false},
		{"use", []string{"use"}, false},
		{"docker", []string{"docker", "-j", "c1", "--", "node", "ls"}, true},
		{"shell", []string{"shell", "-j", "c1"}, true},
		{"completion", []string{"completion", "bash"}, true},
		{"help", []string{"help", "list-nodes"}, true},
	} {
		j, q := same(r.args...)
		rows = append(rows, row{command: r.command, json: j, query: q, refuses: r.refuses})
	}
	// The node commands act through the swarm's managers, which the test
	// plays; their instances are known once the cluster runs.
	undo, replaceJSON, replaceQuery := []string{"drain-node", "", "--undo"}, []string{"replace-node", ""}, []string{"replace-node", ""}
	rows = append(rows,
		row{command: "drain-node", json: undo, query: undo, before: func(t *testing.T) {
			playLeader(t, moto.URL, "c1")
			undo[1] = instanceOf(t, moto.URL, "c1", "g1")
		}},
		row{command: "replace-node", json: replaceJSON, query: replaceQuery, before: func(t *testing.T) {
			playLeader(t, moto.URL, "c1")
			replaceJSON[1], replaceQuery[1] = instanceOf(t, moto.URL, "c1", "g1"), instanceOf(t, moto.URL, "c1", "g2")
		}},
		row{command: "services", json: []string{"services", "-j", "c1"}, query: []string{"services", "-j", "c1"}, before: func(t *testing.T) {
			playLeader(t, moto.URL, "c1")
		}},
		row{command: "backups", json: []string{"backups", "-j", "c1"}, query: []string{"backups", "-j", "c1"}, before: func(t *testing.T) {
			playLeader(t, moto.URL, "c1")
		}},
		// Sent through the queue, not waited for.
		row{command: "restore", json: []string{"restore", "-j", "c1", "--from", "latest", "--yes"}, query: []string{"restore", "-j", "c1", "--from", "latest", "--yes"}, before: func(t *testing.T) {
			putBackupSnapshot(t, moto.URL, "c1")
		}},
		row{command: "backup", json: []string{"backup", "-j", "c1"}, query: []string{"backup", "-j", "c1"}},
		// One event in the cluster's log group, as a node would write it.
		row{command: "logs", json: []string{"logs", "-j", "c1"}, query: []string{"logs", "-j", "c1"}, before: func(t *testing.T) {
			putLogEvent(t, moto.URL, "/clusterctl/c1", "node/i-0123456789abcdef0", "drained i-0fedcba9876543210")
		}},
		// Leases left by runs that died, one to break per run.
		row{command: "unlock", json: []string{"unlock", "c1", "--group", "gu1", "--id", "aaaaaaaaaaaa"}, query: []string{"unlock", "c1", "--group", "gu2", "--id", "bbbbbbbbbbbb"},
			before: func(t *testing.T) {
				putLease(t, moto.URL, "c1", "gu1", "aaaaaaaaaaaa")
				putLease(t, moto.URL, "c1", "gu2", "bbbbbbbbbbbb")
			}},
		// Secrets: declared (an update of the core), listed, removed.
		row{command: "secrets add", json: []string{"secrets", "add", "-j", "c1", "db", "--from", "ssm:/c1/db", "--yes"}, query: []string{"secrets", "add", "-j", "c1", "db2", "--from", "ssm:/c1/db2", "--yes"},
			before: func(t *testing.T) { putParameters(t, moto.URL, "/c1/db", "/c1/db2") }},
		row{command: "secrets list", json: []string{"secrets", "-j", "c1"}, query: []string{"secrets", "-j", "c1"}},
		row{command: "secrets remove", json: []string{"secrets", "remove", "-j", "c1", "db", "--yes"}, query: []string{"secrets", "remove", "-j", "c1", "db2", "--yes"}},
		row{command: "remove-group", json: []string{"remove-group", "-n", "g1", "-j", "c1", "--yes"}, query: []string{"remove-group", "-n", "g2", "-j", "c1", "--yes"}},
		row{command: "delete-core", json: []string{"delete-core", "c1", "--yes"}, query: []string{"delete-core", "c2", "--yes"}},
		row{command: "delete-network", json: []string{"delete-network", "n1", "--yes"}, query: []string{"delete-network", "n2", "--yes"}},
	)

	var covered []string
	for _, r := range rows {
		covered = append(covered, r.command)
	}
	for _, c := range leafCommands(t) {
		if !slices.Contains(covered, c) {
			t.Errorf("command %q is not in this table: say whether it honours or refuses -o json and --query", c)
		}
	}

	for _, r := range rows {
		t.Run(r.command, func(t *testing.T) {
			if r.before != nil {
				r.before(t)
			}
			for _, v := range []struct {
				flags []string
				args  []string
				check func(stdout string) bool
			}{
				{[]string{"-o", "json"}, r.json, func(s string) bool { return strings.TrimSpace(s) != "" && json.Valid([]byte(s)) }},
				// Every JSON form is an object or an array: the query's one
				// raw line proves it ran on it.
				{[]string{"--query", "type"}, r.query, func(s string) bool { return s == "object\n" || s == "array\n" }},
			} {
				ios, _, out, errOut := iostreams.Test()
				args := append(append(slices.Clone(v.args), "-q"), v.flags...)
				if at := slices.Index(v.args, "--"); at >= 0 {
					// What follows -- is the command's own (docker's).
					args = slices.Concat(v.args[:at], []string{"-q"}, v.flags, v.args[at:])
				}
				code := run(context.Background(), args, ios)
				switch {
				case r.refuses:
					if code != 2 || !strings.Contains(errOut.String(), "takes neither -o json/yaml nor --query") || out.Len() != 0 {
						t.Errorf("%s: exit %d, want a refusal (exit 2)\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
					}
				case code != 0 || !v.check(out.String()):
					t.Errorf("%s: exit %d, flags not honoured\nstdout: %q\nstderr: %s", strings.Join(args, " "), code, out, errOut)
				}
			}
		})
	}
}

// putLease writes the lease of group in cluster's bucket as a run of
// update-group would have left it.
func putLease(t *testing.T, endpoint, cluster, group, id string) {
	t.Helper()
	ctx := context.Background()
	cfg, s3c, _ := motoClients(t, endpoint)
	res, err := cloudformation.NewFromConfig(cfg).DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{
		StackName: aws.String(cluster), LogicalResourceId: aws.String(names.ResourceBucket)})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(lease.Record{ID: id, Kind: lease.KindGroup, Group: group, Holder: "ci@host (pid 1)",
		Command: "update-group -n " + group + " -j " + cluster, Started: time.Now(), TTLSeconds: 90})
	_, err = s3c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: res.StackResourceDetail.PhysicalResourceId, Key: aws.String(lease.Group(group).Key()), Body: bytes.NewReader(rec)})
	if err != nil {
		t.Fatal(err)
	}
}

// putParameters creates the parameters secrets are declared from. It
// overwrites, so that a put the SDK sends again after moto carried it out
// (its answer lost) does not fail the test.
func putParameters(t *testing.T, endpoint string, names ...string) {
	t.Helper()
	cfg, _, _ := motoClients(t, endpoint)
	for _, n := range names {
		if _, err := ssm.NewFromConfig(cfg).PutParameter(context.Background(), &ssm.PutParameterInput{
			Name: aws.String(n), Value: aws.String("v"), Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
}

func motoClients(t *testing.T, endpoint string) (aws.Config, *s3.Client, *ec2.Client) {
	t.Helper()
	cfg, err := motoserver.Config(context.Background(), endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }), ec2.NewFromConfig(cfg)
}

// runningNodes lists the running instances of a cluster by group.
func runningNodes(ctx context.Context, api *ec2.Client, cluster string) (map[string][]string, error) {
	out, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + names.TagCluster), Values: []string{cluster}},
		{Name: aws.String("instance-state-name"), Values: []string{"running"}},
	}})
	if err != nil {
		return nil, err
	}
	nodes := map[string][]string{}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			for _, tag := range i.Tags {
				if aws.ToString(tag.Key) == names.TagGroup {
					nodes[aws.ToString(tag.Value)] = append(nodes[aws.ToString(tag.Value)], aws.ToString(i.InstanceId))
				}
			}
		}
	}
	return nodes, nil
}

// instanceOf returns a running instance of a group.
func instanceOf(t *testing.T, endpoint, cluster, group string) string {
	t.Helper()
	_, _, api := motoClients(t, endpoint)
	nodes, err := runningNodes(context.Background(), api, cluster)
	if err != nil || len(nodes[group]) == 0 {
		t.Fatalf("instances of group %s of %s: %v %v", group, cluster, nodes, err)
	}
	return nodes[group][0]
}

// playLeader plays the leader of the managers of cluster until the test
// ends: it publishes the swarm's status snapshot, in which every running
// instance of the cluster is a Ready, active node, every few moments.
func playLeader(t *testing.T, endpoint, cluster string) {
	t.Helper()
	cfg, s3c, api := motoClients(t, endpoint)
	res, err := cloudformation.NewFromConfig(cfg).DescribeStackResource(context.Background(), &cloudformation.DescribeStackResourceInput{
		StackName: aws.String(cluster), LogicalResourceId: aws.String(names.ResourceBucket)})
	if err != nil {
		t.Fatal(err)
	}
	bucket := res.StackResourceDetail.PhysicalResourceId
	publish := func(ctx context.Context) error {
		groups, err := runningNodes(ctx, api, cluster)
		if err != nil {
			return err
		}
		// Each node at its instance's private IP, as the swarm sees it:
		// clusterctl believes no other address.
		ips := map[string]string{}
		out, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
			{Name: aws.String("tag:" + names.TagCluster), Values: []string{cluster}}}})
		if err != nil {
			return err
		}
		for _, r := range out.Reservations {
			for _, i := range r.Instances {
				ips[aws.ToString(i.InstanceId)] = aws.ToString(i.PrivateIpAddress)
			}
		}
		nodes := []map[string]any{}
		for group, ids := range groups {
			for _, id := range ids {
				role, status := "worker", ""
				if group == names.GroupControl {
					role, status = "manager", "leader"
				}
				nodes = append(nodes, map[string]any{"nodeId": strings.Repeat("n", 25), "instanceId": id, "address": ips[id], "role": role, "state": "ready",
					"availability": "active", "managerStatus": status, "runningTasks": 0})
			}
		}
		body, _ := json.Marshal(map[string]any{"version": 1, "cluster": cluster, "time": time.Now().UTC(), "nodes": nodes, "services": []any{}})
		_, err = s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(names.StatusKey), Body: bytes.NewReader(body)})
		return err
	}
	if err := publish(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			publish(ctx) // a failure is retried at the next turn
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// putBackupSnapshot publishes a status snapshot of cluster listing one
// backup, as its leader does.
func putBackupSnapshot(t *testing.T, endpoint, cluster string) {
	t.Helper()
	cfg, s3c, _ := motoClients(t, endpoint)
	res, err := cloudformation.NewFromConfig(cfg).DescribeStackResource(context.Background(), &cloudformation.DescribeStackResourceInput{
		StackName: aws.String(cluster), LogicalResourceId: aws.String(names.ResourceBucket)})
	if err != nil {
		t.Fatal(err)
	}
	taken := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
	body, _ := json.Marshal(map[string]any{"version": 1, "cluster": cluster, "time": time.Now().UTC(), "nodes": []any{}, "services": []any{},
		"backups": []any{map[string]any{"key": names.BackupKey(taken, "i-0123456789abcdef0"), "size": 1024, "time": taken, "swarm": "s1", "managers": 1, "takenBy": "i-0123456789abcdef0", "cluster": cluster}}})
	if _, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: res.StackResourceDetail.PhysicalResourceId, Key: aws.String(names.StatusKey), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

// putLogEvent writes one event to a stream of a log group, as a node would.
func putLogEvent(t *testing.T, endpoint, group, stream, message string) {
	t.Helper()
	ctx := context.Background()
	cfg, _, _ := motoClients(t, endpoint)
	cw := cloudwatchlogs.NewFromConfig(cfg)
	if _, err := cw.CreateLogStream(ctx, &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream)}); err != nil {
		t.Fatal(err)
	}
	_, err := cw.PutLogEvents(ctx, &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream),
		LogEvents: []cwtypes.InputLogEvent{{Message: aws.String(message), Timestamp: aws.Int64(time.Now().UnixMilli())}}})
	if err != nil {
		t.Fatal(err)
	}
}
