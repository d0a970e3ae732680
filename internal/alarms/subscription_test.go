package alarms

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/clusterctl/clusterctl/internal/names"
)

type snsFake struct{ subs []snstypes.Subscription }

func (f snsFake) ListSubscriptionsByTopic(_ context.Context, in *sns.ListSubscriptionsByTopicInput, _ ...func(*sns.Options)) (*sns.ListSubscriptionsByTopicOutput, error) {
	var out []snstypes.Subscription
	for _, s := range f.subs {
		if aws.ToString(s.TopicArn) == aws.ToString(in.TopicArn) {
			out = append(out, s)
		}
	}
	return &sns.ListSubscriptionsByTopicOutput{Subscriptions: out}, nil
}

// The e-mail subscription of the core's topic as SNS has it: pending
// until the recipient confirms (SNS's SubscriptionArn "PendingConfirmation"),
// confirmed after, missing when deleted; describe says which.
func TestSubscription(t *testing.T) {
	const topic = "arn:aws:sns:us-east-1:123456789012:core-AlarmTopic-1"
	stack := stackFake{res: []cfntypes.StackResourceSummary{
		{LogicalResourceId: aws.String("Bucket"), PhysicalResourceId: aws.String("b")},
		{LogicalResourceId: aws.String(names.ResourceAlarmTopic), PhysicalResourceId: aws.String(topic)},
	}}
	sub := func(arn, endpoint string) snstypes.Subscription {
		return snstypes.Subscription{TopicArn: aws.String(topic), Protocol: aws.String("email"), Endpoint: aws.String(endpoint), SubscriptionArn: aws.String(arn)}
	}
	for _, tt := range []struct {
		name string
		subs []snstypes.Subscription
		want Notification
		text string
	}{
		{"pending", []snstypes.Subscription{sub("PendingConfirmation", "ops@example.com")},
			Notification{Target: "ops@example.com", Topic: topic, Pending: true}, "pending confirmation"},
		{"confirmed", []snstypes.Subscription{sub(topic+":0b1c", "Ops@Example.com")},
			Notification{Target: "ops@example.com", Topic: topic}, "(confirmed)"},
		{"missing", []snstypes.Subscription{sub(topic+":0b1c", "other@example.com")},
			Notification{Target: "ops@example.com", Topic: topic, Missing: true}, "not subscribed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Reader{Stacks: stack, SNS: snsFake{tt.subs}}.Subscription(context.Background(), "core", "ops@example.com")
			if err != nil || *n != tt.want {
				t.Fatalf("got %+v, %v; want %+v", n, err, tt.want)
			}
			var b bytes.Buffer
			WriteNotification(&b, n)
			if !strings.Contains(b.String(), "Notify: ops@example.com") || !strings.Contains(b.String(), tt.text) {
				t.Errorf("describe says %q, want %q", b.String(), tt.text)
			}
		})
	}
}
