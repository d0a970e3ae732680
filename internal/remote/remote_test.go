package remote

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

	"github.com/clusterctl/clusterctl/internal/errs"
)

func TestCheckDocker(t *testing.T) {
	for _, c := range []struct {
		args     []string
		stdinTTY bool
		refused  bool
	}{
		{[]string{"node", "ls"}, false, false},
		{[]string{"--context", "x", "node", "ls"}, false, false},
		{[]string{"service", "create", "--name", "web", "-t", "busybox"}, false, false}, // -t is not a TTY to service create
		{[]string{"exec", "-it", "c1", "sh"}, false, true},
		{[]string{"exec", "-ti", "c1", "sh"}, false, true},
		{[]string{"container", "exec", "--tty", "c1", "sh"}, false, true},
		{[]string{"exec", "-i", "c1", "sh"}, true, true},
		{[]string{"exec", "-i", "c1", "sh"}, false, false},
		{[]string{"exec", "-e", "A=1", "c1", "ls", "-t"}, false, false}, // -t is ls's
		{[]string{"exec", "-u", "root", "-t", "c1", "sh"}, false, true},
		{[]string{"run", "--rm", "-d", "busybox", "top", "-t"}, false, false},
		{[]string{"run", "--name", "x", "-dit", "busybox"}, false, true},
		{[]string{"run", "--tty=false", "busybox"}, false, false},
		{[]string{"attach", "c1"}, false, true},
		{[]string{"logs", "-f", "c1"}, false, true},
		{[]string{"logs", "--tail", "5", "c1"}, false, false},
		{[]string{"service", "logs", "--follow", "web"}, false, true},
		{[]string{"service", "logs", "-tf", "web"}, false, true},
		{[]string{"service", "logs", "web"}, false, false},
		{[]string{"events"}, false, true},
		{[]string{"events", "--since", "1h", "--until", "0s"}, false, false},
		{[]string{"stats"}, false, true},
		{[]string{"stats", "--no-stream"}, false, false},
		{[]string{"login", "registry"}, false, true},
		{[]string{"login", "-u", "me", "--password-stdin", "registry"}, false, false},
		{[]string{"stack", "deploy", "-c", "-", "app"}, false, false},
		{nil, false, true},
		{[]string{"--debug"}, false, true},
	} {
		err := CheckDocker(c.args, c.stdinTTY)
		if (err != nil) != c.refused {
			t.Errorf("CheckDocker(%q, tty %v) = %v, refused want %v", c.args, c.stdinTTY, err, c.refused)
		}
		if err != nil && errs.ExitCode(err) != errs.ExitUsage {
			t.Errorf("CheckDocker(%q): exit %d, want 2", c.args, errs.ExitCode(err))
		}
		if err != nil && len(c.args) > 1 && !strings.Contains(err.Error(), "clusterctl shell") {
			t.Errorf("CheckDocker(%q) = %v, want a pointer to clusterctl shell", c.args, err)
		}
	}
}

// fakeDocker puts a docker on PATH that prints each argument on a line
// of its own, then its standard input, and exits with $DOCKER_EXIT.
func fakeDocker(t *testing.T) []string {
	dir := t.TempDir()
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\necho ---\ncat\nexit ${DOCKER_EXIT:-0}\n"
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
}

// The script passes every argument as one word, whatever it holds, and
// nothing typed reaches the parameters in a form Systems Manager resolves
// ({{ssm:NAME}}) or the shell re-reads.
func TestScriptQuotesEveryArgument(t *testing.T) {
	env := fakeDocker(t)
	args := []string{"service", "create", "--name", "it's here", "--env", `A="b c" $HOME` + "`id`", "a\nb", "", "*", "--label", "x=$(echo no)", `back\slash`, "tab\there",
		"--env", "D={{ssm:/prod/db}}", "--env", "S={{ssm-secure:/prod/pw}}", "trailing\n\n", "x'; id; echo '", "-"}
	script := Script(args, "b", nil, "r")
	if strings.Contains(script, "{{") || strings.Contains(script, "id;") || strings.Contains(script, "$(echo") {
		t.Errorf("the script carries what was typed:\n%s", script)
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	var want strings.Builder
	for _, a := range args {
		want.WriteString("[" + a + "]\n")
	}
	want.WriteString("---\n")
	if string(out) != want.String() {
		t.Errorf("docker saw\n%q\nwant\n%q", out, want.String())
	}
}

func TestScriptExitsWithDockersStatus(t *testing.T) {
	env := append(fakeDocker(t), "DOCKER_EXIT=3")
	cmd := exec.Command("sh", "-c", Script([]string{"service", "rm", "nope"}, "b", nil, "r"))
	cmd.Env = env
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("script exit = %v, want 3", err)
	}
}

