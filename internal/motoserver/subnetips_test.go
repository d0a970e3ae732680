package motoserver

import (
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Instances launched into one subnet at the same time each get an address
// of their own, as EC2 gives them, never an error. Groups created side by
// side launch into the same subnets; moto's subnet handed its addresses
// out from one generator that two request threads ran at once, and a
// group's creation failed ("generator already executing").
func TestLaunchesIntoOneSubnetAtOnce(t *testing.T) {
	ctx, cfg := started(t)
	// No retry: a failed launch must show, not be retried away.
	c := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.RetryMaxAttempts = 1 })
	subnet := defaultSubnet(ctx, t, c).SubnetId
	const launchers, launches, each = 16, 10, 10
	var (
		mu     sync.Mutex
		failed []error
		ips    = map[string]int{}
		wg     sync.WaitGroup
	)
	for range launchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range launches {
				out, err := c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String("ami-12c6146b"), MinCount: aws.Int32(each), MaxCount: aws.Int32(each), SubnetId: subnet})
				mu.Lock()
				if err != nil {
					failed = append(failed, err)
				} else {
					for _, i := range out.Instances {
						ips[aws.ToString(i.PrivateIpAddress)]++
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%d of %d launches failed, the first: %v", len(failed), launchers*launches, failed[0])
	}
	for ip, n := range ips {
		if n > 1 {
			t.Errorf("address %s given to %d instances", ip, n)
		}
	}
	if want := launchers*launches*each - len(failed)*each; len(ips) != want {
		t.Errorf("%d addresses for %d instances", len(ips), want)
	}
}
