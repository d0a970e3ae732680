package render

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// resolvedUserData returns the user data of launch template lt as
// CloudFormation would hand it to the instance: Fn::Sub applied with the
// stack's parameter values and plausible pseudo parameters and resources.
func resolvedUserData(t *testing.T, r *Rendered, lt string) string {
	t.Helper()
	res := obj(decode(t, r.Template)["Resources"])
	src := userDataOf(t, res, lt)
	out, err := ResolveSub(src, func(name string) (string, bool) {
		switch name {
		case "AWS::StackName":
			return r.StackName, true
		case "AWS::Region":
			return "eu-west-1", true
		case "AWS::URLSuffix":
			return "amazonaws.com", true
		case names.ResourceBucket:
			return "prod-bucket-1a2b3c4d5e6f", true
		case names.ResourceLifecycleQueue:
			return "https://sqs.eu-west-1.amazonaws.com/123456789012/prod-LifecycleQueue-1A2B3C4D5E6F", true
		}
		v, ok := r.Parameters[name]
		return v, ok
	})
	if err != nil {
		t.Fatalf("%s user data: %v", lt, err)
	}
	return out
}

// scripts renders every variant and returns each script a node runs (its
// loader: the user data), by a descriptive name.
func scripts(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range variants() {
		r, err := v.render()
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		kind := "agent"
		if v.core != nil {
			kind = "control"
		}
		out[v.name+"-"+kind+"-userdata.sh"] = resolvedUserData(t, r, v.launchTemplate())
	}
	return out
}

// TestLoaderSize: the user data of managers and agents is a loader of at
// most 4 KiB with the longest values the stack can substitute.
func TestLoaderSize(t *testing.T) {
	long := variants()[0]
	long.name, long.cluster = "core-longest-name", "c"+strings.Repeat("x", spec.MaxStackName-1)
	for _, v := range append(variants(), long) {
		r, err := v.render()
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		bound, err := longestSub(userDataOf(t, obj(decode(t, r.Template)["Resources"]), v.launchTemplate()), func(string) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes of user data at most", v.name, len(bound))
		if len(bound) > MaxLoaderBytes || len(bound) < 1000 {
			t.Errorf("%s: user data of %d bytes at most, want a loader of at most %d", v.name, len(bound), MaxLoaderBytes)
		}
	}
}

// TestNodesRunNoAWSCLI: nothing a node runs shells out to the AWS CLI, jq
// or Python: the loader fetches the agent with curl, signed with the
// instance role's credentials, and the agent does the rest.
func TestNodesRunNoAWSCLI(t *testing.T) {
	word := regexp.MustCompile("(^|[\\s;|&(`$])(aws|jq|python3?)(\\s|$)")
	for name, body := range scripts(t) {
		for i, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "#") {
				continue
			}
			if m := word.FindString(l); m != "" {
				t.Errorf("%s:%d runs %q: %s", name, i+1, strings.TrimSpace(m), l)
			}
		}
	}
}

// TestLoaderPinsAgent: the loader fetches the agent the stack's parameters
// pin, for the instance's architecture, from the agents' prefix, and checks
// its SHA-256 before it runs; a new agent changes only those parameters
// (and so the launch template's version), nothing else.
func TestLoaderPinsAgent(t *testing.T) {
	for _, v := range variants() {
		r, err := v.render()
		if err != nil {
			t.Fatal(err)
		}
		lt := v.launchTemplate()
		ud := resolvedUserData(t, r, lt)
		for _, want := range []string{
			" " + testAgents["amd64"] + " " + testAgents["arm64"] + "\nCLUSTERCTL_STACK\n", "x86_64) arch=amd64 sha=$amd64 ;;", "aarch64) arch=arm64 sha=$arm64 ;;",
			`get "` + names.AgentPrefix + `/clusterctl-node-linux-$arch-$sha.gz" "$agent" "$sha"`,
			`sha256sum --check --status <<<"$3  $2.new" || fail`, `"$agent" setup`,
		} {
			if !strings.Contains(ud, want) {
				t.Errorf("%s: user data lacks %q", v.name, want)
			}
		}
		if got := names.AgentKey("arm64", testAgents["arm64"]); got != names.AgentPrefix+"/clusterctl-node-linux-arm64-"+testAgents["arm64"]+".gz" {
			t.Errorf("AgentKey = %s, not what the loader fetches", got)
		}
		other := build(testVersion)
		other.Agents = map[string]string{"amd64": strings.Repeat("c", 64), "arm64": testAgents["arm64"]}
		r2, err := v.renderWith(other)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Template, r2.Template) {
			t.Errorf("%s: another agent changed the template, not only its parameter", v.name)
		}
		if r2.Parameters[names.ParamNodeAgentAmd64] != other.Agents["amd64"] || r.Parameters[names.ParamNodeAgentAmd64] != testAgents["amd64"] {
			t.Errorf("%s: parameters %v do not pin the agent", v.name, r2.Parameters)
		}
	}
	for _, b := range []Build{{Version: "1"}, {Version: "1", Agents: map[string]string{"amd64": strings.Repeat("a", 64), "arm64": "not-a-hash"}}} {
		if _, err := Core("c", spec.Core{}, b); err == nil || !strings.Contains(err.Error(), "no node agent pinned") {
			t.Errorf("%v: %v", b.Agents, err)
		}
	}
}

