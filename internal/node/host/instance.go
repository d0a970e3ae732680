package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"

	"github.com/clusterctl/clusterctl/internal/node"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// Metadata reads the instance metadata (IMDSv2).
type Metadata struct{ c *imds.Client }

// NewMetadata is the metadata service at endpoint ("" for the instance's).
func NewMetadata(endpoint string) Metadata {
	// Enabled whatever AWS_EC2_METADATA_DISABLED says: that is for
	// credentials, and the instance's own metadata is what a node is.
	// The SDK's defaults fail fast (a 250 ms dial, 500 ms for the headers,
	// 5 s in all) for programs that may not run on EC2; a node's agent
	// does, and a busy instance must not fail its boot on a slow answer.
	return Metadata{c: imds.New(imds.Options{
		Endpoint: endpoint, ClientEnableState: imds.ClientEnabled,
		HTTPClient:            &http.Client{Timeout: 10 * time.Second},
		Retryer:               retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 6 }),
		DisableDefaultTimeout: true,
	})}
}

// Get reads one item.
func (m Metadata) Get(ctx context.Context, path string) (string, error) {
	out, err := m.c.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		return "", fmt.Errorf("instance metadata %s: %w", path, err)
	}
	defer out.Content.Close()
	b, err := io.ReadAll(io.LimitReader(out.Content, 4096))
	return strings.TrimSpace(string(b)), err
}

// Instance is what the metadata says of this instance.
func (m Metadata) Instance(ctx context.Context) (node.Instance, error) {
	var i node.Instance
	for _, f := range []struct {
		path string
		to   *string
	}{
		{"instance-id", &i.ID}, {"instance-type", &i.Type}, {"local-ipv4", &i.Address},
		{"instance-life-cycle", &i.Lifecycle}, {"placement/availability-zone", &i.Zone},
	} {
		v, err := m.Get(ctx, f.path)
		if err != nil {
			return i, err
		}
		*f.to = v
	}
	return i, i.Check()
}

// Terminating tells whether Auto Scaling is terminating the instance.
func (m Metadata) Terminating(ctx context.Context) bool {
	s, err := m.Get(ctx, "autoscaling/target-lifecycle-state")
	return err == nil && s == "Terminated"
}

// Signal signals a resource of a stack with cfn-signal, CloudFormation's
// helper, which the loader installs.
type Signal struct {
	Metadata
	Stack, Resource, Region string
}

// Signal signals success or failure with reason.
func (s Signal) Signal(ctx context.Context, success bool, reason string) error {
	code := "0"
	if !success {
		code = "1"
	}
	path, err := exec.LookPath("cfn-signal")
	if err != nil {
		if _, e := os.Stat("/opt/aws/bin/cfn-signal"); e != nil {
			return fmt.Errorf("cfn-signal is missing: the stack will time out")
		}
		path = "/opt/aws/bin/cfn-signal"
	}
	out, err := exec.CommandContext(ctx, path, "--exit-code", code, "--reason", reason, "--stack", s.Stack,
		"--resource", s.Resource, "--region", s.Region).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cfn-signal: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Interruption is the interruption notice the instance metadata gives
// now: spot/instance-action (a spot interruption, two minutes ahead),
// else events/recommendations/rebalance; ok false when neither is there
// (the metadata answers 404) or either is not of EC2's shape.
func (m Metadata) Interruption(ctx context.Context, instance string) (wire.InterruptionConfirmation, bool) {
	if s, err := m.Get(ctx, "spot/instance-action"); err == nil {
		var a struct{ Action, Time string }
		if json.Unmarshal([]byte(s), &a) == nil {
			if t, err := time.Parse(time.RFC3339, a.Time); err == nil && a.Action != "" {
				return wire.InterruptionConfirmation{InstanceID: instance, Kind: wire.InterruptionSpot, Action: a.Action, Time: t.UTC()}, true
			}
		}
	}
	if s, err := m.Get(ctx, "events/recommendations/rebalance"); err == nil {
		var r struct {
			NoticeTime string `json:"noticeTime"`
		}
		if json.Unmarshal([]byte(s), &r) == nil {
			if t, err := time.Parse(time.RFC3339, r.NoticeTime); err == nil {
				return wire.InterruptionConfirmation{InstanceID: instance, Kind: wire.InterruptionRebalance, Time: t.UTC()}, true
			}
		}
	}
	return wire.InterruptionConfirmation{}, false
}
