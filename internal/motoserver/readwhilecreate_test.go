package motoserver

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// A stack read while it is being created has each of its resources made
// once, as CloudFormation makes them. clusterctl watches a stack it creates
// (DescribeStacks) while moto creates it in another request's thread;
// moto evaluated the outputs of a stack for each read, and an output's Ref
// to a resource not yet made made it there and then, beside the creation's
// own: an apply's group came out with two Auto Scaling groups.
func TestStackReadWhileCreatedMakesEachResourceOnce(t *testing.T) {
	ctx, cfg := started(t)
	cfn := cloudformation.NewFromConfig(cfg)
	// Many resources, each named by an output, make the creation long
	// enough for the reads to meet it.
	const queues, rounds = 60, 12
	var resources, outputs []string
	for i := range queues {
		resources = append(resources, fmt.Sprintf(`"Q%d": {"Type": "AWS::SQS::Queue"}`, i))
		outputs = append(outputs, fmt.Sprintf(`"O%d": {"Value": {"Ref": "Q%d"}}`, i, i))
	}
	body := `{"Resources": {` + strings.Join(resources, ",") + `}, "Outputs": {` + strings.Join(outputs, ",") + `}}`
	for round := range rounds {
		name := fmt.Sprintf("watched-%d", round)
		done := make(chan struct{})
		var readers sync.WaitGroup
		for range 2 * runtime.NumCPU() {
			readers.Add(1)
			go func() {
				defer readers.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					// A stack not there yet, or an answer moto fails, is
					// only a read missed: what counts is what is made.
					cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
				}
			}()
		}
		createStack(ctx, t, cfn, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body)})
		close(done)
		readers.Wait()
	}
	out, err := sqs.NewFromConfig(cfg).ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(out.QueueUrls); got != rounds*queues {
		t.Errorf("%d queues made for %d stacks of %d", got, rounds, queues)
	}
}
