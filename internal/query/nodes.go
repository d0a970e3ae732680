// Package query owns inventory (nodes and groups of a cluster) and how
// results are printed.
package query

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// EC2API is what list-nodes needs from EC2.
type EC2API interface {
	DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
}

// Node is one instance of a cluster. The JSON keys are a public interface.
type Node struct {
	Cluster      string `json:"cluster"`
	Group        string `json:"group"`
	InstanceID   string `json:"instanceId"`
	InstanceType string `json:"instanceType"`
	// Lifecycle is spot or on-demand (or another purchase option EC2
	// names, such as scheduled or capacity-block).
	Lifecycle  string            `json:"lifecycle"`
	State      string            `json:"state"`
	PrivateIP  string            `json:"privateIp"`
	PublicIP   string            `json:"publicIp"`
	Zone       string            `json:"zone"`
	LaunchTime *time.Time        `json:"launchTime"` // nil for a swarm node without an instance
	Labels     map[string]string `json:"labels"`
	// Swarm is what the swarm's status snapshot says of the node; nil when
	// no snapshot of its cluster was read (see NodeSwarm).
	Swarm *NodeSwarm `json:"swarm"`
	// SwarmOnly flags a node of the swarm whose instance is not among the
	// cluster's instances (terminated, or never tagged as the cluster's).
	SwarmOnly bool `json:"swarmOnly"`
	// ImageID is the AMI EC2 says the instance was launched from.
	ImageID string `json:"imageId"`
	// Bucket is the cluster bucket the instance's tag names
	// (names.TagNodeBucket); "" for instances launched without it.
	Bucket string `json:"-"`
}

// liveStates leaves out terminated instances, which EC2 keeps listing for
// an hour after they are gone.
var liveStates = []string{"pending", "running", "shutting-down", "stopping", "stopped"}

// ListNodes lists the nodes of one cluster (or of every cluster when cluster
// is ""), optionally of one group, with one paginated DescribeInstances
// filtered by the ownership tags: no call per group, no CloudFormation call.
func ListNodes(ctx context.Context, api EC2API, cluster, group string) ([]Node, error) {
	filters := []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: liveStates}}
	if cluster == "" {
		filters = append(filters, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{names.TagCluster}})
	} else {
		filters = append(filters, ec2types.Filter{Name: aws.String("tag:" + names.TagCluster), Values: []string{cluster}})
	}
	if group != "" {
		filters = append(filters, ec2types.Filter{Name: aws.String("tag:" + names.TagGroup), Values: []string{group}})
	}
	in := &ec2.DescribeInstancesInput{Filters: filters, MaxResults: aws.Int32(1000)}
	var nodes []Node
	p := ec2.NewDescribeInstancesPaginator(api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				nodes = append(nodes, nodeFrom(inst))
			}
		}
	}
	sortNodes(nodes)
	return nodes, nil
}

