package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"

	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/spec"
)

func logsClient(t *testing.T) *cloudwatchlogs.Client {
	t.Helper()
	return cloudwatchlogs.NewFromConfig(motoConfig(t))
}

// putEvents writes events to a stream of group as an engine would, the
// stream created first when it is new.
func putEvents(t *testing.T, cw *cloudwatchlogs.Client, group, stream string, at time.Time, messages ...string) {
	t.Helper()
	ctx := context.Background()
	_, err := cw.CreateLogStream(ctx, &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream)})
	var exists *types.ResourceAlreadyExistsException
	if err != nil && !errors.As(err, &exists) {
		t.Fatal(err)
	}
	var evs []types.InputLogEvent
	for i, m := range messages {
		evs = append(evs, types.InputLogEvent{Message: aws.String(m), Timestamp: aws.Int64(at.Add(time.Duration(i) * time.Millisecond).UnixMilli())})
	}
	if _, err := cw.PutLogEvents(ctx, &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String(stream), LogEvents: evs}); err != nil {
		t.Fatal(err)
	}
}

// The core owns its log group, with the retention asked for; clusterctl
// logs reads a service's tasks interleaved by time, each line saying task
// and node, a node's own lines and containers, and filters by time and
// pattern; -o json prints one object per event.
func TestLogs(t *testing.T) {
	parallel(t)
	resetMoto(t)
	must(t, "create-core", "core", "-q", "--log-retention-days", "14")
	cw := logsClient(t)
	out, err := cw.DescribeLogGroups(context.Background(), &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: aws.String("/clusterctl/core")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.LogGroups) != 1 || aws.ToString(out.LogGroups[0].LogGroupName) != "/clusterctl/core" || aws.ToInt32(out.LogGroups[0].RetentionInDays) != 14 {
		t.Fatalf("log groups %+v, want /clusterctl/core kept 14 days", out.LogGroups)
	}
	if o := outputs(describeStack(t, newClients(t), "core")); o["LogGroupName"] != "/clusterctl/core" || o["LogDriver"] != "awslogs" {
		t.Errorf("outputs %v", o)
	}

	const group, a, b = "/clusterctl/core", "i-0aaaaaaaaaaaaaaaa", "i-0bbbbbbbbbbbbbbbb"
	old := time.Now().Add(-time.Hour)
	now := time.Now().Add(-time.Minute)
	putEvents(t, cw, group, "service/web/web.1.t1@"+a, old, "web one old")
	putEvents(t, cw, group, "service/web/web.2.t2@"+b, now, "web two GET /")
	putEvents(t, cw, group, "service/web/web.1.t1@"+a, now.Add(time.Second), "web one GET /health")
	putEvents(t, cw, group, "service/webapi/webapi.1.t3@"+a, now, "webapi, not web")
	putEvents(t, cw, group, "node/"+a, now.Add(2*time.Second), "drained i-0ccc")
	putEvents(t, cw, group, "container/builder@"+b, now, "builder on b")

	r := must(t, "logs", "-j", "core", "web")
	want := "web.1.t1@" + a + " | web one old\n" + "web.2.t2@" + b + " | web two GET /\n" + "web.1.t1@" + a + " | web one GET /health\n"
	if r.stdout != want {
		t.Errorf("logs web:\n%s\nwant:\n%s", r.stdout, want)
	}
	r = must(t, "logs", "-j", "core", "web", "--since", "10m")
	if strings.Contains(r.stdout, "old") || strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("--since 10m:\n%s", r.stdout)
	}
	r = must(t, "logs", "-j", "core", "web", "--until", old.Add(time.Minute).UTC().Format(time.RFC3339))
	if r.stdout != "web.1.t1@"+a+" | web one old\n" {
		t.Errorf("--until:\n%s", r.stdout)
	}
	r = must(t, "logs", "-j", "core", "web", "--grep", "health")
	if r.stdout != "web.1.t1@"+a+" | web one GET /health\n" {
		t.Errorf("--grep health:\n%s", r.stdout)
	}
	r = must(t, "logs", "-j", "core", "--node", a, "--since", "10m")
	want = "web.1.t1@" + a + " | web one GET /health\n" + "clusterctl@" + a + " | drained i-0ccc\n"
	if !strings.Contains(r.stdout, "webapi.1.t3@"+a+" | webapi, not web\n") || !strings.HasSuffix(r.stdout, want) || strings.Contains(r.stdout, b) {
		t.Errorf("--node %s:\n%s", a, r.stdout)
	}
	r = must(t, "logs", "-j", "core", "web", "--tail", "1", "-o", "json")
	var ev map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil || ev["message"] != "web one GET /health" || ev["task"] != "web.1.t1" ||
		ev["node"] != a || ev["service"] != "web" || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("--tail 1 -o json: %s (%v)", r.stdout, err)
	}
	r = must(t, "logs", "-j", "core", "--grep", "GET", "-o", "json", "--query", ".message")
	if r.stdout != "\"web two GET /\"\n\"web one GET /health\"\n" {
		t.Errorf("--query .message:\n%s", r.stdout)
	}

	// Streams under the role of the node that wrote them (an older
	// node's have none, above) are read alike; a message's control
	// characters reach the terminal escaped, and -o json keeps them. An
	// agents' stream naming a manager (c has a managers' stream) is not
	// shown as the manager's.
	const c, d = "i-0cccccccccccccccc", "i-0dddddddddddddddd"
	putEvents(t, cw, group, "managers/node/"+c, now, "a decision of the leader")
	putEvents(t, cw, group, "agents/node/"+c, now.Add(time.Second), "clusterctl: forged by an agent")
	putEvents(t, cw, group, "agents/container/evil@"+d, now.Add(time.Second), "\x1b]0;owned\x07\x1b[2Jred\rclusterctl@"+c+" | forged\n")
	r = must(t, "logs", "-j", "core", "--node", c)
	if want = "clusterctl@" + c + " | a decision of the leader\n"; r.stdout != want {
		t.Errorf("--node %s:\n%q\nwant:\n%q", c, r.stdout, want)
	}
	r = must(t, "logs", "-j", "core", "--node", d)
	if want = "evil@" + d + ` | \x1b]0;owned\x07\x1b[2Jred\x0dclusterctl@` + c + " | forged\n"; r.stdout != want {
		t.Errorf("--node %s:\n%q\nwant:\n%q", d, r.stdout, want)
	}
	r = must(t, "logs", "-j", "core", "--node", d, "--tail", "1", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil || ev["message"] != "\x1b]0;owned\x07\x1b[2Jred\rclusterctl@"+c+" | forged" || ev["role"] != "agents" {
		t.Errorf("--node %s --tail 1 -o json: %s (%v)", d, r.stdout, err)
	}

	// Bad input: exit 2, no AWS call needed.
	for _, args := range [][]string{
		{"logs", "-j", "core", "--since", "yesterday"},
		{"logs", "-j", "core", "--node", "web-1"},
		{"logs", "-j", "core", "we b"},
		{"logs", "-j", "core", "--tail", "-1"},
		{"logs", "-j", "core", "--since", "1m", "--until", "1h"},
	} {
		if r := clusterctl(t, args...); r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: %s", args, r)
		}
	}
	// Nothing found is said on stderr, with what was asked; stdout stays empty.
	if r := must(t, "logs", "-j", "core", "db", "--since", "2026-01-02T03:04:05Z", "--until", "2026-01-02T03:05:05Z"); r.stdout != "" || r.stderr != "No events of service db of cluster core since 2026-01-02T03:04:05Z\n" {
		t.Errorf("logs with no events: %s", r)
	}
	if r := must(t, "logs", "-j", "core", "web", "--grep", "nothing-like-this"); r.stdout != "" || r.stderr != "No events of service web of cluster core matching \"nothing-like-this\" in its log group\n" {
		t.Errorf("logs with no events: %s", r)
	}
	if r := clusterctl(t, "logs", "-j", "nosuch"); r.code != 1 || !strings.Contains(r.stderr, `cluster "nosuch" not found`) {
		t.Errorf("unknown cluster: %s", r)
	}

	// The log group goes with the core.
	must(t, "delete-core", "core", "--yes", "-q")
	out, err = cw.DescribeLogGroups(context.Background(), &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: aws.String("/clusterctl/core")})
	if err != nil || len(out.LogGroups) != 0 {
		t.Errorf("after delete-core, log groups %+v (%v)", out.LogGroups, err)
	}
}