// fakeSSM plays Systems Manager and the agent: the invocation ends as
// finish says, after polls polls.
type fakeSSM struct {
	mu        sync.Mutex
	sent      []*ssm.SendCommandInput
	cancelled []string
	polls     int
	finish    func(in *ssm.SendCommandInput) *ssm.GetCommandInvocationOutput // nil: runs for ever
	s3        *fakeS3
}

func (f *fakeSSM) SendCommand(_ context.Context, in *ssm.SendCommandInput, _ ...func(*ssm.Options)) (*ssm.SendCommandOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, in)
	return &ssm.SendCommandOutput{Command: &ssmtypes.Command{CommandId: aws.String("cmd-1")}}, nil
}

func (f *fakeSSM) GetCommandInvocation(_ context.Context, in *ssm.GetCommandInvocationInput, _ ...func(*ssm.Options)) (*ssm.GetCommandInvocationOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls++
	if f.polls == 1 {
		return nil, &smithy.GenericAPIError{Code: "InvocationDoesNotExist"}
	}
	if len(f.cancelled) > 0 {
		return &ssm.GetCommandInvocationOutput{Status: ssmtypes.CommandInvocationStatusCancelled, ResponseCode: -1}, nil
	}
	if f.finish == nil || f.polls < 3 {
		return &ssm.GetCommandInvocationOutput{Status: ssmtypes.CommandInvocationStatusInProgress, ResponseCode: -1}, nil
	}
	return f.finish(f.sent[0]), nil
}

func (f *fakeSSM) CancelCommand(_ context.Context, in *ssm.CancelCommandInput, _ ...func(*ssm.Options)) (*ssm.CancelCommandOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, aws.ToString(in.CommandId))
	return &ssm.CancelCommandOutput{}, nil
}

// fakeS3 is a versioned bucket: a put adds a version, a delete without a
// version adds a delete marker, a delete with one removes it.
type fakeS3 struct {
	mu       sync.Mutex
	objects  map[string][]byte // the current versions
	versions map[string][]string
	puts     []string
	seq      int
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b, _ := io.ReadAll(in.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	k := aws.ToString(in.Key)
	f.objects[k] = b
	f.puts = append(f.puts, k)
	f.addVersion(k)
	return &s3.PutObjectOutput{VersionId: aws.String(f.versions[k][len(f.versions[k])-1])}, nil
}

func (f *fakeS3) addVersion(k string) {
	if f.versions == nil {
		f.versions = map[string][]string{}
	}
	f.seq++
	f.versions[k] = append(f.versions[k], fmt.Sprintf("v%d", f.seq))
}

func (f *fakeS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.objects[aws.ToString(in.Key)]
	if !ok {
		return nil, &s3types.NoSuchKey{}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b))}, nil
}

func (f *fakeS3) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := aws.ToString(in.Key)
	if in.VersionId == nil {
		delete(f.objects, k)
		f.addVersion(k)
		return &s3.DeleteObjectOutput{}, nil
	}
	f.versions[k] = slices.DeleteFunc(f.versions[k], func(v string) bool { return v == aws.ToString(in.VersionId) })
	if len(f.versions[k]) == 0 {
		delete(f.versions, k)
		delete(f.objects, k)
	}
	return &s3.DeleteObjectOutput{}, nil
}