// sortNodes orders nodes by cluster, the managers first, then by group and
// instance (a swarm node without an instance by its node id); nodes equal
// in all of these keep their order. It sorts indexes, not the nodes
// themselves: a snapshot may hold hundreds of thousands, and a stable sort
// moves elements O(n log² n) times.
func sortNodes(nodes []Node) {
	idx := make([]int, len(nodes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(i, j int) int {
		a, b := &nodes[i], &nodes[j]
		if c := cmp.Compare(a.Cluster, b.Cluster); c != 0 {
			return c
		}
		if ac, bc := a.Group == names.GroupControl, b.Group == names.GroupControl; ac != bc {
			if ac {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		if c := cmp.Compare(a.InstanceID, b.InstanceID); c != 0 {
			return c
		}
		if c := cmp.Compare(a.swarmID(), b.swarmID()); c != 0 {
			return c
		}
		return cmp.Compare(i, j)
	})
	sorted := make([]Node, len(nodes))
	for at, i := range idx {
		sorted[at] = nodes[i]
	}
	copy(nodes, sorted)
}

func (n Node) swarmID() string {
	if n.Swarm == nil {
		return ""
	}
	return n.Swarm.NodeID
}

func nodeFrom(inst ec2types.Instance) Node {
	n := Node{
		InstanceID:   aws.ToString(inst.InstanceId),
		InstanceType: string(inst.InstanceType),
		PrivateIP:    aws.ToString(inst.PrivateIpAddress),
		PublicIP:     aws.ToString(inst.PublicIpAddress),
		ImageID:      aws.ToString(inst.ImageId),
		LaunchTime:   aws.Time(aws.ToTime(inst.LaunchTime).UTC()),
		Labels:       map[string]string{},
		Lifecycle:    Lifecycle(string(inst.InstanceLifecycle)),
	}
	if inst.State != nil {
		n.State = string(inst.State.Name)
	}
	if inst.Placement != nil {
		n.Zone = aws.ToString(inst.Placement.AvailabilityZone)
	}
	for _, t := range inst.Tags {
		k, v := aws.ToString(t.Key), aws.ToString(t.Value)
		switch {
		case k == names.TagCluster:
			n.Cluster = v
		case k == names.TagGroup:
			n.Group = v
		case k == names.TagNodeBucket:
			n.Bucket = v
		case strings.HasPrefix(k, names.TagLabelPrefix):
			n.Labels[strings.TrimPrefix(k, names.TagLabelPrefix)] = v
		}
	}
	return n
}

// OnDemand is the lifecycle of an instance EC2 gives none.
const OnDemand = "on-demand"

// Lifecycle names an instance's purchase option from EC2's
// InstanceLifecycle, which is empty for on-demand instances.
func Lifecycle(ec2Lifecycle string) string {
	if ec2Lifecycle == "" {
		return OnDemand
	}
	return ec2Lifecycle
}

// NodesTable is the table form of list-nodes; swarm adds the SWARM
// column (what the swarm's status snapshot says of each node, "?" when no
// snapshot of its cluster was read). The default table fits 120 columns
// (see Columns); -o wide adds the public IP, the zone, the launch time,
// the image and the labels.
func NodesTable(nodes []Node, c Columns, swarm bool) Table {
	var t Table
	t.Header = c.withCluster("GROUP", "INSTANCE", "TYPE", "LIFECYCLE", "STATE")
	if swarm {
		t.Header = append(t.Header, "SWARM")
	}
	t.Header = append(t.Header, "PRIVATE-IP")
	if c.Wide {
		t.Header = append(t.Header, "PUBLIC-IP", "ZONE", "LAUNCHED", "IMAGE")
		if swarm {
			t.Header = append(t.Header, "ENGINE", "AGENT")
		}
		t.Header = append(t.Header, "LABELS")
	} else {
		t.Header = append(t.Header, "AGE")
	}
	for _, n := range nodes {
		row := c.rowWithCluster(n.Cluster, dash(n.Group), dash(n.InstanceID), dash(n.InstanceType), dash(n.Lifecycle), dash(n.State))
		if swarm {
			row = append(row, n.Swarm.word())
		}
		row = append(row, dash(n.PrivateIP))
		if c.Wide {
			launched := "-"
			if n.LaunchTime != nil {
				launched = n.LaunchTime.Format(time.RFC3339)
			}
			row = append(row, dash(n.PublicIP), dash(n.Zone), launched, dash(n.ImageID))
			if swarm {
				engine, agent := "-", "-"
				if n.Swarm != nil {
					engine, agent = dash(n.Swarm.EngineVersion), dash(shortHash(n.Swarm.Agent))
				}
				row = append(row, engine, agent)
			}
			row = append(row, dash(FormatLabels(n.Labels)))
		} else {
			row = append(row, c.age(n.LaunchTime))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// FormatLabels prints labels as sorted k=v,k=v.
func FormatLabels(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ",")
}

// ParseLabels reads the k=v,k=v form of the labels tag.
func ParseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(pair, "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}

// shortHash is the first 12 hex digits of a hash, as agentbin.Short says
// it (query does not import agentbin, which holds the agents).
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
