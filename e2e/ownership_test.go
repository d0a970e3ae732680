package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/names"
)

// A stack is a group of a cluster when its name and its tags agree. A
// stack that carries a group's tags under another name is listed as a
// conflict (list-groups, describe) and never touched: delete-core
// --cascade leaves it.
func TestForeignStackWithOurTags(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	must(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-q")
	_, err := c.cfn.CreateStack(t.Context(), &cloudformation.CreateStackInput{
		StackName:    aws.String("payments-prod-db"),
		TemplateBody: aws.String(`{"Resources":{"Queue":{"Type":"AWS::SQS::Queue"}}}`),
		Tags: []cfntypes.Tag{
			{Key: aws.String("clusterctl:cluster"), Value: aws.String("core")},
			{Key: aws.String("clusterctl:role"), Value: aws.String("agents")},
			{Key: aws.String("clusterctl:group"), Value: aws.String("g")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	r := must(t, "list-groups", "-j", "core", "-o", "json")
	groups := decode[[]map[string]any](t, r)
	if len(groups) != 1 || groups[0]["stack"] != "core-g" {
		t.Errorf("list-groups: %v, want core-g alone", groups)
	}
	conflict := "conflict: stack payments-prod-db (CREATE_COMPLETE) is not clusterctl's: it is tagged as group g of cluster core, whose stack is named core-g; it is never touched"
	if !strings.Contains(r.stderr, conflict) {
		t.Errorf("list-groups does not report the conflict:\n%s", r.stderr)
	}
	d := describeCluster(t, "core")
	if len(d.Groups) != 1 || len(d.Conflicts) != 1 || d.Conflicts[0].Stack != "payments-prod-db" {
		t.Errorf("describe: %+v", d)
	}
	if text := must(t, "describe", "core").stdout; !strings.Contains(text, "Conflicts:\nstack payments-prod-db") {
		t.Errorf("describe's text does not list the conflict:\n%s", text)
	}

	del := must(t, "delete-core", "core", "--cascade", "--yes", "-q")
	if !strings.Contains(del.stderr, "Note: stack payments-prod-db") {
		t.Errorf("delete-core does not say it leaves the conflict:\n%s", del.stderr)
	}
	if left := c.stackNames(t); !sameSet(left, []string{"payments-prod-db"}) {
		t.Errorf("stacks after delete-core --cascade: %v, want payments-prod-db alone", left)
	}
}

// A stack that copies a core's tags, and names a bucket of its own as its
// BucketName, is not proven a core by them: list-clusters reads no
// snapshot from that bucket (which carries no cluster tags), and describe
// says what it is rather than telling the operator to run update-core on
// it (whose plan would replace what it holds).
func TestForeignCoreStackReadsNoBucket(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	_, err := c.cfn.CreateStack(t.Context(), &cloudformation.CreateStackInput{
		StackName:    aws.String("evil"),
		TemplateBody: aws.String(`{"Resources":{"Bucket":{"Type":"AWS::S3::Bucket","Properties":{"BucketName":"evil-bucket"}}},"Outputs":{"BucketName":{"Value":{"Ref":"Bucket"}}}}`),
		Tags: []cfntypes.Tag{
			{Key: aws.String("clusterctl:cluster"), Value: aws.String("evil")},
			{Key: aws.String("clusterctl:role"), Value: aws.String("core")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Format(time.RFC3339)
	forged := `{"version":1,"cluster":"evil","time":"` + at + `","publisher":"i-1","caDigest":"` + strings.Repeat("ab", 32) + `","lastBackup":"` + at + `",` +
		`"nodes":[{"nodeId":"n1","instanceId":"i-1","role":"manager","state":"ready","availability":"active","managerStatus":"leader"}]}`
	if _, err := c.s3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("evil-bucket"), Key: aws.String(names.StatusKey), Body: strings.NewReader(forged)}); err != nil {
		t.Fatal(err)
	}

	type summary struct {
		Cluster, Health, Swarm string
		Nodes                  *int
	}
	r := must(t, "list-clusters", "-o", "json")
	got := decode[[]summary](t, r)
	if len(got) != 1 || got[0].Cluster != "evil" || got[0].Nodes != nil || got[0].Health == "healthy" {
		t.Errorf("list-clusters read the snapshot of a bucket that carries no cluster tags: %+v", got)
	}
	if len(got) == 1 && !strings.Contains(got[0].Swarm, "evil-bucket carries no clusterctl:cluster=evil tag") {
		t.Errorf("list-clusters does not say why the swarm is unknown:\n%s", r)
	}
	d := must(t, "describe", "evil")
	if strings.Contains(d.stdout, "update-core") || !strings.Contains(d.stdout, "it may not be clusterctl's") {
		t.Errorf("describe of a stack with copied tags:\n%s", d.stdout)
	}
}

// A name taken by a stack of another kind is refused naming what that
// stack is: a cluster named like another cluster's group stack, a group
// named like another cluster's core (exit 1, nothing created).
func TestTakenNameSaysWhatTheStackIs(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	must(t, "create-core", "core", "-q")
	must(t, "add-agents", "-n", "auto", "-t", "t3.small", "-j", "core", "-q")
	r := clusterctl(t, "create-core", "core-auto", "-q")
	if r.code != 1 || !strings.Contains(r.stderr, "stack core-auto already exists and is group auto of cluster core (status CREATE_COMPLETE): the core of cluster \"core-auto\" would need that name") ||
		strings.Contains(r.stderr, "cluster \"core-auto\" already exists") {
		t.Errorf("create-core over a group's stack:\n%s", r)
	}
	must(t, "create-core", "lab-x", "-q")
	must(t, "create-core", "lab", "-q")
	for _, args := range [][]string{
		{"add-agents", "-n", "x", "-t", "t3.small", "-j", "lab", "-q"},
		{"add-agents", "-n", "x", "-t", "t3.small", "-j", "lab", "--replace-failed", "-q"},
	} {
		r = clusterctl(t, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "stack lab-x already exists and is the core of cluster lab-x (status CREATE_COMPLETE): group \"x\" of cluster \"lab\" would need that name") {
			t.Errorf("%s over another cluster's core:\n%s", strings.Join(args, " "), r)
		}
	}
	if got := c.stackNames(t); !sameSet(got, []string{"core", "core-auto", "lab-x", "lab"}) {
		t.Errorf("stacks: %v", got)
	}
}
