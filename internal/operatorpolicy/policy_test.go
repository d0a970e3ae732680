package operatorpolicy

import (
	"encoding/json"
	"io/fs"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/clusterctl/clusterctl/internal/alarms"
	"github.com/clusterctl/clusterctl/internal/awsapi"
	"github.com/clusterctl/clusterctl/internal/awsx"
	"github.com/clusterctl/clusterctl/templates"
)

var scopes = []Scope{
	{},
	{Cluster: "prod", Region: "eu-west-1", Account: "123456789012"},
	{Cluster: "prod", Network: "main", Region: "cn-north-1"},
}

var (
	sidRE    = regexp.MustCompile(`^[A-Za-z0-9]+$`) // what IAM accepts in a Sid
	actionRE = regexp.MustCompile(`^[a-z0-9-]+:[A-Za-z0-9]+\*?$`)
)

// Every document, and every part of it, is a policy IAM takes: JSON, a
// Sid of IAM's characters on every statement, each once, actions and
// resources well formed, every part within a managed policy's size.
func TestDocumentsAreValid(t *testing.T) {
	for _, s := range scopes {
		for _, readOnly := range []bool{false, true} {
			doc := Build(s, readOnly)
			b, err := Encode(doc)
			if err != nil {
				t.Fatal(err)
			}
			var back Document
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("%+v: not JSON: %v", s, err)
			}
			if back.Version != "2012-10-17" || len(back.Statement) == 0 {
				t.Fatalf("%+v: version %q, %d statements", s, back.Version, len(back.Statement))
			}
			seen := map[string]bool{}
			for _, st := range back.Statement {
				if !sidRE.MatchString(st.Sid) || seen[st.Sid] {
					t.Errorf("%+v: Sid %q missing, not of IAM's characters or twice", s, st.Sid)
				}
				seen[st.Sid] = true
				if st.Effect != "Allow" || len(st.Action) == 0 || len(st.Resource) == 0 {
					t.Errorf("%s: effect %q, %d actions, %d resources", st.Sid, st.Effect, len(st.Action), len(st.Resource))
				}
				for _, a := range st.Action {
					if !actionRE.MatchString(a) {
						t.Errorf("%s: action %q", st.Sid, a)
					}
				}
				for _, r := range st.Resource {
					if r != "*" && !strings.HasPrefix(r, "arn:") || strings.ContainsAny(r, " ${}") {
						t.Errorf("%s: resource %q", st.Sid, r)
					}
				}
			}
			parts := Split(doc, ManagedPolicyMax)
			var joined []Statement
			for _, p := range parts {
				if Size(p) > ManagedPolicyMax {
					t.Errorf("%+v: a part of %d characters", s, Size(p))
				}
				joined = append(joined, p.Statement...)
			}
			if !reflect.DeepEqual(joined, doc.Statement) {
				t.Errorf("%+v: the parts are not the policy's statements in order", s)
			}
		}
	}
}

// readVerbs begin the names of the actions that change nothing.
var readVerbs = []string{"Describe", "List", "Get", "Filter"}

func isRead(action string) bool {
	_, op, _ := strings.Cut(action, ":")
	for _, v := range readVerbs {
		if strings.HasPrefix(op, v) {
			return true
		}
	}
	return false
}

// The read-only policy grants reads only; the whole one grants more.
func TestReadOnlyChangesNothing(t *testing.T) {
	for _, s := range scopes {
		for _, readOnly := range []bool{true, false} {
			var writes []string
			for _, st := range Build(s, readOnly).Statement {
				for _, a := range st.Action {
					if !isRead(a) {
						writes = append(writes, a)
					}
				}
			}
			if readOnly && len(writes) > 0 {
				t.Errorf("%+v: the read-only policy grants %v", s, writes)
			}
			if !readOnly && !slices.Contains(writes, "cloudformation:DeleteStack") {
				t.Errorf("%+v: the whole policy grants no cloudformation:DeleteStack", s)
			}
		}
	}
}

// resourceTypeRE finds a resource's type in a template; parameter types
// (AWS::EC2::VPC::Id, AWS::SSM::Parameter::Value<...>) have more parts.
var resourceTypeRE = regexp.MustCompile(`"Type":\s*"(AWS::[A-Za-z0-9]+::[A-Za-z0-9]+)"`)