// TestShellcheck runs shellcheck on every rendered script. A missing
// shellcheck fails the test: the scripts run as root on every node.
func TestShellcheck(t *testing.T) {
	bin, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Fatal("shellcheck not found: apt-get install shellcheck")
	}
	dir := t.TempDir()
	var files []string
	for name, body := range scripts(t) {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) < 14 {
		t.Fatalf("only %d scripts rendered", len(files))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"--norc", "--shell=bash", "--severity=style", "--format=gcc"}, files...)...).CombinedOutput()
	if err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

func TestNoPlaceholder(t *testing.T) {
	for name, body := range scripts(t) {
		if strings.Contains(strings.ToLower(body), "placeholder") {
			t.Errorf("%s is marked as a placeholder", name)
		}
	}
}

func TestResolveSub(t *testing.T) {
	vals := map[string]string{"A": "1", "B.Arn": "arn"}
	lookup := func(n string) (string, bool) { v, ok := vals[n]; return v, ok }
	got, err := ResolveSub("x=${A} y=${!y:-d} z=$z arn=${B.Arn} ${!A}", lookup)
	if err != nil || got != "x=1 y=${y:-d} z=$z arn=arn ${A}" {
		t.Errorf("ResolveSub = %q, %v", got, err)
	}
	if _, err := ResolveSub("echo ${HOME}", lookup); err == nil || !strings.Contains(err.Error(), "${HOME} is neither") {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := ResolveSub("echo ${A", lookup); err == nil {
		t.Error("unterminated ${ accepted")
	}
}

// TestUserDataChecked: render refuses user data that CloudFormation would
// reject or that could exceed the EC2 limit once the stack values are in.
func TestUserDataChecked(t *testing.T) {
	r, err := variants()[0].render()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(string) string) *Rendered {
		doc := decode(t, r.Template)
		ud := obj(dig(doc, "Resources", "ControlLaunchTemplate", "Properties", "LaunchTemplateData", "UserData", "Fn::Base64"))
		ud["Fn::Sub"] = f(ud["Fn::Sub"].(string))
		c := *r
		c.Template = mustJSON(t, doc)
		return &c
	}
	if err := check(r); err != nil {
		t.Fatalf("rendered core fails its own check: %v", err)
	}
	if err := check(edit(func(s string) string { return s + "echo ${HOME}\n" })); err == nil || !strings.Contains(err.Error(), "user data of ControlLaunchTemplate: ${HOME} is neither") {
		t.Errorf("shell expansion in Fn::Sub: %v", err)
	}
	// Size-neutral: the attribute and the parameter in place of as many
	// bytes of the loader as their longest values take.
	if err := check(edit(func(s string) string {
		return s[:len(s)-2*maxSubValue("")] + "echo ${Bucket.Arn} ${InstanceType}\n"
	})); err != nil {
		t.Errorf("resource attribute and parameter: %v", err)
	}
	// Just under the limit as written, over it once 20 stack names of up to
	// 128 characters are filled in.
	if err := check(edit(func(s string) string {
		pad := strings.Repeat("${AWS::StackName}", 20)
		return s + "#" + strings.Repeat("x", MaxLoaderBytes-len(s)-len(pad)-2) + pad + "\n"
	})); err == nil || !strings.Contains(err.Error(), "with the longest stack values: user data is") {
		t.Errorf("oversized user data: %v", err)
	}
}

