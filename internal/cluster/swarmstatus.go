package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/names"
)

// swarmStatus is the status snapshot of the swarm that the managers'
// leader publishes to the cluster bucket (names.StatusKey; the fields of
// publish_status in templates/core/control.sh.tmpl): the part the node
// commands read.
type swarmStatus struct {
	Cluster    string      `json:"cluster"`
	Time       time.Time   `json:"time"`
	LastBackup *time.Time  `json:"lastBackup"`
	Nodes      []SwarmNode `json:"nodes"`
	// published is when the bucket stored it (Last-Modified): the
	// bucket's clock, not the publishing manager's.
	published time.Time
}

// SwarmNode is one node of the swarm as the status snapshot shows it. The
// JSON keys are the snapshot's.
type SwarmNode struct {
	NodeID       string `json:"nodeId"`
	InstanceID   string `json:"instanceId"`
	Role         string `json:"role"`  // manager or worker
	State        string `json:"state"` // ready, down, ...
	Availability string `json:"availability"`
	// ManagerStatus is leader, reachable or unreachable for a manager, ""
	// for a worker.
	ManagerStatus string `json:"managerStatus"`
	RunningTasks  int    `json:"runningTasks"`
}

// statusStaleAfter: a snapshot older than this says no leader publishes
// (it publishes at least every 30 s).
const statusStaleAfter = 2 * time.Minute

// readStatus reads the status snapshot of the swarm from bucket; nil when
// there is none (no manager has published one).
func (s *Service) readStatus(ctx context.Context, bucket string) (*swarmStatus, error) {
	out, err := s.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(names.StatusKey)})
	var nsk *s3types.NoSuchKey
	if errors.As(err, &nsk) || errorCode(err) == "NoSuchKey" {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the swarm's status s3://%s/%s: %w", bucket, names.StatusKey, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the swarm's status s3://%s/%s: %w", bucket, names.StatusKey, err)
	}
	var st swarmStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("the swarm's status s3://%s/%s is not a status snapshot: %w", bucket, names.StatusKey, err)
	}
	st.published = aws.ToTime(out.LastModified)
	if st.published.IsZero() {
		st.published = st.Time
	}
	return &st, nil
}

// age is how old the snapshot is at now.
func (st *swarmStatus) age(now time.Time) time.Duration { return max(now.Sub(st.published), 0) }

// stale says whether no leader has published the snapshot for a while.
func (st *swarmStatus) stale(now time.Time) bool { return st.age(now) > statusStaleAfter }

// nodesOf returns the swarm nodes of an instance (more than one while a
// node that rejoined under another id is still listed).
func (st *swarmStatus) nodesOf(instance string) []SwarmNode {
	var out []SwarmNode
	for _, n := range st.Nodes {
		if n.InstanceID == instance {
			out = append(out, n)
		}
	}
	return out
}

// managers returns the managers of the swarm.
func (st *swarmStatus) managers() []SwarmNode {
	var out []SwarmNode
	for _, n := range st.Nodes {
		if n.Role == "manager" {
			out = append(out, n)
		}
	}
	return out
}

// reachable says whether a manager takes part in the swarm's quorum.
func (n SwarmNode) reachable() bool {
	return n.ManagerStatus == "leader" || n.ManagerStatus == "reachable"
}

// roughly prints a duration to the second, or minute above ten minutes.
func roughly(d time.Duration) string {
	if d >= 10*time.Minute {
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}
