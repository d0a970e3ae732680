package alarms

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

type stackFake struct {
	res []cfntypes.StackResourceSummary
	err error
}

func (s stackFake) ListStackResources(context.Context, *cloudformation.ListStackResourcesInput, ...func(*cloudformation.Options)) (*cloudformation.ListStackResourcesOutput, error) {
	return &cloudformation.ListStackResourcesOutput{StackResourceSummaries: s.res}, s.err
}

type cwFake struct {
	alarms []cwtypes.MetricAlarm
	asked  []string
}

func (c *cwFake) DescribeAlarms(_ context.Context, in *cloudwatch.DescribeAlarmsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error) {
	c.asked = in.AlarmNames
	var out []cwtypes.MetricAlarm
	for _, a := range c.alarms {
		for _, n := range in.AlarmNames {
			if n == aws.ToString(a.AlarmName) {
				out = append(out, a)
			}
		}
	}
	return &cloudwatch.DescribeAlarmsOutput{MetricAlarms: out}, nil
}

func res(typ, id string) cfntypes.StackResourceSummary {
	return cfntypes.StackResourceSummary{ResourceType: aws.String(typ), PhysicalResourceId: aws.String(id)}
}

func alarm(name string, state cwtypes.StateValue, at time.Time) cwtypes.MetricAlarm {
	return cwtypes.MetricAlarm{AlarmName: aws.String(name), StateValue: state, StateUpdatedTimestamp: aws.Time(at), StateReason: aws.String("r")}
}

// Only the alarms the core stack owns are read, in the kinds' order: one
// that shares the names' shape but is no resource of the stack is not.
func TestRead(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st := stackFake{res: []cfntypes.StackResourceSummary{
		res("AWS::CloudWatch::Alarm", "clusterctl-core-nodes-down"),
		res("AWS::CloudWatch::Alarm", "clusterctl-core-quorum-at-risk"),
		res("AWS::CloudWatch::Alarm", "someone-elses"),
		res("AWS::SNS::Topic", "clusterctl-core-disk-full"),
	}}
	cw := &cwFake{alarms: []cwtypes.MetricAlarm{
		alarm("clusterctl-core-nodes-down", cwtypes.StateValueAlarm, at),
		alarm("clusterctl-core-quorum-at-risk", cwtypes.StateValueOk, at),
		alarm("clusterctl-core-disk-full", cwtypes.StateValueAlarm, at),
	}}
	got, err := Reader{Stacks: st, CloudWatch: cw}.Read(context.Background(), "core")
	if err != nil {
		t.Fatal(err)
	}
	if len(cw.asked) != 2 || len(got) != 2 || got[0].Kind != "quorum-at-risk" || got[1].Kind != "nodes-down" ||
		got[1].State != StateAlarm || !got[1].Since.Equal(at) || Firing(got) != 1 {
		t.Errorf("asked %v, read %+v", cw.asked, got)
	}
	var b bytes.Buffer
	if err := Write(&b, got, at.Add(90*time.Second)); err != nil || !strings.Contains(b.String(), "nodes-down") || !strings.Contains(b.String(), "1m30s ago") {
		t.Errorf("written %q, %v", b.String(), err)
	}

	none, err := Reader{Stacks: stackFake{}, CloudWatch: &cwFake{}}.Read(context.Background(), "core")
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("alarms off: %v, %v", none, err)
	}
	if _, err := (Reader{Stacks: stackFake{err: errors.New("denied")}, CloudWatch: &cwFake{}}).Read(context.Background(), "core"); err == nil {
		t.Error("a refused read: no error")
	}
}