// ListObjectVersions answers one version a page, as a long listing would.
func (f *fakeS3) ListObjectVersions(_ context.Context, in *s3.ListObjectVersionsInput, _ ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []s3types.ObjectVersion
	for k, vs := range f.versions {
		if strings.HasPrefix(k, aws.ToString(in.Prefix)) {
			for _, v := range vs {
				all = append(all, s3types.ObjectVersion{Key: aws.String(k), VersionId: aws.String(v)})
			}
		}
	}
	slices.SortFunc(all, func(a, b s3types.ObjectVersion) int { return strings.Compare(*a.VersionId, *b.VersionId) })
	all = slices.DeleteFunc(all, func(v s3types.ObjectVersion) bool { return *v.VersionId <= aws.ToString(in.VersionIdMarker) })
	if len(all) > 1 {
		return &s3.ListObjectVersionsOutput{Versions: all[:1], IsTruncated: aws.Bool(true), NextKeyMarker: all[0].Key, NextVersionIdMarker: all[0].VersionId}, nil
	}
	return &s3.ListObjectVersionsOutput{Versions: all}, nil
}

// left is what is left of key in the bucket: its versions.
func (f *fakeS3) left(key string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.versions[key]
}

// pathOf is the last PATH of env.
func pathOf(env []string) string {
	p := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			p = v
		}
	}
	return p
}

// agent runs the script sent with a fake docker, as the SSM agent would,
// writes the output objects where the agent writes them and reports.
func agent(t *testing.T, store *fakeS3, env []string) func(in *ssm.SendCommandInput) *ssm.GetCommandInvocationOutput {
	return func(in *ssm.SendCommandInput) *ssm.GetCommandInvocationOutput {
		script := in.Parameters["commands"][0]
		// The node fetches a large input from the bucket: here from the
		// fake's store, through a stand-in aws.
		dir := t.TempDir()
		if strings.Contains(script, "aws s3api get-object") {
			for k, v := range store.objects {
				if strings.HasSuffix(k, "/stdin") {
					os.WriteFile(filepath.Join(dir, "stdin"), v, 0o644)
				}
			}
			os.WriteFile(filepath.Join(dir, "aws"), []byte("#!/bin/sh\nfor a; do last=$a; done\ncp \""+filepath.Join(dir, "stdin")+"\" \"$last\"\n"), 0o755)
		}
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(env, "PATH="+dir+":"+pathOf(env))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		prefix := aws.ToString(in.OutputS3KeyPrefix)
		if stdout.Len() > 0 {
			store.objects[OutputPath(prefix, "cmd-1", in.InstanceIds[0], "stdout")] = stdout.Bytes()
		}
		if stderr.Len() > 0 {
			store.objects[OutputPath(prefix, "cmd-1", in.InstanceIds[0], "stderr")] = stderr.Bytes()
		}
		status := ssmtypes.CommandInvocationStatusSuccess
		if code != 0 {
			status = ssmtypes.CommandInvocationStatusFailed
		}
		inline := stdout.String()
		if len(inline) > 10 {
			inline = inline[:10]
		}
		return &ssm.GetCommandInvocationOutput{Status: status, ResponseCode: int32(code), StandardOutputContent: aws.String(inline), StandardOutputUrl: aws.String("https://s3/x")}
	}
}