// Every resource type of the templates has its entry, and no entry is
// of a type the templates no longer have.
func TestEveryTemplateResourceTypeHasItsActions(t *testing.T) {
	inTemplates := map[string]bool{}
	err := fs.WalkDir(templates.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(templates.FS, path)
		for _, m := range resourceTypeRE.FindAllStringSubmatch(string(b), -1) {
			inTemplates[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(inTemplates) < 20 {
		t.Fatalf("found %d resource types in templates/: the pattern is wrong", len(inTemplates))
	}
	have := ResourceTypes()
	if !slices.IsSorted(have) || len(slices.Compact(slices.Clone(have))) != len(have) {
		t.Errorf("resourceTypes is not sorted, or has a type twice")
	}
	for typ := range inTemplates {
		if !slices.Contains(have, typ) {
			t.Errorf("templates/ use %s: resourceTypes has no entry for it (what CloudFormation calls to create, update, tag and delete it)", typ)
		}
	}
	for _, typ := range have {
		if !inTemplates[typ] {
			t.Errorf("resourceTypes has %s, which no template uses", typ)
		}
	}
	sids := map[string]bool{}
	for _, st := range statements {
		sids[st.sid] = true
	}
	for _, r := range resourceTypes {
		for _, g := range r.grants {
			if !sids[g.sid] || len(g.actions) == 0 {
				t.Errorf("%s: grant to statement %q, which does not exist, or of no action", r.typ, g.sid)
			}
		}
	}
}

// serviceIDs are the SDK's ids of the services of internal/awsapi's types.
var serviceIDs = map[string]string{
	"ASG": autoscaling.ServiceID, "CloudFormation": cloudformation.ServiceID, "EC2": ec2.ServiceID, "S3": s3.ServiceID,
	"SQS": sqs.ServiceID, "SSM": ssm.ServiceID, "SNS": sns.ServiceID, "SecretsManager": secretsmanager.ServiceID,
	"STS": sts.ServiceID, "IAM": iam.ServiceID, "ACM": acm.ServiceID, "ELB": elbv2.ServiceID,
	"CloudWatchLogs": cloudwatchlogs.ServiceID, "CloudWatchCalls": cloudwatch.ServiceID,
}

// clientActions are the IAM actions of every call clusterctl's clients
// can make (internal/awsapi's, and the alarms' CloudWatch call), the
// versioned S3 deletes included.
func clientActions(t *testing.T) []string {
	clients := []any{awsapi.ASG{}, awsapi.CloudFormation{}, awsapi.EC2{}, awsapi.S3{}, awsapi.SQS{}, awsapi.SSM{}, awsapi.SNS{},
		awsapi.SecretsManager{}, awsapi.STS{}, awsapi.IAM{}, awsapi.ACM{}, awsapi.ELB{}, awsapi.CloudWatchLogs{}, alarms.CloudWatchCalls{}}
	var out []string
	for _, c := range clients {
		typ := reflect.TypeOf(c)
		id, ok := serviceIDs[typ.Name()]
		if !ok {
			t.Fatalf("no service id for %s", typ)
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Type.Kind() != reflect.Func {
				continue
			}
			op := strings.ToUpper(f.Name[:1]) + f.Name[1:]
			out = append(out, awsx.IAMActions(id, op, nil)...)
			if id == s3.ServiceID {
				// clusterctl deletes versions; it reads none (the nodes do).
				if op == "DeleteObject" || op == "DeleteObjects" {
					out = append(out, "s3:DeleteObjectVersion")
				}
			}
		}
	}
	if len(out) < 40 {
		t.Fatalf("%d client actions: the clients' fields are not what this test reads", len(out))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// The commands' part of the policy is exactly what the clients can call:
// a call added to a client without its action in the policy fails here,
// before any end-to-end run.
func TestCallsAreTheClientsCalls(t *testing.T) {
	clients, calls := clientActions(t), Calls(false)
	for _, a := range clients {
		if !slices.Contains(calls, a) {
			t.Errorf("the clients call %s: the policy's statements do not grant it", a)
		}
	}
	for _, a := range calls {
		if !slices.Contains(clients, a) {
			t.Errorf("the policy grants %s as a call, which no client makes", a)
		}
	}
}
