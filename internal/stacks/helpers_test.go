package stacks_test

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/cfnfake"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

const runID = "run-7f3a"

type env struct {
	fake *cfnfake.Server
	m    *stacks.Manager
	out  *bytes.Buffer
}

func setup(t *testing.T, mod ...func(*stacks.Options)) *env {
	t.Helper()
	fake := cfnfake.New(t)
	out := &bytes.Buffer{}
	opts := stacks.Options{RunID: runID, Progress: out, Clock: fake.Clock}
	for _, f := range mod {
		f(&opts)
	}
	return &env{fake: fake, m: stacks.NewManager(fake.Client(), opts), out: out}
}

func quietOpts(o *stacks.Options) { o.Progress = nil }

const tpl = `{"Resources":{"Bucket":{"Type":"AWS::S3::Bucket"},"Node":{"Type":"AWS::EC2::Instance"}}}`

var (
	bucket = cfnfake.Res{LogicalID: "Bucket", Type: "AWS::S3::Bucket"}
	node   = cfnfake.Res{LogicalID: "Node", Type: "AWS::EC2::Instance"}
	asg    = cfnfake.Res{LogicalID: "Nodes", Type: "AWS::AutoScaling::AutoScalingGroup"}
	lt     = cfnfake.Res{LogicalID: "LaunchTemplate", Type: "AWS::EC2::LaunchTemplate"}
)

func groupTags(cluster, group string) map[string]string {
	return map[string]string{"clusterctl:cluster": cluster, "clusterctl:role": "agents", "clusterctl:group": group, "clusterctl:version": "test"}
}

func coreTags(cluster string) map[string]string {
	return map[string]string{"clusterctl:cluster": cluster, "clusterctl:role": "core", "clusterctl:group": "control", "clusterctl:version": "test"}
}

var tokenRE = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9]*$`)

// readsBetween returns the stack reads (DescribeStacks, DescribeStackEvents)
// made while the fake clock was in [from, to].
func readsBetween(f *cfnfake.Server, from, to time.Time) []cfnfake.Call {
	var out []cfnfake.Call
	for _, c := range f.Log("") {
		if (c.Action == "DescribeStacks" || c.Action == "DescribeStackEvents") && !c.At.Before(from) && !c.At.After(to) {
			out = append(out, c)
		}
	}
	return out
}

// cancelAfter is a clock that cancels a context once n waits have passed,
// so "Ctrl-C while waiting" happens at a deterministic point.
type cancelAfter struct {
	*cfnfake.Clock
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) After(d time.Duration) <-chan time.Time {
	c.n--
	if c.n == 0 {
		c.cancel()
	}
	return c.Clock.After(d)
}

func lines(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }

type progressBuf struct{ bytes.Buffer }