// TestBucketPermissions checks the IAM policies against where the objects
// go: the control node writes only the swarm's join material and its
// status snapshot; agents read only under the join prefix, which holds that
// material and the node configurations, and the status snapshot.
func TestBucketPermissions(t *testing.T) {
	r, err := variants()[0].render()
	if err != nil {
		t.Fatal(err)
	}
	res := obj(decode(t, r.Template)["Resources"])
	for _, st := range roleStatements(res, "AgentRole") {
		switch act := fmt.Sprint(st["Action"]); {
		case act == "s3:GetObject":
			if r := dig(st, "Resource", "Fn::Sub"); r != "${Bucket.Arn}/"+names.JoinPrefix+"/*" && r != "${Bucket.Arn}/"+names.StatusKey {
				t.Errorf("agents read %v", st["Resource"])
			}
		case act == "s3:ListBucket":
			if !jsonEqual(dig(st, "Resource", "Fn::GetAtt"), []any{"Bucket", "Arn"}) || dig(st, "Condition", "StringLike", "s3:prefix") == nil {
				t.Errorf("agents list %v beyond their prefixes (%v)", st["Resource"], st["Condition"])
			}
		case act == "s3:PutObject" && dig(st, "Resource", "Fn::Sub") == "${Bucket.Arn}/"+names.InterruptionPrefix+"/${!aws:userid}":
			// its own interruption confirmation only (TestInterruptionConfirmationWrites)
		case strings.Contains(act, "s3:"):
			t.Errorf("agents are allowed %v on %v", st["Action"], st["Resource"])
		}
	}
	// The managers write only their join material, what only they read
	// (the bucket policy keeps it from every other principal) and the
	// status snapshot; they read clusterctl's leases (the autoscaler leaves
	// a group alone while a command holds it) and may list the bucket, so
	// that a lease that is not there reads as missing, not refused.
	readsLeases, lists := false, false
	for _, st := range roleStatements(res, "ControlRole") {
		if !strings.HasPrefix(fmt.Sprint(st["Action"]), "[s3:") && !strings.HasPrefix(fmt.Sprint(st["Action"]), "s3:") {
			continue
		}
		switch {
		case st["Action"] == "s3:GetObject" && dig(st, "Resource", "Fn::Sub") == "${Bucket.Arn}/"+names.LeasePrefix+"/*":
			readsLeases = true
			continue
		case st["Action"] == "s3:ListBucket" && jsonEqual(dig(st, "Resource", "Fn::GetAtt"), []any{"Bucket", "Arn"}):
			lists = true
			continue
		}
		switch r := fmt.Sprint(dig(st, "Resource", "Fn::Sub")); r {
		case "${Bucket.Arn}/" + names.SwarmPrefix + "/*", "${Bucket.Arn}/" + names.ControlPrefix + "/*", "${Bucket.Arn}/" + names.StatusKey,
			"${Bucket.Arn}/" + names.AgentPrefix + "/*",        // the node agent, read
			"${Bucket.Arn}/" + names.CommandPrefix + "/*",      // Run Command's output of the docker commands
			"${Bucket.Arn}/" + names.InterruptionPrefix + "/*": // the agents' interruption confirmations, read
		default:
			t.Errorf("control role statement %v outside the swarm and control prefixes and the status", st)
		}
	}
	if !readsLeases || !lists {
		t.Errorf("the managers cannot read the leases (%v) or tell a missing one (%v)", readsLeases, lists)
	}
	// One statement per resource and condition: a second one granting
	// more on the same objects belongs in the first.
	for _, role := range []string{"ControlRole", "AgentRole"} {
		seen := map[string]any{}
		for _, st := range roleStatements(res, role) {
			if st["Sid"] == ssmAgentSid {
				continue // the Systems Manager agent's, a policy of its own
			}
			k := string(mustJSON(t, []any{st["Effect"], st["Resource"], st["Condition"]}))
			if prev, ok := seen[k]; ok {
				t.Errorf("%s grants %v and %v on %v in two statements", role, prev, st["Action"], st["Resource"])
			}
			seen[k] = st["Action"]
		}
	}
	var statements []any
	for _, p := range resourcesOfType(res, "AWS::S3::BucketPolicy") {
		statements = append(statements, list(dig(p, "Properties", "PolicyDocument", "Statement"))...)
	}
	if !policyDenies(t, statements, agentsRole, "s3:GetObject", names.CommandInputKey("r1")) ||
		!policyDenies(t, statements, agentsRole, "s3:PutObject", names.CommandOutputPrefix("r1")+"/stdout") {
		t.Error("the bucket policy does not keep the agents from the commands")
	}
	expires := false
	for _, rule := range list(dig(res, names.ResourceBucket, "Properties", "LifecycleConfiguration", "Rules")) {
		rl := obj(rule)
		if rl["Prefix"] == names.CommandPrefix+"/" && rl["Status"] == "Enabled" && fmt.Sprint(rl["ExpirationInDays"]) == "1" {
			expires = true
		}
	}
	if !expires {
		t.Error("the command output does not expire after a day")
	}
}

// roleStatements returns the statements of a role's inline policies.
func roleStatements(res map[string]any, role string) []map[string]any {
	var out []map[string]any
	for _, p := range list(dig(res, role, "Properties", "Policies")) {
		for _, s := range list(dig(p, "PolicyDocument", "Statement")) {
			out = append(out, obj(s))
		}
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
