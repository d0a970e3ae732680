package bootstrap

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/render"
)

// A reboot (or any restart of the housekeeping service, which systemd
// starts at every boot) publishes the join material again: the swarm is
// not initialised again, and CloudFormation is not signalled twice.
func TestControlRebootPublishesAgain(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "reboot")
	control := tc.bootControl(t)
	swarmID := dockerOn(t, control, "info", "--format", "{{.Swarm.Cluster.ID}}")
	eventually(t, time.Minute, "the join material published", func() (bool, string) {
		return tc.hasObject(names.SwarmPrefix + "/worker-token"), "no worker token yet"
	})
	if _, err := tc.c.s3.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(names.SwarmPrefix + "/worker-token")}); err != nil {
		t.Fatal(err)
	}
	if err := control.RestartUnit(context.Background(), "clusterctl-housekeeping"); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the worker token published again", func() (bool, string) {
		return tc.hasObject(names.SwarmPrefix + "/worker-token"), "no worker token"
	})
	if id := dockerOn(t, control, "info", "--format", "{{.Swarm.Cluster.ID}}"); id != swarmID {
		t.Errorf("swarm %s after the restart, was %s", id, swarmID)
	}
	if token, _ := tc.getObject(t, names.SwarmPrefix+"/worker-token"); strings.TrimSpace(string(token)) != dockerOn(t, control, "swarm", "join-token", "-q", "worker") {
		t.Error("another token published after the restart")
	}
	if n := len(control.Calls("cfn-signal")); n != 1 {
		t.Errorf("%d signals after a restart, want the first one only", n)
	}
}

// A failing step of the control node signals failure, naming the step,
// and publishes nothing.
func TestControlFailureSignals(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "ctlfail")
	control := labNode(t, "control", tc.control, false)
	if err := os.WriteFile(control.Dir()+"/fail-dnf", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _ := wait(t, boot(t, control, tc.controlUserData))
	if code == 0 {
		t.Fatal("control node succeeded although the package manager failed")
	}
	want := fmt.Sprintf("--exit-code 1 --reason clusterctl:\\ failed\\ while\\ installing\\ Docker --stack %s --resource ManagerGroup --region %s", tc.name, region)
	if calls := control.Calls("cfn-signal"); !slices.Equal(calls, []string{want}) {
		t.Errorf("signals %q, want %q", calls, want)
	}
	// Nothing but the agents clusterctl uploaded.
	if keys := slices.DeleteFunc(tc.keys(t), func(k string) bool { return strings.HasPrefix(k, names.AgentPrefix+"/") }); len(keys) != 0 {
		t.Errorf("published %v after a failure", keys)
	}
}

// An agent whose control node never comes signals failure once the join
// timeout has passed, and never joins anything.
func TestAgentGivesUpWithoutControl(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "alone")
	g := tc.deployGroup(t, "g", 1, nil)
	agent := g.bootAgent(t, 0, "CLUSTERCTL_JOIN_TIMEOUT=3")
	calls := signalled(t, agent, 3*time.Minute)
	want := fmt.Sprintf("--exit-code 1 --reason clusterctl:\\ agent\\ not\\ Ready\\ in\\ the\\ swarm\\ within\\ 3\\ s --stack %s --resource AutoScalingGroup --region %s", g.stack, region)
	if !slices.Equal(calls, []string{want}) {
		t.Errorf("signals %q, want %q", calls, want)
	}
	if state := dockerOn(t, agent, "info", "--format", "{{.Swarm.LocalNodeState}}"); state != "inactive" {
		t.Errorf("swarm state %s without a control node", state)
	}
}

// Join material that is not the swarm's (a CA certificate of another
// swarm): the agent refuses to join with it.
func TestAgentRefusesOtherSwarmCA(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "otherca")
	g := tc.deployGroup(t, "g", 1, nil)
	control := tc.bootControl(t)
	// Housekeeping publishes the join material again in its first round
	// as the leader, then the status snapshot: the other CA goes in after
	// that, or the round would put the swarm's back.
	eventually(t, 2*time.Minute, "the leader's first round", func() (bool, string) {
		return tc.hasObject(names.StatusKey), "no status snapshot yet"
	})
	if _, err := tc.c.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(names.SwarmPrefix + "/ca.pem"),
		Body: strings.NewReader(otherCA(t))}); err != nil {
		t.Fatal(err)
	}
	agent := g.bootAgent(t, 0, "CLUSTERCTL_JOIN_TIMEOUT=8")
	calls := signalled(t, agent, 3*time.Minute)
	if len(calls) != 1 || !strings.HasPrefix(calls[0], "--exit-code 1 ") {
		t.Errorf("signals %q, want one failure", calls)
	}
	if !strings.Contains(agent.Logs(), "the published CA certificate does not match the join token") {
		t.Errorf("the agent does not say why:\n%s", agent.Logs())
	}
	if n := len(swarmNodes(t, control)); n != 1 {
		t.Errorf("%d swarm nodes, want the control node only", n)
	}
}

