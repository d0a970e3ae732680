package bootstrap

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/motoserver"
	"github.com/clusterctl/clusterctl/internal/render"
)

const region = "us-east-1"

// endpoint is the moto server's URL, set by TestMain.
var endpoint string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// Never a silent skip: without these the scripts cannot be run.
	for _, tool := range []string{"bash", "aws", "curl", "python3", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "bootstrap: FAIL: %s not found on PATH (the AWS CLI: pip install awscli)\n", tool)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "clusterctl-bootstrap")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bootstrap:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	logf, err := os.Create(filepath.Join(dir, "moto.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bootstrap:", err)
		return 1
	}
	defer logf.Close()
	moto, err := motoserver.Start(logf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bootstrap: FAIL:", err)
		return 1
	}
	defer moto.Close()
	endpoint = moto.URL
	return m.Run()
}

func awsConfig(t *testing.T) aws.Config {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion(region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("testing", "testing", "")),
		config.WithBaseEndpoint(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func s3Client(t *testing.T) *s3.Client {
	t.Helper()
	return s3.NewFromConfig(awsConfig(t), func(o *s3.Options) {
		o.UsePathStyle = true
		o.DisableLogOutputChecksumValidationSkipped = true
	})
}

// newBucket creates an empty bucket named after the test.
func newBucket(t *testing.T, c *s3.Client) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	name = strings.Trim(name[:min(len(name), 50)], "-") + "-" + fmt.Sprint(time.Now().UnixNano()%1e6)
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
	return name
}

func getObject(t *testing.T, c *s3.Client, bucket, key string) (body []byte, sse string) {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("reading s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, string(out.ServerSideEncryption)
}

func listKeys(t *testing.T, c *s3.Client, bucket string) []string {
	t.Helper()
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// swarm is the material of one Docker swarm as the control node's engine
// would create it: a root CA certificate, and a worker join token in
// swarmkit's format that carries the certificate's SHA-256 digest.
type swarm struct {
	dir       string // shared by the engines of every node: the "network"
	ca, token string
}

func newSwarm(t *testing.T) *swarm {
	t.Helper()
	der := make([]byte, 300)
	if _, err := rand.Read(der); err != nil {
		t.Fatal(err)
	}
	ca := "-----BEGIN CERTIFICATE-----\n" + wrap(base64.StdEncoding.EncodeToString(der), 64) + "-----END CERTIFICATE-----\n"
	s := &swarm{dir: t.TempDir(), ca: ca, token: joinToken(t, ca)}
	s.write(t, "ca.pem", s.ca)
	s.write(t, "token", s.token)
	return s
}

func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	return b.String() + s + "\n"
}

// joinToken builds a worker token as swarmkit does: SWMTKN-1-<SHA-256 of
// the CA certificate in base 36, 50 digits>-<random secret, 25 digits>.
func joinToken(t *testing.T, ca string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(ca))
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	pad := func(s string, n int) string { return strings.Repeat("0", n-len(s)) + s }
	return "SWMTKN-1-" + pad(new(big.Int).SetBytes(sum[:]).Text(36), 50) + "-" + pad(new(big.Int).SetBytes(secret).Text(36), 25)
}

func (s *swarm) write(t *testing.T, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// node is one instance: its file system root (CLUSTERCTL_ROOT), its
// instance metadata, and stand-ins for the programs the scripts drive, which
// record each call in calls.
type node struct {
	root, bin, state string
	imds             *metadata
	// meta is what the instance metadata serves (path under meta-data/ →
	// value); a test may change it before it starts a script.
	meta map[string]string
	env  []string
}

func newNode(t *testing.T, sw *swarm, ip, instanceType string, env ...string) *node {
	t.Helper()
	dir := t.TempDir()
	n := &node{root: filepath.Join(dir, "root"), bin: filepath.Join(dir, "bin"), state: filepath.Join(dir, "state")}
	for _, d := range []string{n.root, n.bin, n.state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	n.meta = map[string]string{
		"local-ipv4": ip, "instance-type": instanceType, "instance-id": "i-0" + strings.ReplaceAll(ip, ".", ""),
		"instance-life-cycle": "on-demand", "placement/availability-zone": region + "a",
	}
	n.imds = newMetadata(t, n.meta)
	shims := map[string]string{
		"docker":     dockerShim,
		"dnf":        recordShim,
		"systemctl":  recordShim,
		"cfn-signal": recordShim,
	}
	for name, body := range shims {
		body = strings.NewReplacer("@STATE@", n.state, "@SWARM@", sw.dir).Replace(body)
		if err := os.WriteFile(filepath.Join(n.bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	n.env = append(baseEnv(), "PATH="+n.bin+":"+os.Getenv("PATH"),
		"CLUSTERCTL_IMDS_URL="+n.imds.URL, "CLUSTERCTL_ROOT="+n.root)
	n.env = append(n.env, env...)
	return n
}

// baseEnv is this process's environment without AWS or clusterctl settings,
// plus those of the test endpoint.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "CLUSTERCTL_") {
			env = append(env, kv)
		}
	}
	return append(env, "AWS_ENDPOINT_URL="+endpoint, "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true")
}

// calls returns the recorded calls of program, one per line, arguments
// shell-quoted.
func (n *node) calls(t *testing.T, program string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.state, "calls"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(l, program+" ") {
			out = append(out, strings.TrimPrefix(l, program+" "))
		}
	}
	return out
}

func (n *node) file(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// script writes a script into the node, executable, and returns its path.
func (n *node) script(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(n.state, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// run is one execution of a script.
type run struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	done   chan struct{}
	err    error
	cancel context.CancelFunc
}

// start executes path on the node, as cloud-init does, in the background.
func (n *node) start(t *testing.T, path string) *run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	r := &run{cmd: exec.CommandContext(ctx, path), out: &syncBuffer{}, done: make(chan struct{}), cancel: cancel}
	r.cmd.Env = n.env
	r.cmd.Dir = n.state
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", path, err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// wait returns the exit code and output of a run.
func (r *run) wait(t *testing.T) (int, string) {
	t.Helper()
	<-r.done
	r.cancel()
	var ee *exec.ExitError
	switch {
	case r.err == nil:
		return 0, r.out.String()
	case errors.As(r.err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode(), r.out.String()
	}
	t.Fatalf("running %s: %v\n%s", r.cmd.Path, r.err, r.out)
	return -1, ""
}

// exec runs path on the node and waits for it.
func (n *node) exec(t *testing.T, path string) (int, string) {
	t.Helper()
	return n.start(t, path).wait(t)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// metadata is an instance metadata service that, like EC2's with
// HttpTokens required, answers only requests carrying a session token.
type metadata struct {
	*httptest.Server
	mu                 sync.Mutex
	tokens, reads, bad int
}

func newMetadata(t *testing.T, items map[string]string) *metadata {
	t.Helper()
	m := &metadata{}
	const token = "imds-session-token"
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if r.URL.Path == "/latest/api/token" {
			if r.Method != http.MethodPut || r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds") == "" {
				m.bad++
				http.Error(w, "", http.StatusBadRequest)
				return
			}
			m.tokens++
			fmt.Fprint(w, token)
			return
		}
		if r.Header.Get("X-aws-ec2-metadata-token") != token {
			m.bad++
			http.Error(w, "", http.StatusUnauthorized)
			return
		}
		v, ok := items[strings.TrimPrefix(r.URL.Path, "/latest/meta-data/")]
		if !ok || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		m.reads++
		fmt.Fprint(w, v)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *metadata) counts() (tokens, reads, bad int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tokens, m.reads, m.bad
}

// recordShim stands in for dnf, systemctl and cfn-signal: it records its
// arguments and succeeds, unless a file fail-<program> exists.
const recordShim = `#!/bin/bash
set -euo pipefail
prog=$(basename "$0")
{ printf '%s' "$prog"; printf ' %q' "$@"; printf '\n'; } >>'@STATE@/calls'
if [ -e "@STATE@/fail-$prog" ]; then
  echo "$prog: failing as the test asked" >&2
  exit 1
fi
`

// dockerShim stands in for the docker CLI and its engine. The node's swarm
// state lives in @STATE@; the swarm itself (CA certificate, valid worker
// token, manager address) in @SWARM@, shared by all nodes.
const dockerShim = `#!/bin/bash
set -euo pipefail
state='@STATE@'
swarm='@SWARM@'
{ printf 'docker'; printf ' %q' "$@"; printf '\n'; } >>"$state/calls"
node_state() { cat "$state/swarm-state" 2>/dev/null || echo inactive; }
case "$1 ${2-}" in
  "info "*)
    case "$*" in
      *LocalNodeState*) node_state ;;
      *ControlAvailable*) if [ -e "$state/manager" ]; then echo true; else echo false; fi ;;
      *) echo "Server Version: 25.0.0" ;;
    esac
    ;;
  "swarm init")
    if [ "$(node_state)" != inactive ]; then
      echo "Error response from daemon: This node is already part of a swarm." >&2
      exit 1
    fi
    if [ -e "$swarm/fail-init" ]; then
      echo "Error response from daemon: could not choose an IP address to advertise" >&2
      exit 1
    fi
    [ "$3" = --advertise-addr ]
    echo active >"$state/swarm-state"
    touch "$state/manager"
    echo "$4" >"$swarm/manager"
    echo "Swarm initialized: current node is now a manager."
    echo "    docker swarm join --token $(cat "$swarm/token") $4:2377"
    ;;
  "swarm join-token")
    [ -e "$state/manager" ] || { echo "Error response from daemon: This node is not a swarm manager." >&2; exit 1; }
    [ "$*" = "swarm join-token -q worker" ]
    cat "$swarm/token"
    ;;
  "swarm ca")
    [ -e "$state/manager" ] || { echo "Error response from daemon: This node is not a swarm manager." >&2; exit 1; }
    cat "$swarm/ca.pem"
    ;;
  "swarm join")
    token= addr= remote=
    shift 2
    while [ $# -gt 0 ]; do
      case $1 in
        --token) token=$2; shift 2 ;;
        --advertise-addr) addr=$2; shift 2 ;;
        *) remote=$1; shift ;;
      esac
    done
    if [ ! -e "$swarm/manager" ] || [ "$remote" != "$(cat "$swarm/manager"):2377" ]; then
      echo "Error response from daemon: Timeout was reached before node joined." >&2
      exit 1
    fi
    if [ "$token" != "$(cat "$swarm/token")" ] || [ -z "$addr" ]; then
      echo "Error response from daemon: rpc error: code = InvalidArgument desc = A valid join token is necessary to join this cluster" >&2
      exit 1
    fi
    echo active >"$state/swarm-state"
    echo "This node joined a swarm as a worker."
    ;;
  *)
    ;;
esac
`

// userData returns the user data of launch template lt in a rendered
// template, resolved as CloudFormation would: stack parameters from the
// rendered parameters, pseudo parameters and the core's bucket from extra.
func userData(t *testing.T, r *render.Rendered, lt string, extra map[string]string) string {
	t.Helper()
	var doc struct {
		Resources map[string]struct {
			Properties struct {
				LaunchTemplateData struct {
					UserData struct {
						Base64 struct {
							Sub string `json:"Fn::Sub"`
						} `json:"Fn::Base64"`
					}
				}
			}
		}
	}
	if err := json.Unmarshal(r.Template, &doc); err != nil {
		t.Fatal(err)
	}
	src := doc.Resources[lt].Properties.LaunchTemplateData.UserData.Base64.Sub
	if src == "" {
		t.Fatalf("no user data in %s", lt)
	}
	out, err := render.ResolveSub(src, func(name string) (string, bool) {
		if v, ok := extra[name]; ok {
			return v, true
		}
		v, ok := r.Parameters[name]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
