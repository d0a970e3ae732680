package e2e

import (
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

	"github.com/clusterctl/clusterctl/internal/operatorpolicy"
)

// unrecorded are the actions the operator policy grants as calls of the
// commands that the whole suite still never records, each with why: paths
// moto cannot take. Everything else the policy grants must be recorded,
// or be what CloudFormation calls for the templates' resources in that
// statement (operatorpolicy.TemplateActions).
var unrecorded = map[string]string{
	"cloudformation:ContinueUpdateRollback": "moto never leaves a stack in UPDATE_ROLLBACK_FAILED, where update-group resumes a rollback",
	"ssm:TerminateSession":                  "clusterctl shell ends a session it opened once the Session Manager plugin exits; moto opens none the plugin can use",
}

// checkOperatorPolicy compares the AWS calls the binary recorded during
// the run (one IAM action a line) with what `clusterctl render
// operator-policy` grants: a recorded action it does not grant fails the
// run; when the whole suite ran (wholeSuite), so does an action it grants
// that no command called, CloudFormation does not need and unrecorded
// does not explain.
func checkOperatorPolicy(w io.Writer, recordFile string, wholeSuite bool) error {
	b, err := os.ReadFile(recordFile)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	recorded := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			recorded[l] = true
		}
	}
	cmd := exec.Command(binary, "render", "operator-policy")
	cmd.Env = env()
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("clusterctl render operator-policy: %w", err)
	}
	var doc operatorpolicy.Document
	if err := json.Unmarshal(out, &doc); err != nil {
		return fmt.Errorf("the operator policy is not JSON: %w", err)
	}
	var granted []string
	for _, st := range doc.Statement {
		granted = append(granted, st.Action...)
	}
	granted = slices.Compact(slices.Sorted(slices.Values(granted)))
	var missing []string
	for a := range recorded {
		if !slices.ContainsFunc(granted, func(p string) bool { return actionMatches(p, a) }) {
			missing = append(missing, a)
		}
	}
	slices.Sort(missing)
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("the commands called %s, which `clusterctl render operator-policy` does not grant (internal/operatorpolicy)", strings.Join(missing, ", ")))
	}
	if wholeSuite {
		// Statement by statement: an action CloudFormation needs in one
		// statement does not excuse it in another, where only a command
		// calls it.
		template := operatorpolicy.TemplateActions()
		var unused []string
		for _, st := range doc.Statement {
			for _, p := range st.Action {
				used := unrecorded[p] != "" || slices.ContainsFunc(template[st.Sid], func(a string) bool { return actionMatches(p, a) })
				for a := range recorded {
					used = used || actionMatches(p, a)
				}
				if !used {
					unused = append(unused, p+" ("+st.Sid+")")
				}
			}
		}
		if len(unused) > 0 {
			problems = append(problems, fmt.Sprintf("the operator policy grants %s, which no command called and CloudFormation does not need there for the templates' resources: remove it, or say in unrecorded (e2e/operatorpolicy_test.go) why the suite cannot reach its call", strings.Join(unused, ", ")))
		}
	}
	fmt.Fprintf(w, "e2e: operator policy: %d distinct AWS actions recorded, %d granted (whole suite: %v)\n", len(recorded), len(granted), wholeSuite)
	if testing.Verbose() {
		fmt.Fprintf(w, "e2e: recorded: %s\n", strings.Join(slices.Sorted(maps.Keys(recorded)), " "))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

// actionMatches matches an IAM action against a policy's action pattern:
// case aside, * any run of characters, ? one.
func actionMatches(pattern, action string) bool {
	re := "(?i)^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	return regexp.MustCompile(re).MatchString(action)
}

func TestActionMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, action string
		want            bool
	}{
		{"ec2:Describe*", "ec2:DescribeInstances", true},
		{"ec2:describe*", "ec2:DescribeInstances", true},
		{"ec2:Describe*", "ec2:RunInstances", false},
		{"s3:GetObject", "s3:GetObjectVersion", false},
		{"s3:GetObject*", "s3:GetObjectVersion", true},
		{"sqs:SendMessage", "sqs:SendMessage", true},
		{"ssm:Get?arameter", "ssm:GetParameter", true},
	} {
		if got := actionMatches(tc.pattern, tc.action); got != tc.want {
			t.Errorf("actionMatches(%q, %q) = %v", tc.pattern, tc.action, got)
		}
	}
}

