package cluster

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/stacks"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// SecretList is what clusterctl secrets shows: the declared secrets with
// their status, and a note when the snapshot is missing or stale.
type SecretList struct {
	Secrets []query.Secret
	Note    string
	Now     time.Time
}

// Secrets lists the core's declared secrets with what the leader's last
// snapshot says of each.
func (s *Requests) Secrets(ctx context.Context, cluster string) (*SecretList, error) {
	core, err := s.find.getCore(ctx, cluster)
	if err != nil {
		return nil, err
	}
	oc, err := s.observer.observeCore(ctx, core)
	if err != nil {
		return nil, err
	}
	bucket, err := s.find.bucketOf(ctx, core)
	if err != nil {
		return nil, err
	}
	w, err := s.status.swarmIn(ctx, cluster, bucket)
	if err != nil {
		return nil, err
	}
	return &SecretList{Secrets: query.SecretsOf(oc.Spec.Secrets, w.Snapshot), Note: w.Problem(), Now: s.status.now()}, nil
}

// requestSecretsSync asks the managers' leader to sync the secrets now,
// after the core's declaration changed. Not sent, the leader still reads
// the declaration within its next rounds: a warning, not a failure.
func (s *Requests) requestSecretsSync(ctx context.Context, core *stacks.Stack) {
	err := func() error {
		queue, err := s.leases.queueOf(ctx, core)
		if err != nil {
			return err
		}
		caller, err := s.leases.caller(ctx)
		if err != nil {
			return err
		}
		id := wire.NewRequestID()
		body, err := wire.NewSecretsSyncRequest(id, time.Now(), caller, s.Region, core.Name)
		if err != nil {
			return err
		}
		if _, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(body)}); err != nil {
			return err
		}
		s.say.printf("Asked the managers of cluster %s to sync the secrets now (request %s)\n", core.Name, id)
		return nil
	}()
	if err != nil {
		s.say.printf("Warning: the managers of cluster %s were not asked to sync the secrets now (%v); they read the declaration within a minute\n", core.Name, err)
	}
}

// changes tells whether the plan changes the setting at path.
func (p *Plan) changes(path string) bool {
	for _, c := range p.Settings {
		if c.Path == path {
			return true
		}
	}
	return false
}