// --follow prints an event written after it started, exactly once, and
// Ctrl-C ends it with exit code 130.
func TestLogsFollow(t *testing.T) {
	parallel(t)
	resetMoto(t)
	must(t, "create-core", "core", "-q")
	cw := logsClient(t)
	const group, node = "/clusterctl/core", "i-0aaaaaaaaaaaaaaaa"
	putEvents(t, cw, group, "service/web/web.1.t1@"+node, time.Now().Add(-time.Second), "before")

	cmd := exec.Command(binary, "logs", "-j", "core", "web", "--follow")
	cmd.Env = envOf(t)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string) string {
		select {
		case l := <-lines:
			return l
		case <-time.After(30 * time.Second):
			t.Fatalf("no line while waiting for %s; stderr: %s", what, stderr.String())
		}
		return ""
	}
	if l := next("the event written before"); l != "web.1.t1@"+node+" | before" {
		t.Fatalf("first line %q", l)
	}
	putEvents(t, cw, group, "service/web/web.2.t2@"+node, time.Now(), "after")
	if l := next("the event written after"); l != "web.2.t2@"+node+" | after" {
		t.Fatalf("second line %q", l)
	}
	// Several polls later (their back-off starts at a second), nothing
	// came twice.
	time.Sleep(4 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130; stderr: %s", err, stderr.String())
	}
	if len(rest) != 0 {
		t.Errorf("lines after the second: %q", rest)
	}
	_, _ = io.Copy(io.Discard, stdout)
}

