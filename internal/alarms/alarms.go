// Package alarms reads a cluster's CloudWatch alarms for describe and
// list-clusters: the alarms the core stack owns (their names are read
// from the stack's resources, never guessed), with their state and since
// when.
package alarms

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwschemas "github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
)

// StackResources is what the reader needs of CloudFormation.
type StackResources interface {
	ListStackResources(ctx context.Context, in *cloudformation.ListStackResourcesInput, opts ...func(*cloudformation.Options)) (*cloudformation.ListStackResourcesOutput, error)
}

// CloudWatch is what the reader needs of CloudWatch.
type CloudWatch interface {
	DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
}

// Alarm is one alarm of a cluster. The JSON keys are a public interface.
type Alarm struct {
	Name  string    `json:"name"`
	Kind  string    `json:"kind"`  // names.AlarmKinds
	State string    `json:"state"` // OK, ALARM or INSUFFICIENT_DATA
	Since time.Time `json:"since"` // when it took that state
	// Reason is CloudWatch's words on the state.
	Reason string `json:"reason"`
}

// StateAlarm is the state of an alarm that went off.
const StateAlarm = "ALARM"

// Reader reads alarms.
type Reader struct {
	Stacks     StackResources
	CloudWatch CloudWatch
	SNS        Subscriptions // the e-mail subscription's state
}

// Read reads the alarms of cluster's core stack (none with alarms off), in
// the order of names.AlarmKinds.
func (r Reader) Read(ctx context.Context, cluster string) ([]Alarm, error) {
	var owned []string
	rp := cloudformation.NewListStackResourcesPaginator(r.Stacks, &cloudformation.ListStackResourcesInput{StackName: aws.String(cluster)})
	for rp.HasMorePages() {
		page, err := rp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the core's alarms: %w", err)
		}
		for _, x := range page.StackResourceSummaries {
			id := aws.ToString(x.PhysicalResourceId)
			if aws.ToString(x.ResourceType) == "AWS::CloudWatch::Alarm" && names.AlarmKind(cluster, id) != "" {
				owned = append(owned, id)
			}
		}
	}
	out := []Alarm{}
	if len(owned) == 0 {
		return out, nil
	}
	p := cloudwatch.NewDescribeAlarmsPaginator(r.CloudWatch, &cloudwatch.DescribeAlarmsInput{AlarmNames: owned})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the alarms' states: %w", err)
		}
		for _, a := range page.MetricAlarms {
			name := aws.ToString(a.AlarmName)
			if !slices.Contains(owned, name) {
				continue
			}
			out = append(out, Alarm{Name: name, Kind: names.AlarmKind(cluster, name), State: string(a.StateValue),
				Since: aws.ToTime(a.StateUpdatedTimestamp).UTC(), Reason: aws.ToString(a.StateReason)})
		}
	}
	kinds := names.AlarmKinds()
	slices.SortFunc(out, func(a, b Alarm) int { return slices.Index(kinds, a.Kind) - slices.Index(kinds, b.Kind) })
	return out, nil
}

// Firing counts the alarms in ALARM.
func Firing(as []Alarm) int {
	n := 0
	for _, a := range as {
		if a.State == StateAlarm {
			n++
		}
	}
	return n
}

// Write writes the alarms as describe shows them, after its other
// sections; now dates their states.
func Write(w io.Writer, as []Alarm, now time.Time) error {
	fmt.Fprintln(w, "\nAlarms:")
	if as == nil {
		fmt.Fprintln(w, "(unknown: not read)")
		return nil
	}
	if len(as) == 0 {
		fmt.Fprintln(w, "(none: the core's alarms are off)")
		return nil
	}
	t := query.Table{Header: []string{"ALARM", "STATE", "SINCE"}}
	for _, a := range as {
		since := "-"
		if !a.Since.IsZero() {
			since = fmt.Sprintf("%s (%s ago)", a.Since.Format(time.RFC3339), now.Sub(a.Since).Truncate(time.Second))
		}
		t.Rows = append(t.Rows, []string{a.Kind, a.State, since})
	}
	return query.WriteTable(w, t)
}

