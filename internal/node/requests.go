package node

import (
	"context"
	"time"

	"github.com/clusterctl/clusterctl/internal/wire"
)

// requests carries out what clusterctl asks the leader through the
// queue: a node's availability (drain-node), a sync of the secrets, a
// backup, a restore; each then publishes the status snapshot often for a
// while, which says how it went. Carrying a request out twice changes
// nothing: one delivered twice, or handled again after a restart, does no
// harm. A request older than MaxAge by the queue's clock (it waited while
// no leader took it) is dropped, so that it never changes the swarm long
// after it was made; so is one of another shape or cluster.
type requests struct {
	Cluster string
	Clock   Clock
	Log     Logger
	MaxAge  time.Duration

	inbox    *inbox
	status   *statusPublisher
	prover   *prover
	secrets  *SecretsSync
	backups  *swarmBackups
	restores *restorer
}

// fresh tells whether the request of kind in n, read as err says and
// named by what, is one to carry out, and logs why not.
func (rq *requests) fresh(kind string, err error, what string, n notice) bool {
	age := rq.Clock.Now().Sub(n.Sent)
	switch {
	case err != nil:
		rq.Log("ignoring a %s: %v", kind, err)
	case age > rq.MaxAge:
		rq.Log("dropping %s: made %s ago", what, age.Round(time.Second))
	default:
		return true
	}
	return false
}

// availability sets the availability of the swarm nodes of an instance,
// then publishes the snapshot at once.
func (rq *requests) availability(ctx context.Context, file string, n notice, e wire.Event) error {
	r, err := e.AvailabilityRequest(rq.Cluster)
	if rq.fresh("node availability request", err, "request "+r.RequestID+" to set instance "+r.InstanceID+" "+r.Availability, n) {
		if _, err := rq.prover.setAvailability(ctx, r.InstanceID, r.Availability, "request "+r.RequestID); err != nil {
			return err
		}
		rq.status.watch()
		rq.status.publishOrLog(ctx)
	}
	return rq.inbox.forget(ctx, file, n)
}

// secretsSync syncs the secrets at once, as asked after a change of
// their declaration.
func (rq *requests) secretsSync(ctx context.Context, file string, n notice, e wire.Event) error {
	r, err := e.SecretsSyncRequest(rq.Cluster)
	switch {
	case !rq.fresh("secrets sync request", err, "secrets sync request "+r.RequestID, n):
	case rq.secrets == nil:
		rq.Log("ignoring secrets sync request %s: this manager syncs no secrets", r.RequestID)
	default:
		rq.Log("secrets sync request %s: syncing now", r.RequestID)
		rq.secrets.Request()
		rq.Log.failed("syncing the secrets", rq.secrets.Sync(ctx))
		rq.status.watch()
	}
	return rq.inbox.forget(ctx, file, n)
}

// backup backs the swarm up now (a follower takes it when there are
// several managers); the snapshot says when the newest was taken.
func (rq *requests) backup(ctx context.Context, file string, n notice, e wire.Event) error {
	r, err := e.BackupRequest(rq.Cluster)
	if rq.fresh("backup request", err, "backup request "+r.RequestID, n) {
		rq.Log("backup request %s from %s", r.RequestID, r.RequestedBy)
		if err := rq.backups.backUp(ctx, true); err != nil {
			return err
		}
		rq.status.watch()
	}
	return rq.inbox.forget(ctx, file, n)
}

// restore restores the swarm from the backup the request names, or
// refuses; the snapshot says the outcome.
func (rq *requests) restore(ctx context.Context, file string, n notice, e wire.Event) error {
	r, err := e.RestoreRequest(rq.Cluster)
	if rq.fresh("restore request", err, "restore request "+r.RequestID, n) {
		rq.Log("restore request %s from %s: the backup %s", r.RequestID, r.RequestedBy, r.Backup)
		if err := rq.restores.restore(ctx, r); err != nil {
			return err
		}
		rq.status.watch()
	}
	return rq.inbox.forget(ctx, file, n)
}