// The comparison fails on a recorded action the policy does not grant,
// and, for the whole suite only, on a granted action nothing called.
func TestCheckOperatorPolicy(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "calls")
	write := func(lines ...string) {
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cloudformation:DescribeStacks", "ec2:DescribeSubnets", "s3:PutObject")
	if err := checkOperatorPolicy(io.Discard, file, false); err != nil {
		t.Errorf("granted calls: %v", err)
	}
	write("cloudformation:DescribeStacks", "ec2:TerminateInstances", "iam:CreateUser")
	err := checkOperatorPolicy(io.Discard, file, false)
	if err == nil || !strings.Contains(err.Error(), "ec2:TerminateInstances, iam:CreateUser") {
		t.Errorf("ungranted calls: %v", err)
	}
	write("cloudformation:DescribeStacks")
	err = checkOperatorPolicy(io.Discard, file, true)
	if err == nil || !strings.Contains(err.Error(), "sqs:SendMessage") || strings.Contains(err.Error(), "iam:CreateRole") {
		t.Errorf("whole suite, one call recorded: %v (want sqs:SendMessage unused, CloudFormation's iam:CreateRole not)", err)
	}
	// Every call but iam:GetRole, which CloudFormation also needs, but on
	// the cluster's roles only, not on the caller's.
	write(slices.DeleteFunc(operatorpolicy.Calls(false), func(a string) bool { return a == "iam:GetRole" })...)
	err = checkOperatorPolicy(io.Discard, file, true)
	unused := ""
	if err != nil {
		_, after, _ := strings.Cut(err.Error(), "grants ")
		unused, _, _ = strings.Cut(after, ", which")
	}
	if !strings.HasPrefix(unused, "iam:GetRole (") || strings.Contains(unused, ", ") {
		t.Errorf("whole suite, every call but iam:GetRole: %v (want iam:GetRole alone unused, in the caller's statement)", err)
	}
}

// render operator-policy needs no AWS, and refuses bad input with exit 2.
func TestRenderOperatorPolicy(t *testing.T) {
	// Nothing listens at the endpoint: any AWS call would fail the run.
	dead := append(env(), "AWS_ENDPOINT_URL=http://127.0.0.1:1")
	r := clusterctlEnv(t, dead, "render", "operator-policy", "-j", "prod", "--account", "123456789012", "--part", "1")
	if r.code != 0 {
		t.Fatalf("render operator-policy: %s", r)
	}
	var doc operatorpolicy.Document
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Statement) == 0 {
		t.Fatalf("not a policy (%v): %s", err, r.stdout)
	}
	if !strings.Contains(r.stdout, "arn:aws:cloudformation:us-east-1:123456789012:stack/prod/*") {
		t.Errorf("not scoped to cluster prod in us-east-1 and the account:\n%s", r.stdout)
	}
	r = clusterctlEnv(t, dead, "render", "operator-policy")
	if r.code != 0 || !strings.Contains(r.stderr, "--part 1 to --part 2") {
		t.Errorf("a policy over a managed policy's size says how to cut it: %s", r)
	}
	for _, args := range [][]string{
		{"--account", "1234"},
		{"-j", "9lives"},
		{"--network", "bad_name"},
		{"--part", "9"},
		{"--region", "mars-north-1"},
	} {
		r := clusterctlEnv(t, dead, append([]string{"render", "operator-policy"}, args...)...)
		if r.code != 2 || r.stdout != "" || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: want exit 2 and one line, got %s", args, r)
		}
	}
}

// The read commands call nothing the read-only policy does not grant,
// whatever they answer on moto (a swarm moto cannot run is refused).
func TestReadOnlyPolicyCoversTheReadCommands(t *testing.T) {
	parallel(t)
	newCluster(t, "web")
	own := filepath.Join(t.TempDir(), "calls")
	// The last value wins; use writes the default into a directory of
	// the test's own.
	withOwnRecord := append(envOf(t), "CLUSTERCTL_RECORD_CALLS="+own, "XDG_CONFIG_HOME="+t.TempDir())
	for _, args := range [][]string{
		{"describe", "core"}, {"list-clusters"}, {"list-groups", "-j", "core"}, {"list-nodes", "-j", "core"},
		{"events", "core", "-n", "web"}, {"wait", "core", "-n", "web"}, {"logs", "-j", "core", "app"},
		{"services", "-j", "core"}, {"backups", "-j", "core"}, {"export", "core"}, {"secrets", "-j", "core"},
		{"upgrade", "-j", "core", "--dry-run"}, {"use", "core"},
	} {
		if r := clusterctlEnv(t, withOwnRecord, args...); r.code == 2 {
			t.Errorf("%v: bad input: %s", args, r)
		}
	}
	b, err := os.ReadFile(own)
	if err != nil {
		t.Fatal(err)
	}
	// The suite's record holds these calls too.
	if suite := os.Getenv("CLUSTERCTL_RECORD_CALLS"); suite != "" {
		f, err := os.OpenFile(suite, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r := clusterctl(t, "render", "operator-policy", "--read-only", "-j", "core")
	var doc operatorpolicy.Document
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v: %s", err, r)
	}
	recorded := slices.Compact(slices.Sorted(slices.Values(strings.Fields(string(b)))))
	if len(recorded) < 5 {
		t.Fatalf("the read commands recorded only %v", recorded)
	}
	for _, a := range recorded {
		granted := false
		for _, st := range doc.Statement {
			granted = granted || slices.ContainsFunc(st.Action, func(p string) bool { return actionMatches(p, a) })
		}
		if !granted {
			t.Errorf("a read command called %s, which the read-only policy does not grant", a)
		}
	}
	t.Logf("read commands called: %s", strings.Join(recorded, " "))
}
