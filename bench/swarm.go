package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/motoserver"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
)

// moto runs no swarm, so the benchmark plays the managers' leader: before
// each list-nodes repetition it publishes the status snapshot a leader
// that sees every instance of the cluster Ready would, plus one node
// whose instance is gone, so that the merge of both sources does its
// whole work. clusterctl and the baseline read it; the floor fetches it.

// clients talk to one endpoint: the floor's, and the leader's (straight
// to moto, uncounted).
type clients struct {
	ec2 *ec2.Client
	s3  *s3.Client
	cfn *cloudformation.Client
}

func newClients(ctx context.Context, endpoint string) (clients, error) {
	cfg, err := motoserver.Config(ctx, endpoint)
	if err != nil {
		return clients{}, err
	}
	return clients{
		ec2: ec2.NewFromConfig(cfg),
		s3:  s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }),
		cfn: cloudformation.NewFromConfig(cfg),
	}, nil
}

// clusterBucket is the core's bucket.
func (b *bench) clusterBucket() (string, error) {
	out, err := b.direct.cfn.DescribeStacks(b.ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(clusterName)})
	if err != nil || len(out.Stacks) != 1 {
		return "", fmt.Errorf("describing the core: %v", err)
	}
	for _, o := range out.Stacks[0].Outputs {
		if aws.ToString(o.OutputKey) == names.OutputBucketName {
			return aws.ToString(o.OutputValue), nil
		}
	}
	return "", fmt.Errorf("core %s has no %s output", clusterName, names.OutputBucketName)
}

// publishSnapshot plays the leader: every instance of the cluster a Ready
// node (managers first, the first of them leading), and a Down node of a
// terminated instance of group w1.
func (b *bench) publishSnapshot() error {
	var insts []ec2types.Instance
	p := ec2.NewDescribeInstancesPaginator(b.direct.ec2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + names.TagCluster), Values: []string{clusterName}},
		{Name: aws.String("instance-state-name"), Values: []string{"running"}},
	}})
	for p.HasMorePages() {
		page, err := p.NextPage(b.ctx)
		if err != nil {
			return fmt.Errorf("the leader's listing: %w", err)
		}
		for _, r := range page.Reservations {
			insts = append(insts, r.Instances...)
		}
	}
	group := func(i ec2types.Instance) string {
		for _, t := range i.Tags {
			if aws.ToString(t.Key) == names.TagGroup {
				return aws.ToString(t.Value)
			}
		}
		return ""
	}
	sort.Slice(insts, func(i, j int) bool {
		gi, gj := group(insts[i]), group(insts[j])
		if (gi == names.GroupControl) != (gj == names.GroupControl) {
			return gi == names.GroupControl
		}
		return aws.ToString(insts[i].InstanceId) < aws.ToString(insts[j].InstanceId)
	})
	nodes := make([]query.SwarmNode, 0, len(insts)+1)
	for k, i := range insts {
		id, ip, g := aws.ToString(i.InstanceId), aws.ToString(i.PrivateIpAddress), group(i)
		n := query.SwarmNode{
			NodeID: fmt.Sprintf("node%05d", k), InstanceID: id, Hostname: "ip-" + strings.ReplaceAll(ip, ".", "-"), Address: ip,
			Role: "worker", State: "ready", Availability: "active", EngineVersion: "26.1.5", RunningTasks: k % 4,
			EngineLabels: map[string]string{names.EngineLabelGroup: g, names.EngineLabelInstanceID: id, names.EngineLabelInstanceType: string(i.InstanceType)},
		}
		if g == names.GroupControl {
			n.Role, n.ManagerStatus = "manager", "reachable"
			if k == 0 {
				n.ManagerStatus = "leader"
			}
		}
		nodes = append(nodes, n)
	}
	nodes = append(nodes, query.SwarmNode{
		NodeID: "node99999", InstanceID: "i-0123456789abcdef0", Hostname: "ip-gone", Address: "172.31.255.1", Role: "worker", State: "down", Availability: "active",
		EngineLabels:  map[string]string{names.EngineLabelGroup: "w1", names.EngineLabelInstanceID: "i-0123456789abcdef0", names.EngineLabelInstanceType: b.o.itype},
		EngineVersion: "26.1.5",
	})
	body, err := json.Marshal(map[string]any{
		"version": 1, "cluster": clusterName, "time": time.Now().UTC().Format(time.RFC3339), "publisher": nodes[0].InstanceID,
		"caDigest": strings.Repeat("ab", 32), "lastBackup": time.Now().UTC().Format(time.RFC3339), "nodes": nodes,
	})
	if err != nil {
		return err
	}
	_, err = b.direct.s3.PutObject(b.ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(names.StatusKey), Body: strings.NewReader(string(body)), ContentType: aws.String("application/json"),
	})
	if err != nil {
		return fmt.Errorf("publishing the snapshot: %w", err)
	}
	return nil
}
