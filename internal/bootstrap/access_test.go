package bootstrap

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
)

// accessService is what clusterctl docker, services and list-clusters run
// on: Run Command through the lab's endpoint, whose SSM agent stand-ins
// run the commands on the nodes.
func (tc *testCluster) accessService() *cluster.Clients {
	svc := tc.service()
	svc.RunCommand = ssm.NewFromConfig(awsConfig(), func(o *ssm.Options) { o.BaseEndpoint = aws.String(lab.AWS.URL) })
	return svc
}

// startAgent starts a node's SSM agent stand-in, which uploads output to
// moto as the agent does with the instance's role, and resolves the
// parameters a command names from moto's Parameter Store.
func startAgent(tc *testCluster, n *enginetest.Node) {
	api := ssm.NewFromConfig(awsConfig())
	n.StartSSMAgent(func(ctx context.Context, bucket, key string, body []byte) error {
		_, err := tc.c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
		return err
	}, func(ctx context.Context, name string) (string, error) {
		out, err := api.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.Parameter.Value), nil
	})
}

// clusterctl docker, services and list-clusters on a real swarm: docker
// commands run on the leader through Run Command, with arguments passed
// as words and standard input sent along; the swarm's services come from
// the leader's status snapshot.
func TestDockerOnRealSwarm(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "access")
	g := tc.deployGroup(t, "g", 2, nil)
	control := tc.bootControl(t)
	agents := []*enginetest.Node{g.bootAgent(t, 0), g.bootAgent(t, 1)}
	for _, a := range agents {
		g.readyAgent(t, a)
	}
	for _, n := range append([]*enginetest.Node{control}, agents...) {
		startAgent(tc, n)
	}
	eventually(t, time.Minute, "the swarm's three nodes in the status snapshot", func() (bool, string) {
		b, err := tc.tryObject(names.StatusKey)
		if err != nil {
			return false, err.Error()
		}
		var snap query.Snapshot
		json.Unmarshal(b, &snap)
		return len(snap.Nodes) == 3, fmt.Sprintf("%d nodes", len(snap.Nodes))
	})
	svc := tc.accessService()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run := func(stdin []byte, args ...string) *remoteRun {
		t.Helper()
		res, m, err := cluster.NewNodes(svc).Docker(ctx, cluster.DockerOptions{Cluster: tc.name, Args: args, Stdin: stdin, Poll: 200 * time.Millisecond})
		if err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, control.Logs())
		}
		if !m.Leader || m.InstanceID != tc.control.id {
			t.Errorf("docker %s ran on %+v, want the leader %s", strings.Join(args, " "), m, tc.control.id)
		}
		return &remoteRun{stdout: string(res.Stdout), stderr: string(res.Stderr), code: res.ExitCode}
	}

	// The real swarm's nodes.
	r := run(nil, "node", "ls", "--format", "{{.Hostname}} {{.Status}} {{.ManagerStatus}}")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || !strings.Contains(r.stdout, "Ready Leader") {
		var calls []string
		for _, c := range lab.AWS.Calls() {
			if c.Service == "ssm" {
				calls = append(calls, c.Action)
			}
		}
		t.Fatalf("node ls: %+v; commands %+v; calls %v", r, lab.AWS.RunCommand().Commands(), calls)
	}

	// Arguments with spaces, quotes and what a shell would expand make
	// exactly that service.
	label := `it's a "test" with  spaces; $(touch pwned) *`
	env := `GREETING=hello "world" $HOME` + "\n`id`"
	r = run(nil, "service", "create", "--detach", "--name", "quoted", "--no-resolve-image", "--network", "host",
		"--label", "note="+label, "--env", env, "--constraint", "engine.labels.clusterctl.group==g", enginetest.Image, "sleep", "3600")
	if r.code != 0 {
		t.Fatalf("service create: %+v", r)
	}
	var spec []struct {
		Spec struct {
			Labels       map[string]string
			TaskTemplate struct{ ContainerSpec struct{ Env, Args []string } }
		}
	}
	if err := json.Unmarshal([]byte(dockerOn(t, control, "service", "inspect", "quoted")), &spec); err != nil || len(spec) != 1 {
		t.Fatalf("service inspect: %v", err)
	}
	cs := spec[0].Spec.TaskTemplate.ContainerSpec
	if spec[0].Spec.Labels["note"] != label || len(cs.Env) != 1 || cs.Env[0] != env || strings.Join(cs.Args, "|") != "sleep|3600" {
		t.Errorf("service created: labels %q, env %q, args %q", spec[0].Spec.Labels, cs.Env, cs.Args)
	}

	// A parameter reference typed in an argument reaches docker as typed:
	// Systems Manager (here its stand-in) resolves {{ssm:NAME}} in the
	// command's parameters, where a value that closes the quoting would
	// run as root on the leader.
	pwned := filepath.Join(t.TempDir(), "pwned")
	inject := "x'; touch " + pwned + "; echo '"
	for _, p := range []struct {
		name string
		kind ssmtypes.ParameterType
	}{{"/" + tc.name + "/db", ssmtypes.ParameterTypeString}, {"/" + tc.name + "/pw", ssmtypes.ParameterTypeSecureString}} {
		if _, err := ssm.NewFromConfig(awsConfig()).PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(p.name), Value: aws.String(inject), Type: p.kind}); err != nil {
			t.Fatal(err)
		}
	}
	// (In labels: docker would expand {{ }} in --env as its own template.)
	refs := map[string]string{"d": "{{ssm:/" + tc.name + "/db}}", "s": "{{ssm-secure:/" + tc.name + "/pw}}"}
	r = run(nil, "service", "create", "--detach", "--name", "refs", "--no-resolve-image", "--network", "host", "--label", "d="+refs["d"], "--label", "s="+refs["s"],
		"--constraint", "engine.labels.clusterctl.group==g", enginetest.Image, "sleep", "3600")
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("a parameter's value ran on the leader: %+v", r)
	}
	if r.code != 0 {
		t.Fatalf("service create refs: %+v", r)
	}
	spec = nil
	if err := json.Unmarshal([]byte(dockerOn(t, control, "service", "inspect", "refs")), &spec); err != nil || len(spec) != 1 {
		t.Fatalf("service inspect: %v", err)
	}
	if l := spec[0].Spec.Labels; l["d"] != refs["d"] || l["s"] != refs["s"] {
		t.Errorf("service refs's labels %q, want %q", l, refs)
	}

	// A secret on standard input: through the bucket, never in the
	// command's parameters, and no version of it left once it ran.
	secret := "pw-" + tc.name
	sentBefore := len(lab.AWS.RunCommand().Commands())
	r = run([]byte(secret), "secret", "create", "db", "-")
	if r.code != 0 {
		t.Fatalf("secret create: %+v", r)
	}
	if out := dockerOn(t, control, "secret", "ls", "--format", "{{.Name}}"); out != "db" {
		t.Errorf("secrets: %q", out)
	}
	for _, c := range lab.AWS.RunCommand().Commands()[sentBefore:] {
		params := fmt.Sprint(c.Parameters)
		for _, enc := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawStdEncoding.EncodeToString([]byte(secret))} {
			if strings.Contains(params, enc) {
				t.Errorf("command %s's parameters hold %q", c.ID, enc)
			}
		}
	}
	versions, err := tc.c.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(tc.bucket), Prefix: aws.String(names.CommandPrefix + "/")})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions.Versions {
		if strings.HasSuffix(aws.ToString(v.Key), "/stdin") {
			t.Errorf("left in the bucket: %s (version %s)", aws.ToString(v.Key), aws.ToString(v.VersionId))
		}
	}

	// A compose file on standard input: through the bucket.
	compose := fmt.Sprintf(`version: "3.8"
services:
  web:
    image: %s
    command: ["sleep", "3600"]
    networks: [hostnet]
    deploy:
      replicas: 2
      placement:
        constraints: ["engine.labels.clusterctl.group==g"]
networks:
  hostnet:
    external: true
    name: host
`, enginetest.Image)
	// The node agent fetches it: the node's AWS CLI (the lab's stand-in,
	// first on its PATH) now fails if anything runs it.
	if err := os.WriteFile(filepath.Join(control.Dir(), "bin", "aws"), []byte("#!/bin/sh\necho 'no AWS CLI on this node' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = run([]byte(compose), "stack", "deploy", "--resolve-image", "never", "-c", "-", "app")
	if r.code != 0 || !strings.Contains(r.stdout, "app_web") {
		t.Fatalf("stack deploy: %+v", r)
	}
	eventually(t, 2*time.Minute, "app_web runs its two replicas", func() (bool, string) {
		on := runningOn(serviceTasks(t, control, "app_web"))
		n := 0
		for _, c := range on {
			n += c
		}
		return n == 2, fmt.Sprint(on)
	})

	// A failing command: its code, its error.
	r = run(nil, "service", "rm", "nope")
	if r.code == 0 || !strings.Contains(r.stderr, "nope") {
		t.Errorf("service rm nope: %+v", r)
	}

	// A service that cannot be placed: pending, and services says why.
	r = run(nil, "service", "create", "--detach", "--name", "huge", "--no-resolve-image", "--network", "host", "--reserve-memory", "100000G", enginetest.Image, "sleep", "3600")
	if r.code != 0 {
		t.Fatalf("service create huge: %+v", r)
	}
	var list *cluster.ServiceList
	eventually(t, time.Minute, "services shows the four services", func() (bool, string) {
		var err error
		list, err = cluster.NewInspector(svc).Services(ctx, tc.name, "")
		if err != nil {
			return false, err.Error()
		}
		byName := map[string]query.Service{}
		for _, s := range list.Services {
			byName[s.Name] = s
		}
		q, h, w, refs := byName["quoted"], byName["huge"], byName["app_web"], byName["refs"]
		return q.Running == 1 && refs.Running == 1 && w.Running == 2 && strings.Contains(h.Pending, "insufficient resources"), fmt.Sprintf("%+v", list.Services)
	})
	agentIDs := map[string]bool{g.instances[0].id: true, g.instances[1].id: true}
	for _, s := range list.Services {
		switch s.Name {
		case "quoted", "app_web":
			for _, tk := range s.Tasks {
				if tk.State == "running" && (!agentIDs[tk.InstanceID] || tk.Group != "g") {
					t.Errorf("%s's task runs on %s (%s), want an agent of g", s.Name, tk.InstanceID, tk.Group)
				}
			}
			if s.Desired != map[string]int{"quoted": 1, "app_web": 2}[s.Name] || s.Mode != "replicated" || s.Image != enginetest.Image {
				t.Errorf("service %+v", s)
			}
		case "huge":
			if s.Running != 0 || s.Desired != 1 {
				t.Errorf("huge: %+v", s)
			}
		}
	}
	if table := query.ServicesTable(list.Services, false); len(table.Rows) != 4 {
		t.Errorf("services table: %v", table.Rows)
	}

	// list-clusters lists this core with its swarm.
	clusters, _, err := cluster.NewInspector(svc).ListClusters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range clusters {
		if c.Cluster == tc.name {
			found = true
			if c.Nodes == nil || *c.Nodes != 3 || c.Services == nil || *c.Services != 4 || c.Groups != 1 {
				t.Errorf("list-clusters: %+v", c)
			}
		}
	}
	if !found {
		t.Errorf("list-clusters lists no %s: %+v", tc.name, clusters)
	}

	// Ctrl-C: the command is cancelled on the node; the run is
	// interrupted.
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, _, err := cluster.NewNodes(svc).Docker(cctx, cluster.DockerOptions{Cluster: tc.name, Args: []string{"run", "--rm", "--network", "host", enginetest.Image, "sleep", "300"}, Poll: 200 * time.Millisecond})
		done <- err
	}()
	rc := lab.AWS.RunCommand()
	before := len(rc.Commands())
	eventually(t, time.Minute, "the command reaches the node", func() (bool, string) {
		out, _ := control.Docker(ctx, "ps", "-q", "--filter", "ancestor="+enginetest.Image)
		return len(rc.Commands()) > before && strings.TrimSpace(out) != "", "not yet"
	})
	stop()
	err = <-done
	if errs.ExitCode(err) != errs.ExitInterrupted || !strings.Contains(err.Error(), "cancelled command") {
		t.Errorf("interrupted docker run: %v", err)
	}
	sent := rc.Commands()
	select {
	case <-sent[len(sent)-1].Cancelled:
	default:
		t.Errorf("command %s not cancelled", sent[len(sent)-1].ID)
	}
	var ie *errs.InterruptedError
	if !errors.As(err, &ie) {
		t.Errorf("not an interruption: %T", err)
	}
}

type remoteRun struct {
	stdout, stderr string
	code           int
}
