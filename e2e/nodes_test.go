package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

var (
	// The loader's line that fetches the node's settings and checks them.
	nodeSettingsLine = regexp.MustCompile(`(?m)^get '(join/groups/[^']+)' "\$env" ([0-9a-f]{64})$`)
)

// nodeConfig is what a launch template version says about the node
// configuration: its bucket key and SHA-256.
type nodeConfig struct {
	version  int64
	key, sum string
}

// latestNodeConfig reads the group's launch template versions and returns
// their number and the node configuration the latest one names; it checks
// that the Auto Scaling group uses that version.
func latestNodeConfig(t *testing.T, c clients, group string) (int, nodeConfig) {
	t.Helper()
	asg := groupASG(t, c, "core", group)
	versions := launchTemplateVersions(t, c, aws.ToString(asg.LaunchTemplate.LaunchTemplateId))
	sort.Slice(versions, func(i, j int) bool {
		return aws.ToInt64(versions[i].VersionNumber) < aws.ToInt64(versions[j].VersionNumber)
	})
	latest := versions[len(versions)-1]
	if got := aws.ToString(asg.LaunchTemplate.Version); got != "$Latest" && got != "" && got != strconv.FormatInt(aws.ToInt64(latest.VersionNumber), 10) {
		t.Errorf("auto scaling group uses launch template version %s, latest is %d", got, aws.ToInt64(latest.VersionNumber))
	}
	ud, err := base64.StdEncoding.DecodeString(aws.ToString(latest.LaunchTemplateData.UserData))
	if err != nil {
		t.Fatalf("user data of version %d: %v", aws.ToInt64(latest.VersionNumber), err)
	}
	m := nodeSettingsLine.FindSubmatch(ud)
	if m == nil {
		t.Fatalf("user data names no node configuration:\n%s", ud)
	}
	return len(versions), nodeConfig{aws.ToInt64(latest.VersionNumber), string(m[1]), string(m[2])}
}

// checkNodeConfig reads the object a launch template names and checks its
// hash, encryption and content.
func checkNodeConfig(t *testing.T, c clients, bucket string, nc nodeConfig, contains ...string) {
	t.Helper()
	out, err := c.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(nc.key)})
	if err != nil {
		t.Fatalf("node configuration s3://%s/%s: %v", bucket, nc.key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if got := hex.EncodeToString(sum[:]); got != nc.sum || !strings.HasSuffix(nc.key, "/node-"+nc.sum+".env") {
		t.Errorf("s3://%s/%s has SHA-256 %s; the launch template names %s", bucket, nc.key, got, nc.sum)
	}
	if out.ServerSideEncryption != "AES256" {
		t.Errorf("node configuration stored with encryption %q", out.ServerSideEncryption)
	}
	for _, s := range contains {
		if !strings.Contains(string(body), s) {
			t.Errorf("node configuration lacks %q", s)
		}
	}
}

// A group's node configuration is in the bucket under the hash its launch
// template names; a label change makes a new launch template version that
// names a new configuration, and an identical update changes nothing.
func TestNodeConfiguration(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	bucket := outputs(describeStack(t, c, "core"))["BucketName"]

	must(t, "add-agents", "-n", "web", "-t", "c5.large", "-j", "core", "-c", "2", "-m", "role=web", "-q")
	n1, first := latestNodeConfig(t, c, "web")
	checkNodeConfig(t, c, bucket, first, "\nNODE_LABELS=role=web\n", "\nNODE_GROUP=web\n", "CLUSTER_NAME=core\n")

	r := must(t, "update-group", "-n", "web", "-j", "core", "-m", "role=api", "-q", "--yes")
	if !strings.Contains(r.stderr, "Uploading node configuration") {
		t.Errorf("update-group did not upload the new node configuration:\n%s", r)
	}
	n2, second := latestNodeConfig(t, c, "web")
	if n2 != n1+1 || second.version <= first.version {
		t.Errorf("launch template versions %d → %d after a label change, want one more", n1, n2)
	}
	if second.sum == first.sum || second.key == first.key {
		t.Errorf("label change kept the node configuration %s", first.key)
	}
	checkNodeConfig(t, c, bucket, second, "\nNODE_LABELS=role=api\n")
	// The previous configuration stays for a rollback to the previous version.
	checkNodeConfig(t, c, bucket, first, "\nNODE_LABELS=role=web\n")

	r = must(t, "update-group", "-n", "web", "-j", "core", "-m", "role=api", "-q")
	if !strings.Contains(r.stderr, "No changes") {
		t.Errorf("identical update:\n%s", r)
	}
	if n3, third := latestNodeConfig(t, c, "web"); n3 != n2 || third != second {
		t.Errorf("identical update: %d versions naming %s, want %d naming %s", n3, third.key, n2, second.key)
	}
}

// A wrong name is "not found" (exit 1), not an empty cluster; a cluster or
// group that exists but has no nodes or groups is an empty table (exit 0).
func TestListWrongNames(t *testing.T) {
	parallel(t)
	resetMoto(t)
	must(t, "create-core", "core", "-q")
	must(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-c", "0", "-q")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"list-nodes", "-j", "nosuch"}, `cluster "nosuch" not found`},
		{[]string{"list-groups", "-j", "nosuch"}, `cluster "nosuch" not found`},
		{[]string{"list-nodes", "-j", "core", "-n", "nosuch"}, `group "nosuch" not found in cluster "core"`},
		{[]string{"list-nodes", "-j", "nosuch", "-n", "g"}, `cluster "nosuch" not found`},
		{[]string{"list-nodes", "-j", "nosuch", "-o", "json"}, `cluster "nosuch" not found`},
	} {
		r := clusterctl(t, tt.args...)
		if r.code != 1 || !strings.Contains(r.stderr, tt.want) || r.stdout != "" {
			t.Errorf("%s: want exit 1, %q and nothing on stdout\n%s", strings.Join(tt.args, " "), tt.want, r)
		}
	}
	// Group g has no nodes: an empty list, not an error.
	if r := must(t, "list-nodes", "-j", "core", "-n", "g", "-o", "json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("list-nodes of a group with no nodes:\n%s", r)
	}
	must(t, "remove-group", "-n", "g", "-j", "core", "--yes", "-q")
	if r := must(t, "list-groups", "-j", "core", "-o", "json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("list-groups of a cluster with no groups:\n%s", r)
	}
	// Nodes found need no check of the group: the EC2 page, and the core
	// and its bucket (its tags) that the swarm's snapshot is read from.
	r := must(t, "list-nodes", "-j", "core", "-n", "control", "-v")
	if !strings.Contains(r.stderr, "aws calls: 5 (CloudFormation.DescribeStacks=1 CloudFormation.ListStackResources=1 EC2.DescribeInstances=1 S3.GetBucketTagging=1 S3.GetObject=1)") {
		t.Errorf("list-nodes with nodes found made more than its calls:\n%s", r.stderr)
	}
}