// A cluster made before clusterctl had log groups: update-core adds its
// log group, and update-group's plan says the nodes are replaced to log
// there, which applying it does.
func TestLogsOnExistingCluster(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()
	must(t, "create-core", "core", "-q")
	stripLogs(t, c, "core")
	cw := logsClient(t)
	if out, err := cw.DescribeLogGroups(ctx, &cloudwatchlogs.DescribeLogGroupsInput{}); err != nil || len(out.LogGroups) != 0 {
		t.Fatalf("the old core has log groups %+v (%v)", out.LogGroups, err)
	}
	must(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-q")
	if r := clusterctl(t, "logs", "-j", "core"); r.code != 1 || !strings.Contains(r.stderr, "has no log group yet: add it with `clusterctl update-core core`") {
		t.Errorf("logs of a core without a log group: %s", r)
	}

	r := must(t, "update-core", "core", "--yes", "-q")
	if !strings.Contains(r.stdout, "LogGroup") {
		t.Errorf("update-core plan does not name the log group:\n%s", r.stdout)
	}
	out, err := cw.DescribeLogGroups(ctx, &cloudwatchlogs.DescribeLogGroupsInput{})
	if err != nil || len(out.LogGroups) != 1 || aws.ToString(out.LogGroups[0].LogGroupName) != "/clusterctl/core" || aws.ToInt32(out.LogGroups[0].RetentionInDays) != 30 {
		t.Fatalf("after update-core, log groups %+v (%v)", out.LogGroups, err)
	}

	// moto leaves a stack's outputs as they were when it executes a change
	// set; CloudFormation does not. The test plays its part.
	refreshOutputs(t, c, "core", render.DefaultImageParameter("t3.medium"))
	if o := outputs(describeStack(t, c, "core")); o["LogGroupName"] != "/clusterctl/core" || o["LogDriver"] != "awslogs" {
		t.Fatalf("outputs after update-core: %v", o)
	}
	r = must(t, "update-group", "-n", "g", "-j", "core", "--dry-run")
	for _, want := range []string{"join.logs", "(none)", "awslogs to /clusterctl/core",
		"The nodes' engines log awslogs to /clusterctl/core instead of (none) (the core's log settings): the rolling update replaces the nodes"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("update-group plan lacks %q:\n%s", want, r)
		}
	}
	must(t, "update-group", "-n", "g", "-j", "core", "--yes", "-q")
	if r := must(t, "update-group", "-n", "g", "-j", "core", "--dry-run"); strings.Contains(r.stdout, "join.logs") {
		t.Errorf("after update-group the plan still changes the logs:\n%s", r.stdout)
	}
}

// stripLogs makes the core stack what a clusterctl without log groups
// deployed: no log group, no log parameters or outputs. (Its bucket is a
// new one: the old one is retained, empty.)
func stripLogs(t *testing.T, c clients, stack string) {
	t.Helper()
	ctx := context.Background()
	tout, err := c.cfn.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String(stack)})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(aws.ToString(tout.TemplateBody)), &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"LogRetentionDays", "LogKmsKey", "LogDriver"} {
		delete(doc["Parameters"].(map[string]any), p)
	}
	delete(doc["Conditions"].(map[string]any), "HasLogKmsKey")
	res := doc["Resources"].(map[string]any)
	delete(res, "LogGroup")
	delete(res, "LogsPolicy")
	delete(res, "AgentLogsPolicy")
	res["ManagerGroup"].(map[string]any)["DependsOn"] = []any{"LifecycleRule", "LifecycleQueuePolicy"}
	delete(doc["Outputs"].(map[string]any), "LogGroupName")
	delete(doc["Outputs"].(map[string]any), "LogDriver")
	body, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	// The managers' settings name the driver (a JSON string: \n escaped).
	body = []byte(strings.ReplaceAll(string(body), `\nLOG_DRIVER=${LogDriver}`, ""))
	st := describeStack(t, c, stack)
	var params []cfntypes.Parameter
	for _, p := range st.Parameters {
		switch aws.ToString(p.ParameterKey) {
		case "LogRetentionDays", "LogKmsKey", "LogDriver":
		case "ImageParameter": // reported resolved
			params = append(params, cfntypes.Parameter{ParameterKey: p.ParameterKey, ParameterValue: aws.String(render.DefaultImageParameter("t3.medium"))})
		case "SubnetIds", "PublicSubnetIds", "Operators": // reported as a Python list
			params = append(params, cfntypes.Parameter{ParameterKey: p.ParameterKey, ParameterValue: aws.String(strings.Join(spec.SplitList(aws.ToString(p.ParameterValue)), ","))})
		default:
			params = append(params, cfntypes.Parameter{ParameterKey: p.ParameterKey, ParameterValue: p.ParameterValue})
		}
	}
	// Deleted and created again: the stack as it was first created.
	if _, err := c.cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(stack)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(stack), TemplateBody: aws.String(string(body)),
		Parameters: params, Tags: st.Tags, Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam}}); err != nil {
		t.Fatal(err)
	}
}
