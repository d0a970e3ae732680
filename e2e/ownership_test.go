package e2e

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// A stack is a group of a cluster when its name and its tags agree. A
// stack that carries a group's tags under another name is listed as a
// conflict (list-groups, describe) and never touched: delete-core
// --cascade leaves it.
func TestForeignStackWithOurTags(t *testing.T) {
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