// CloudWatchCalls are the reader's CloudWatch calls, held as a function
// (as internal/awsapi holds the others): a client stored in an interface
// would bring every CloudWatch operation into the binary.
type CloudWatchCalls struct {
	describeAlarms func(context.Context, *cloudwatch.DescribeAlarmsInput, ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
}

// NewCloudWatch returns the calls of cfg. Against an endpoint of its own
// (custom) it speaks CloudWatch's query protocol, which every
// implementation serves (moto serves no other).
func NewCloudWatch(cfg aws.Config, custom bool) CloudWatchCalls {
	return CloudWatchCalls{describeAlarms: cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) {
		if custom {
			o.Protocol = awsquery.New(cwschemas.GraniteServiceVersion20100801)
		}
	}).DescribeAlarms}
}

// DescribeAlarms calls cloudwatch's DescribeAlarms.
func (c CloudWatchCalls) DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error) {
	return c.describeAlarms(ctx, in, opts...)
}

// Subscriptions is what the reader needs of SNS for the e-mail
// subscription of the core's topic.
type Subscriptions interface {
	ListSubscriptionsByTopic(ctx context.Context, in *sns.ListSubscriptionsByTopicInput, opts ...func(*sns.Options)) (*sns.ListSubscriptionsByTopicOutput, error)
}

// Notification is where the alarms send ALARM and OK, as describe shows
// it. The JSON keys are a public interface.
type Notification struct {
	Target string `json:"target"` // the e-mail address
	Topic  string `json:"topic"`  // the core's topic it is subscribed to
	// Pending: SNS sends nothing to the address until the link it e-mailed
	// is clicked; Missing: the address is not subscribed at all (the
	// subscription was deleted).
	Pending bool `json:"pending"`
	Missing bool `json:"missing,omitempty"`
}

// pendingConfirmation is the SubscriptionArn SNS gives a subscription
// the recipient has not confirmed.
const pendingConfirmation = "PendingConfirmation"

// Subscription reads the state of the e-mail subscription of the core's
// topic (names.ResourceAlarmTopic): confirmed or pending.
func (r Reader) Subscription(ctx context.Context, cluster, email string) (*Notification, error) {
	n := &Notification{Target: email}
	rp := cloudformation.NewListStackResourcesPaginator(r.Stacks, &cloudformation.ListStackResourcesInput{StackName: aws.String(cluster)})
	for n.Topic == "" && rp.HasMorePages() {
		page, err := rp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the core's topic: %w", err)
		}
		for _, x := range page.StackResourceSummaries {
			if aws.ToString(x.LogicalResourceId) == names.ResourceAlarmTopic {
				n.Topic = aws.ToString(x.PhysicalResourceId)
			}
		}
	}
	if n.Topic == "" {
		return nil, fmt.Errorf("reading the core's topic: stack %s has no %s", cluster, names.ResourceAlarmTopic)
	}
	n.Missing = true
	p := sns.NewListSubscriptionsByTopicPaginator(r.SNS, &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(n.Topic)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the subscriptions of %s: %w", n.Topic, err)
		}
		for _, s := range page.Subscriptions {
			if aws.ToString(s.Protocol) == "email" && strings.EqualFold(aws.ToString(s.Endpoint), email) {
				n.Missing = false
				n.Pending = aws.ToString(s.SubscriptionArn) == pendingConfirmation
			}
		}
	}
	return n, nil
}

// WriteNotification writes the notification line of describe.
func WriteNotification(w io.Writer, n *Notification) {
	switch {
	case n == nil:
	case n.Missing:
		fmt.Fprintf(w, "\nNotify: %s (not subscribed to %s any more)\n", n.Target, n.Topic)
	case n.Pending:
		fmt.Fprintf(w, "\nNotify: %s (pending confirmation: nothing is sent until the link SNS e-mailed is clicked)\n", n.Target)
	default:
		fmt.Fprintf(w, "\nNotify: %s (confirmed)\n", n.Target)
	}
}