// otherCA returns the certificate of a CA that is no swarm's.
func otherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "swarm-ca"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// Node settings or a node agent whose content is not what the launch
// template pins are never used: the loader refuses them before anything
// is installed, and signals why.
func TestAgentRefusesTamperedConfig(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "tampered")
	g := tc.deployGroup(t, "g", 2, nil)
	settings := g.rendered.Artifacts[0]
	bin, _ := nodeAgent(t)
	for i, c := range []struct {
		name, key, body string
	}{
		{"settings", settings.Key, strings.Replace(string(settings.Body), "MANAGERS_KEY="+tc.join.ManagersKey, "MANAGERS_KEY=join/swarm/elsewhere", 1)},
		{"agent", names.AgentKey("amd64", bin.SHA256), "not the agent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.body == string(settings.Body) {
				t.Fatal("nothing to tamper with")
			}
			if _, err := tc.c.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(c.key), Body: strings.NewReader(c.body)}); err != nil {
				t.Fatal(err)
			}
			agent := labNode(t, fmt.Sprintf("g-%d", i), g.instances[i], true)
			code, out := wait(t, boot(t, agent, g.userData))
			if code == 0 || !strings.Contains(out, "is not SHA-256 ") || !strings.Contains(out, ": refusing it") {
				t.Fatalf("agent exited %d, want a refusal:\n%s", code, out)
			}
			// The reason names the object refused.
			want := fmt.Sprintf("--exit-code 1 --reason clusterctl:\\ s3://%s/%s\\ is\\ not\\ SHA-256\\ ", tc.bucket, c.key)
			if calls := agent.Calls("cfn-signal"); len(calls) != 1 || !strings.HasPrefix(calls[0], want) || !strings.HasSuffix(calls[0], " --stack "+g.stack+" --resource AutoScalingGroup --region "+region) {
				t.Errorf("signals %q, want one %q...", calls, want)
			}
			if calls := agent.Calls("systemctl"); len(calls) != 0 {
				t.Errorf("systemctl %q", calls)
			}
			if _, err := os.Stat(agent.Root("usr/local/bin/clusterctl-node")); err == nil {
				t.Error("an agent was installed")
			}
		})
		// The next case tampers with another object: put this one back.
		body := settings.Body
		if c.name == "agent" {
			_, body = nodeAgent(t)
		}
		if _, err := tc.c.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(c.key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
}

// The stack's values reach the loader as CloudFormation substitutes them.
// Values that are not of their shape (the template's patterns would refuse
// them, but the loader does not count on it) are refused before anything
// runs, never run as shell code. What else a node is configured with comes
// from its settings in the bucket, pinned by their hash.
func TestAgentChecksJoinValues(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "values")
	g := tc.deployGroup(t, "g", 1, nil)
	for _, c := range []struct {
		name, param, value, says string
	}{
		{"quote in the bucket", "BucketName", "b'; touch @PWNED@; : '", "refusing bucket"},
		{"command in the bucket", "BucketName", "$(touch @PWNED@)", "refusing bucket"},
		{"command in the agent's hash", "NodeAgentAmd64", "$(touch${IFS}@PWNED@)", "refusing node agent hash"},
		{"newline in the agent's hash", "NodeAgentAmd64", "a\ntouch @PWNED@", "refusing node agent hash"},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent := labNode(t, "g-0", g.instances[0], true)
			pwned := agent.Root("pwned")
			params := map[string]string{c.param: strings.ReplaceAll(c.value, "@PWNED@", pwned)}
			code, out := wait(t, boot(t, agent, resolveUserData(t, g.rendered, "LaunchTemplate", params)))
			if code == 0 || !strings.Contains(out, c.says) {
				t.Fatalf("agent exited %d, want a refusal saying %q:\n%s", code, c.says, out)
			}
			if _, err := os.Stat(pwned); err == nil {
				t.Error("the value was run as shell code")
			}
			// The reason says which value was refused.
			if calls := agent.Calls("cfn-signal"); len(calls) != 1 || !strings.HasPrefix(calls[0], "--exit-code 1 --reason clusterctl:\\ "+strings.ReplaceAll(c.says, " ", "\\ ")) {
				t.Errorf("signals %q, want one failure saying %q", calls, c.says)
			}
			if calls := agent.Calls("systemctl"); len(calls) != 0 {
				t.Errorf("systemctl %q", calls)
			}
		})
	}
}

// resolveUserData returns the user data of launch template lt as
// CloudFormation would substitute it with the rendered parameters, some of
// them overridden.
func resolveUserData(t *testing.T, r *render.Rendered, lt string, override map[string]string) string {
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
	out, err := render.ResolveSub(doc.Resources[lt].Properties.LaunchTemplateData.UserData.Base64.Sub, func(name string) (string, bool) {
		switch name {
		case "AWS::StackName":
			return r.StackName, true
		case "AWS::Region":
			return region, true
		case "AWS::URLSuffix":
			return "amazonaws.com", true
		}
		if v, ok := override[name]; ok {
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

// wait waits for a script to end and returns its exit code and output.
func wait(t *testing.T, r *enginetest.Run) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code, out := r.Wait(ctx)
	if code < 0 {
		t.Fatalf("the script did not end:\n%s", out)
	}
	return code, out
}

// keys lists the objects of the cluster bucket.
func (tc *testCluster) keys(t *testing.T) []string {
	t.Helper()
	out, err := tc.c.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(tc.bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}
