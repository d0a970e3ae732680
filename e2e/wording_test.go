package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Messages count their nouns and name things by what they are, and a
// --timeout on a plain AWS call says so instead of Go's context error.
func TestWording(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	subnets, err := c.ec2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{
		Filters: []ec2types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}},
	})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("default subnets: %v", err)
	}
	s := subnets.Subnets[0]
	r := must(t, "create-core", "core", "-q", "--vpc-id", aws.ToString(s.VpcId), "--subnet-ids", aws.ToString(s.SubnetId))
	if !strings.Contains(r.stderr, "(1 subnet)\n") {
		t.Errorf("create-core with one subnet:\n%s", r)
	}
	r = must(t, "add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "-q")
	if !strings.Contains(r.stderr, "(1 x t3.small) in cluster core\n") {
		t.Errorf("add-agents:\n%s", r)
	}
	r = clusterctl(t, "delete-core", "core")
	if r.code != 1 || !strings.Contains(r.stderr, `cluster "core" still has 1 group: g;`) {
		t.Errorf("delete-core with one group:\n%s", r)
	}
	r = must(t, "delete-core", "core", "--cascade", "--yes", "-q")
	if !strings.Contains(r.stderr, "Deleting 1 group stack: core-g\n") || !strings.Contains(r.stdout, "; 1 group stack before it)\n") {
		t.Errorf("delete-core --cascade:\n%s", r)
	}
	// A --timeout too short for any AWS call.
	r = clusterctl(t, "list-nodes", "--timeout", "1ns")
	if r.code != 1 || !strings.Contains(r.stderr, "--timeout reached") {
		t.Errorf("list-nodes --timeout 1ns:\n%s", r)
	}
	noRawContextError(t, r)
}
