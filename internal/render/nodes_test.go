package render

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
		case "Bucket":
			return "prod-bucket-1a2b3c4d5e6f", true
		case "LifecycleQueue":
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

// scripts renders every variant and returns each script a node runs, by a
// descriptive name.
func scripts(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range variants() {
		r, err := v.render()
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		if v.core != nil {
			ud := resolvedUserData(t, r, "ControlLaunchTemplate")
			out[v.name+"-control-userdata.sh"] = ud
			out[v.name+"-control-program.sh"] = embeddedProgram(t, ud)
			continue
		}
		out[v.name+"-agent-userdata.sh"] = resolvedUserData(t, r, "LaunchTemplate")
		for i, a := range r.Artifacts {
			out[v.name+"-node-"+string(rune('0'+i))+".sh"] = string(a.Body)
			out[v.name+"-agent-service-"+string(rune('0'+i))+".sh"] = hereDocument(t, string(a.Body), "CLUSTERCTL_AGENT_SERVICE")
		}
	}
	return out
}

// hereDocument returns the body of the quoted here-document delimited by
// marker in script.
func hereDocument(t *testing.T, script, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(script, "<<'"+marker+"'")
	if !ok {
		t.Fatalf("no here-document %s", marker)
	}
	_, rest, _ = strings.Cut(rest, "\n")
	body, _, ok := strings.Cut(rest, "\n"+marker+"\n")
	if !ok {
		t.Fatalf("here-document %s does not end", marker)
	}
	return body + "\n"
}

// embeddedProgram decodes the control node program from the control
// node's user data, as the user data does (base64, gunzip).
func embeddedProgram(t *testing.T, userData string) string {
	t.Helper()
	enc := hereDocument(t, userData, "CLUSTERCTL_PROGRAM")
	raw, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(enc, "\n", ""))
	if err != nil {
		t.Fatalf("control node program: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("control node program: %v", err)
	}
	prog, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("control node program: %v", err)
	}
	return string(prog)
}