func TestRunSendsOneCommandAndReadsItsOutput(t *testing.T) {
	env := fakeDocker(t)
	store := &fakeS3{objects: map[string][]byte{}}
	api := &fakeSSM{s3: store}
	api.finish = agent(t, store, env)
	r := &Runner{SSM: api, S3: store, Poll: time.Millisecond}
	res, err := r.Run(context.Background(), Docker{Instance: "i-0123456789abcdef0", Args: []string{"node", "ls"}, Bucket: "bkt", Run: "run1", Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(api.sent) != 1 {
		t.Fatalf("sent %d commands", len(api.sent))
	}
	in := api.sent[0]
	if aws.ToString(in.DocumentName) != Document || aws.ToString(in.OutputS3BucketName) != "bkt" || aws.ToString(in.OutputS3KeyPrefix) != "commands/run1" ||
		len(in.InstanceIds) != 1 || in.InstanceIds[0] != "i-0123456789abcdef0" || in.Parameters["executionTimeout"][0] != "3600" {
		t.Errorf("command sent: %+v", in)
	}
	if string(res.Stdout) != "[node]\n[ls]\n---\n" || res.ExitCode != 0 || res.Truncated {
		t.Errorf("result: %+v (stdout %q)", res, res.Stdout)
	}
}

func TestRunReportsTheCommandsExitCode(t *testing.T) {
	env := append(fakeDocker(t), "DOCKER_EXIT=7")
	store := &fakeS3{objects: map[string][]byte{}}
	api := &fakeSSM{s3: store}
	api.finish = agent(t, store, env)
	r := &Runner{SSM: api, S3: store, Poll: time.Millisecond}
	res, err := r.Run(context.Background(), Docker{Instance: "i-1", Args: []string{"service", "rm", "x"}, Bucket: "bkt", Run: "run1", Timeout: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 7 || api.sent[0].Parameters["executionTimeout"][0] != "90" {
		t.Errorf("exit %d, timeout %v", res.ExitCode, api.sent[0].Parameters["executionTimeout"])
	}
}

// A standard input larger than what is sent inline goes through the
// bucket, and is removed once the command ended.
func TestRunSendsALargeInputThroughTheBucket(t *testing.T) {
	env := fakeDocker(t)
	store := &fakeS3{objects: map[string][]byte{}}
	api := &fakeSSM{s3: store}
	api.finish = agent(t, store, env)
	r := &Runner{SSM: api, S3: store, Poll: time.Millisecond}
	big := bytes.Repeat([]byte("services: {}\n"), 1000)
	res, err := r.Run(context.Background(), Docker{Instance: "i-1", Args: []string{"stack", "deploy", "-c", "-", "app"}, Stdin: big, Bucket: "bkt", Run: "run2", Region: "r"})
	if err != nil {
		t.Fatal(err)
	}
	script := api.sent[0].Parameters["commands"][0]
	if len(script) > maxScript || !strings.Contains(script, "--bucket bkt --key commands/run2/stdin --version-id v1") {
		t.Errorf("script of %d bytes:\n%.300s", len(script), script)
	}
	if !bytes.HasSuffix(res.Stdout, big) {
		t.Errorf("docker did not read the whole input: %d bytes of output", len(res.Stdout))
	}
	if left := store.left("commands/run2/stdin"); len(left) != 0 {
		t.Errorf("versions of the input left: %v", left)
	}
}

// The output object missing, the invocation's inline output stands in,
// marked truncated.
func TestRunFallsBackToInlineOutput(t *testing.T) {
	store := &fakeS3{objects: map[string][]byte{}}
	api := &fakeSSM{finish: func(*ssm.SendCommandInput) *ssm.GetCommandInvocationOutput {
		return &ssm.GetCommandInvocationOutput{Status: ssmtypes.CommandInvocationStatusSuccess, StandardOutputContent: aws.String("ID HOSTNAME"), StandardOutputUrl: aws.String("https://s3/x")}
	}}
	r := &Runner{SSM: api, S3: store, Poll: time.Millisecond, OutputWait: 10 * time.Millisecond}
	res, err := r.Run(context.Background(), Docker{Instance: "i-1", Args: []string{"node", "ls"}, Bucket: "bkt", Run: "r"})
	if err != nil || string(res.Stdout) != "ID HOSTNAME" || !res.Truncated {
		t.Fatalf("res %+v, err %v", res, err)
	}
}

func TestCtrlCCancelsTheCommand(t *testing.T) {
	store := &fakeS3{objects: map[string][]byte{}}
	api := &fakeSSM{}
	r := &Runner{SSM: api, S3: store, Poll: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := r.Run(ctx, Docker{Instance: "i-1", Args: []string{"service", "create", "x"}, Bucket: "bkt", Run: "r"})
	if errs.ExitCode(err) != errs.ExitInterrupted || len(api.cancelled) != 1 || api.cancelled[0] != "cmd-1" {
		t.Fatalf("err %v (exit %d), cancelled %v", err, errs.ExitCode(err), api.cancelled)
	}
	if !strings.Contains(err.Error(), "cancelled command cmd-1") {
		t.Errorf("message: %v", err)
	}
}

// An invocation that names no output location (moto's, which runs
// nothing) is not taken for an empty success.
func TestNoOutputLocationIsAnError(t *testing.T) {
	api := &fakeSSM{finish: func(*ssm.SendCommandInput) *ssm.GetCommandInvocationOutput {
		return &ssm.GetCommandInvocationOutput{Status: ssmtypes.CommandInvocationStatusSuccess}
	}}
	r := &Runner{SSM: api, S3: &fakeS3{objects: map[string][]byte{}}, Poll: time.Millisecond}
	_, err := r.Run(context.Background(), Docker{Instance: "i-1", Args: []string{"node", "ls"}, Bucket: "bkt", Run: "r"})
	if err == nil || !strings.Contains(err.Error(), "names no output") || errs.ExitCode(err) != 1 {
		t.Fatalf("err %v", err)
	}
}

func TestUndeliverableIsAnError(t *testing.T) {
	api := &fakeSSM{finish: func(*ssm.SendCommandInput) *ssm.GetCommandInvocationOutput {
		return &ssm.GetCommandInvocationOutput{Status: ssmtypes.CommandInvocationStatusFailed, StatusDetails: aws.String("Undeliverable"), ResponseCode: -1}
	}}
	r := &Runner{SSM: api, S3: &fakeS3{objects: map[string][]byte{}}, Poll: time.Millisecond}
	_, err := r.Run(context.Background(), Docker{Instance: "i-1", Args: []string{"node", "ls"}, Bucket: "bkt", Run: "r"})
	if err == nil || !strings.Contains(err.Error(), "undeliverable") || errs.ExitCode(err) != 1 {
		t.Fatalf("err %v", err)
	}
}

func TestPluginArgs(t *testing.T) {
	args, err := PluginArgs(&ssm.StartSessionOutput{SessionId: aws.String("s-1"), TokenValue: aws.String("tok"), StreamUrl: aws.String("wss://x")}, "eu-west-1", "prof", "i-1", "https://ssm.eu-west-1.amazonaws.com")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"SessionId":"s-1","StreamUrl":"wss://x","TokenValue":"tok"}`, "eu-west-1", "StartSession", "prof", `{"Target":"i-1"}`, "https://ssm.eu-west-1.amazonaws.com"}
	if strings.Join(args, "|") != strings.Join(want, "|") {
		t.Errorf("args %q", args)
	}
}

// Arguments too long for SendCommand are refused before anything is sent.
func TestRunRefusesOverlongArguments(t *testing.T) {
	api := &fakeSSM{}
	r := &Runner{SSM: api, S3: &fakeS3{objects: map[string][]byte{}}, Poll: time.Millisecond}
	_, err := r.Run(context.Background(), Docker{Instance: "i-1", Args: []string{"config", "create", strings.Repeat("x", maxScript)}, Bucket: "bkt", Run: "r"})
	if errs.ExitCode(err) != errs.ExitUsage || len(api.sent) != 0 {
		t.Fatalf("err %v, sent %d", err, len(api.sent))
	}
}

// Standard input, however small, never goes into the command's
// parameters (Run Command keeps them, readable with ssm:ListCommands):
// it goes through the bucket, and every version of it is deleted once
// the command ended, whether it succeeded, failed or was interrupted.
func TestStdinNeverInTheParameters(t *testing.T) {
	secret := "pw-Sup3rSecret"
	for _, tc := range []struct {
		name      string
		interrupt bool
		code      string
	}{{"success", false, "0"}, {"failure", false, "3"}, {"ctrl-c", true, "0"}} {
		t.Run(tc.name, func(t *testing.T) {
			env := append(fakeDocker(t), "DOCKER_EXIT="+tc.code)
			store := &fakeS3{objects: map[string][]byte{}}
			api := &fakeSSM{s3: store}
			if !tc.interrupt {
				api.finish = agent(t, store, env)
			}
			r := &Runner{SSM: api, S3: store, Poll: time.Millisecond}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.interrupt {
				go func() { time.Sleep(50 * time.Millisecond); cancel() }()
			}
			res, err := r.Run(ctx, Docker{Instance: "i-1", Args: []string{"secret", "create", "db", "-"}, Stdin: []byte(secret), Bucket: "bkt", Run: "run3", Region: "r"})
			if tc.interrupt {
				if errs.ExitCode(err) != errs.ExitInterrupted {
					t.Fatalf("err %v", err)
				}
			} else if err != nil || !strings.HasSuffix(string(res.Stdout), "---\n"+secret) || res.InputLeft != nil {
				t.Fatalf("res %+v, err %v", res, err)
			}
			params := fmt.Sprint(api.sent[0].Parameters, aws.ToString(api.sent[0].Comment))
			for _, enc := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawStdEncoding.EncodeToString([]byte(secret)),
				base64.URLEncoding.EncodeToString([]byte(secret)), hex.EncodeToString([]byte(secret))} {
				if strings.Contains(params, enc) {
					t.Errorf("the parameters hold %q:\n%s", enc, params)
				}
			}
			if len(store.puts) != 1 || store.puts[0] != "commands/run3/stdin" {
				t.Errorf("put %v", store.puts)
			}
			if left := store.left("commands/run3/stdin"); len(left) != 0 {
				t.Errorf("versions of the input left: %v", left)
			}
		})
	}
}

// What is refused is refused before anything is uploaded or sent (exit
// 2); the arguments and the standard input have limits of their own.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		stdin   int
		timeout time.Duration
		refused string
	}{
		{"plain", []string{"node", "ls"}, 0, 0, ""},
		{"a long argument and a long input, each within its limit", []string{"config", "create", strings.Repeat("x", 5000), "-"}, 8000, 0, ""},
		{"a large input", []string{"stack", "deploy", "-c", "-", "app"}, 1 << 20, 0, ""},
		{"arguments too long", []string{"config", "create", strings.Repeat("x", maxScript)}, 10, 0, "too long"},
		{"not UTF-8", []string{"service", "create", "--env", "A=\xff\xfe", "nginx"}, 10, 0, "not valid UTF-8"},
		{"48 hours", []string{"node", "ls"}, 0, 48 * time.Hour, ""},
		{"over 48 hours", []string{"node", "ls"}, 10, 48*time.Hour + time.Second, "--timeout 48h0m1s is above"},
		{"49 hours", []string{"node", "ls"}, 10, 49 * time.Hour, "--timeout 49h is above Run Command's longest execution timeout, 48h"},
		{"48h30m", []string{"node", "ls"}, 10, 48*time.Hour + 30*time.Minute, "--timeout 48h30m is above"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeS3{objects: map[string][]byte{}}
			api := &fakeSSM{finish: func(*ssm.SendCommandInput) *ssm.GetCommandInvocationOutput {
				return &ssm.GetCommandInvocationOutput{Status: ssmtypes.CommandInvocationStatusSuccess, StandardOutputUrl: aws.String("https://s3/x")}
			}}
			r := &Runner{SSM: api, S3: store, Poll: time.Millisecond}
			var stdin []byte
			if tc.stdin > 0 {
				stdin = bytes.Repeat([]byte("y"), tc.stdin)
			}
			err := Check(tc.args, tc.timeout)
			_, runErr := r.Run(context.Background(), Docker{Instance: "i-1", Args: tc.args, Stdin: stdin, Bucket: "bkt", Run: "r", Timeout: tc.timeout})
			if tc.refused == "" {
				if err != nil || runErr != nil {
					t.Fatalf("refused: %v, %v", err, runErr)
				}
				return
			}
			for _, e := range []error{err, runErr} {
				if e == nil || errs.ExitCode(e) != errs.ExitUsage || !strings.Contains(e.Error(), tc.refused) {
					t.Errorf("err %v, want exit 2 with %q", e, tc.refused)
				}
			}
			if len(store.puts) != 0 || len(api.sent) != 0 {
				t.Errorf("put %v, sent %d", store.puts, len(api.sent))
			}
		})
	}
}