// TestControlProgramEmbedded: the user data carries the control node
// program it was rendered with, comment lines stripped but for its
// description; stripping is sound only for a program without
// here-documents.
func TestControlProgramEmbedded(t *testing.T) {
	v := variants()[0]
	r, err := v.render()
	if err != nil {
		t.Fatal(err)
	}
	group := names.LogGroup(v.cluster)
	prog, err := controlProgram(coreData{N: names.Template(), Cluster: v.cluster, HookName: names.LifecycleHook(v.cluster), LogGroup: group, LogOpts: logOpts(group)})
	if err != nil {
		t.Fatal(err)
	}
	got := embeddedProgram(t, resolvedUserData(t, r, names.ResourceControlLaunchTemplate))
	if got != compact(prog) {
		t.Error("the embedded program is not the rendered one")
	}
	if !strings.HasPrefix(got, "#!/bin/bash\n# clusterctl control node program of cluster prod.") {
		t.Errorf("the embedded program lost its description:\n%.300s", got)
	}
	for _, py := range regexp.MustCompile(`python3 -c '([^']*)'`).FindAllStringSubmatch(prog, -1) {
		if regexp.MustCompile(`(?m)^[ \t]`).MatchString(py[1]) {
			t.Errorf("indented Python would break once the program's indentation is stripped:\n%s", py[1])
		}
	}
	if l := regexp.MustCompile(`(?m)^.*[^ \\]\\$`).FindString(prog); l != "" {
		t.Errorf("a line continued without a space before its backslash cannot lose its next line's indentation: %q", l)
	}
	if regexp.MustCompile(`(^|[^<])<<[^<]`).MatchString(prog) {
		t.Error("the control program has a here-document: stripping its comment lines could change it")
	}
	_, body, _ := strings.Cut(got, "\nset -")
	if n := strings.Count(got, "\n"); n >= strings.Count(prog, "\n") || regexp.MustCompile(`\n\s*# [^s]`).MatchString(body) {
		t.Errorf("comments not stripped (%d lines)", n)
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
	if len(files) < 15 {
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

var (
	shaLine = regexp.MustCompile(`(?m)^sha256=([0-9a-f]{64})$`)
	keyLine = regexp.MustCompile(`(?m)^key='([^']+)'$`)
)

// nodeConfigOf returns the node configuration key and hash a group's user
// data names.
func nodeConfigOf(t *testing.T, r *Rendered) (key, sum string) {
	t.Helper()
	ud := resolvedUserData(t, r, "LaunchTemplate")
	k, s := keyLine.FindStringSubmatch(ud), shaLine.FindStringSubmatch(ud)
	if k == nil || s == nil {
		t.Fatalf("user data names no node configuration:\n%s", ud)
	}
	return k[1], s[1]
}

func TestNodeConfigArtifact(t *testing.T) {
	for _, v := range variants() {
		if v.group == nil {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			r, err := v.render()
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Artifacts) != 1 {
				t.Fatalf("%d artifacts, want the node configuration", len(r.Artifacts))
			}
			a := r.Artifacts[0]
			sum := sha256.Sum256(a.Body)
			want := hex.EncodeToString(sum[:])
			key, named := nodeConfigOf(t, r)
			if named != want || key != a.Key || a.Key != names.NodeConfigKey(v.group.Name, want) {
				t.Errorf("user data names %s (sha256 %s); artifact %s has sha256 %s", key, named, a.Key, want)
			}
			if !strings.HasPrefix(a.Key, names.JoinPrefix+"/") || strings.HasPrefix(a.Key, names.SwarmPrefix+"/") {
				t.Errorf("node configuration %s outside the agents' readable prefix, or inside the control node's", a.Key)
			}
			node := string(a.Body)
			j := v.join
			for _, want := range []string{
				"bucket=" + shellQuote(j.BucketName), "managers_key=" + shellQuote(j.ManagersKey),
				"cluster=" + shellQuote(v.cluster), "instance_types=" + shellQuote(v.group.InstanceType.String()),
				`"clusterctl.group=` + v.group.Name + `"`,
				// What the node is comes from its instance metadata.
				`"clusterctl.instance-type=$node_type"`, `"clusterctl.lifecycle=$node_lifecycle"`, `"clusterctl.zone=$node_zone"`,
				`"clusterctl.instance-id=$instance_id"`, "node_lifecycle=$(imds instance-life-cycle)",
			} {
				if !strings.Contains(node, want) {
					t.Errorf("node configuration lacks %s", want)
				}
			}
			for k, val := range v.group.Labels {
				if !strings.Contains(node, `"`+k+"="+val+`"`) {
					t.Errorf("node configuration lacks engine label %s=%s", k, val)
				}
			}
		})
	}
}

// TestNodeConfigHash: everything a node is configured with changes the
// hash and so the launch template; an identical render changes nothing.
func TestNodeConfigHash(t *testing.T) {
	type input struct {
		g       spec.Group
		join    Join
		version string
	}
	base := variants()[4]
	render := func(f func(*input)) (*Rendered, string) {
		t.Helper()
		in := input{*base.group, base.join, testVersion}
		in.g.Labels = maps.Clone(base.group.Labels)
		f(&in)
		r, err := Group(base.cluster, in.g, in.join, in.version)
		if err != nil {
			t.Fatal(err)
		}
		_, sum := nodeConfigOf(t, r)
		return r, sum
	}
	r0, h0 := render(func(*input) {})
	r1, h1 := render(func(*input) {})
	if h0 != h1 || !bytes.Equal(r0.Template, r1.Template) {
		t.Fatal("two identical renders differ")
	}
	lt := func(r *Rendered) string {
		return string(mustJSON(t, dig(decode(t, r.Template), "Resources", "LaunchTemplate", "Properties", "LaunchTemplateData", "UserData")))
	}
	for name, f := range map[string]func(*input){
		"label value":   func(s *input) { s.g.Labels["role"] = "batch" },
		"label added":   func(s *input) { s.g.Labels["zz"] = "1" },
		"managers key":  func(s *input) { s.join.ManagersKey = "join/swarm/elsewhere" },
		"bucket":        func(s *input) { s.join.BucketName = "other-bucket" },
		"image":         func(s *input) { s.g.ImageID = "ami-0fedcba9876543210" },
		"default image": func(s *input) { s.g.ImageID = "" },
		"instance type": func(s *input) { s.g.InstanceType = spec.InstanceTypes{"r7g.xlarge"} },
		"second type":   func(s *input) { s.g.InstanceType = append(s.g.InstanceType, "r6g.large") },
	} {
		r, h := render(f)
		if h == h0 {
			t.Errorf("%s: node configuration hash unchanged", name)
		}
		if lt(r) == lt(r0) {
			t.Errorf("%s: launch template user data unchanged", name)
		}
	}
	// What does not configure the nodes does not replace them.
	for name, f := range map[string]func(*input){
		"count":        func(s *input) { s.g.Count, s.g.Max = intp(2), intp(4) },
		"batch size":   func(s *input) { s.g.RollingUpdate.MaxBatch = intp(1) },
		"clusterctl":   func(s *input) { s.version = "1.2.4" },
		"other subnet": func(s *input) { s.g.SubnetIDs = []string{"subnet-0000000000000000d"} },
	} {
		if _, h := render(f); h != h0 {
			t.Errorf("%s changed the node configuration", name)
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
	// bytes of the program as their longest values take.
	if err := check(edit(func(s string) string {
		prog := slices.MaxFunc(strings.Split(s, "\n"), func(a, b string) int { return len(a) - len(b) })
		return strings.Replace(s, prog, prog[:len(prog)-2*maxSubValue("")], 1) + "echo ${Bucket.Arn} ${InstanceType}\n"
	})); err != nil {
		t.Errorf("resource attribute and parameter: %v", err)
	}
	// Just under the limit as written, over it once 20 stack names of up to
	// 128 characters are filled in.
	if err := check(edit(func(s string) string {
		pad := strings.Repeat("${AWS::StackName}", 20)
		return s + "#" + strings.Repeat("x", MaxUserDataBytes-len(s)-len(pad)-2) + pad + "\n"
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
	prog := embeddedProgram(t, resolvedUserData(t, r, names.ResourceControlLaunchTemplate))
	for _, want := range []string{"prefix=" + names.SwarmPrefix + "\n", "status_key=" + names.StatusKey + "\n", "managers_key=" + names.ManagersKey + "\n",
		`put "$prefix/ca.pem"`, `put "$managers_key"`, `put "$prefix/worker-token"`, `put "$status_key"`, "--server-side-encryption AES256"} {
		if !strings.Contains(prog, want) {
			t.Errorf("control program lacks %q", want)
		}
	}
	for _, st := range roleStatements(res, "AgentRole") {
		if st["Action"] == "s3:GetObject" {
			if r := dig(st, "Resource", "Fn::Sub"); r != "${Bucket.Arn}/"+names.JoinPrefix+"/*" && r != "${Bucket.Arn}/"+names.StatusKey {
				t.Errorf("agents read %v", st["Resource"])
			}
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
			"${Bucket.Arn}/" + names.CommandPrefix + "/*": // Run Command's output of the docker commands
		default:
			t.Errorf("control role statement %v outside the swarm and control prefixes and the status", st)
		}
	}
	if !readsLeases || !lists {
		t.Errorf("the managers cannot read the leases (%v) or tell a missing one (%v)", readsLeases, lists)
	}
	denied := false
	for _, p := range resourcesOfType(res, "AWS::S3::BucketPolicy") {
		for _, s := range list(dig(p, "Properties", "PolicyDocument", "Statement")) {
			st := obj(s)
			if st["Effect"] == "Deny" && st["Principal"] == "*" && dig(st, "Resource", "Fn::Sub") == "${Bucket.Arn}/"+names.ControlPrefix+"/*" &&
				jsonEqual(dig(st, "Condition", "ArnNotEquals", "aws:PrincipalArn", "Fn::GetAtt"), []any{"ControlRole", "Arn"}) {
				denied = true
			}
		}
	}
	if !denied {
		t.Error("the bucket policy lets principals other than the managers read the control prefix")
	}
	if !strings.HasPrefix(names.SwarmPrefix, names.JoinPrefix+"/") || !strings.HasPrefix(names.NodeConfigPrefix, names.JoinPrefix+"/") ||
		!strings.HasPrefix(names.ManagersKey, names.SwarmPrefix+"/") || strings.HasPrefix(names.StatusKey, names.JoinPrefix+"/") {
		t.Error("swarm material or node configuration outside what agents may read, or the status among the join material")
	}
	if strings.HasPrefix(names.ControlPrefix+"/", names.JoinPrefix+"/") {
		t.Error("what only managers may read is under the agents' prefix")
	}
}

// TestCommandOutputPrefix checks the prefix where Run Command writes the
// output of the docker commands: the managers may write it (and read the
// standard input put there), the agents may not touch it, and what it
// holds expires after a day.
func TestCommandOutputPrefix(t *testing.T) {
	r, err := variants()[0].render()
	if err != nil {
		t.Fatal(err)
	}
	res := obj(decode(t, r.Template)["Resources"])
	where := "${Bucket.Arn}/" + names.CommandPrefix + "/*"
	writes := false
	for _, st := range roleStatements(res, "ControlRole") {
		if dig(st, "Resource", "Fn::Sub") == where && jsonEqual(st["Action"], []any{"s3:PutObject", "s3:GetObject"}) && st["Effect"] == "Allow" {
			writes = true
		}
	}
	if !writes {
		t.Error("the managers may not write the command output")
	}
	for _, st := range roleStatements(res, "AgentRole") {
		if strings.Contains(fmt.Sprint(st["Resource"]), names.CommandPrefix) {
			t.Errorf("agents are allowed %v", st)
		}
	}
	denied := false
	for _, p := range resourcesOfType(res, "AWS::S3::BucketPolicy") {
		for _, s := range list(dig(p, "Properties", "PolicyDocument", "Statement")) {
			st := obj(s)
			if st["Effect"] == "Deny" && st["Action"] == "s3:*" && dig(st, "Resource", "Fn::Sub") == where &&
				jsonEqual(dig(st, "Condition", "ArnEquals", "aws:PrincipalArn", "Fn::GetAtt"), []any{"AgentRole", "Arn"}) {
				denied = true
			}
		}
	}
	if !denied {
		t.Error("the bucket policy does not keep the agents from the command output")
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
