package cluster

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// A restore of the swarm from one of its backups is the managers' work
// (docs/design.md, "Restoring a backup"): clusterctl chooses the backup
// from the status snapshot, says what the restore undoes, asks, and puts
// the request on the core's queue; the leader carries it out.

// RestoreOptions is what restore is asked.
type RestoreOptions struct {
	Cluster string
	// From is the backup's time (RFC 3339, or as its key says it:
	// 20060102T150405Z), or "latest".
	From string
	// FromCluster names the cluster whose managers took the backup when
	// it is not Cluster.
	FromCluster string
	Yes, Wait   bool
}

// RestoreResult is how restore ended. The JSON keys are a public
// interface.
type RestoreResult struct {
	Cluster   string    `json:"cluster"`
	RequestID string    `json:"requestId"`
	Backup    Backup    `json:"backup"`
	Lost      LostSpan  `json:"lost"`
	Outcome   *string   `json:"outcome"` // null unless waited for
	Reason    string    `json:"reason,omitempty"`
	Sent      time.Time `json:"sent"`
}

// LostSpan is what a restore undoes: every change to the swarm since the
// backup was taken.
type LostSpan struct {
	Since   time.Time `json:"since"`
	Seconds float64   `json:"seconds"`
	// Services are the services the swarm runs now: any of them created
	// since the backup is removed, any changed since goes back.
	Services []string `json:"services"`
}

// ParseRestoreFrom reads --from: "latest" (zero time, true) or a time.
func ParseRestoreFrom(s string) (time.Time, bool, error) {
	if s == "latest" {
		return time.Time{}, true, nil
	}
	for _, layout := range []string{time.RFC3339, names.BackupTimeFormat} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), false, nil
		}
	}
	return time.Time{}, false, fmt.Errorf("--from %q: want latest, or a backup's time as `clusterctl backups` lists it (e.g. 2026-11-28T09:30:00Z)", s)
}

// RequestRestore asks the managers of cluster to restore its swarm from
// the backup o.From, once the plan is confirmed; with Wait it waits for
// the outcome in the status snapshot.
func (s *Requests) RequestRestore(ctx context.Context, o RestoreOptions, progress io.Writer) (*RestoreResult, error) {
	if spec.CheckClusterName(o.Cluster) != nil {
		return nil, errs.Usage("invalid cluster name %q", o.Cluster)
	}
	if o.FromCluster != "" && spec.CheckClusterName(o.FromCluster) != nil {
		return nil, errs.Usage("invalid cluster name %q for --from-cluster", o.FromCluster)
	}
	at, latest, err := ParseRestoreFrom(o.From)
	if err != nil {
		return nil, errs.Usage("%v", err)
	}
	core, err := s.find.getCore(ctx, o.Cluster)
	if err != nil {
		return nil, err
	}
	bucket, err := s.find.bucketOf(ctx, core)
	if err != nil {
		return nil, err
	}
	st, err := s.status.readStatus(ctx, bucket, o.Cluster)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, refused("cluster %s has no status snapshot yet: its managers have published nothing, and no backup is known", o.Cluster)
	}
	now := time.Now()
	if w := st.at(now); w.Stale() {
		return nil, refused("cluster %s: %s: no leader would act on a restore (a swarm without a quorum recovers on its own, see `clusterctl describe %s`)", o.Cluster, w.Problem(), o.Cluster)
	}
	of := o.FromCluster
	if of == "" {
		of = o.Cluster
	}
	chosen, err := chooseBackup(st.Backups, o, at, latest)
	if err != nil {
		return nil, err
	}
	r := &RestoreResult{Cluster: o.Cluster,
		Backup: Backup{Time: chosen.Taken, AgeSeconds: seconds(now.Sub(chosen.Taken)), Size: chosen.Size, SwarmID: chosen.SwarmID,
			Managers: chosen.Managers, TakenBy: chosen.TakenBy, Key: chosen.Key},
		Lost: LostSpan{Since: chosen.Taken, Seconds: seconds(now.Sub(chosen.Taken)), Services: []string{}}}
	for _, sv := range st.Services {
		r.Lost.Services = append(r.Lost.Services, sv.Name)
	}
	progressf(progress, "%s", restorePlan(o, r, st, now))
	question := fmt.Sprintf("restore the swarm of cluster %s from its backup of %s (every change since is undone)", o.Cluster, chosen.Taken.Format(time.RFC3339))
	if err := s.say.confirm(ctx, o.Yes, question); err != nil {
		return nil, err
	}
	queue, err := s.leases.queueOf(ctx, core)
	if err != nil {
		return nil, err
	}
	caller, err := s.leases.caller(ctx)
	if err != nil {
		return nil, err
	}
	r.RequestID, r.Sent = wire.NewRequestID(), time.Now().UTC().Truncate(time.Second)
	body, err := wire.NewRestoreRequest(wire.RestoreDetail{RequestID: r.RequestID, Cluster: o.Cluster, Backup: chosen.Key, FromCluster: o.FromCluster}, r.Sent, caller, s.Region)
	if err != nil {
		return nil, err
	}
	if _, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(body)}); err != nil {
		return nil, fmt.Errorf("sending the request to the core's queue: %w", err)
	}
	if !o.Wait {
		return r, nil // the command's result line says it was asked
	}
	progressf(progress, "Asked the managers of cluster %s to restore the swarm from %s (request %s)\n", o.Cluster, chosen.Key, r.RequestID)
	return r, s.waitRestore(ctx, bucket, o.Cluster, r)
}

// chooseBackup is the backup --from names: the newest of the cluster
// that took it (o.FromCluster, or o.Cluster) for latest, or the one taken
// at; refused (exit 2, nothing sent) when there is none, or when it was
// taken by another cluster than that one.
func chooseBackup(list []wire.BackupInfo, o RestoreOptions, at time.Time, latest bool) (*wire.BackupInfo, error) {
	of := o.FromCluster
	if of == "" {
		of = o.Cluster
	}
	by := func(b wire.BackupInfo) string {
		if b.Cluster == "" {
			return o.Cluster // a backup of before the metadata said the cluster
		}
		return b.Cluster
	}
	for i := len(list) - 1; i >= 0; i-- {
		b := list[i]
		switch {
		case latest && by(b) != of:
			continue
		case !latest && !b.Taken.Equal(at):
			continue
		case by(b) == of:
			return &b, nil
		case o.FromCluster == "":
			return nil, errs.Usage("the backup of %s was taken by the managers of cluster %s: restoring it needs --from-cluster %s", at.Format(time.RFC3339), by(b), by(b))
		}
		return nil, errs.Usage("the backup of %s was taken by the managers of cluster %s, not %s", at.Format(time.RFC3339), by(b), of)
	}
	what := "at " + at.Format(time.RFC3339)
	if latest {
		what = "at all"
	}
	return nil, errs.Usage("cluster %s has no backup of cluster %s taken %s: `clusterctl backups -j %s` lists them", o.Cluster, of, what, o.Cluster)
}

// waitRestore waits until the status snapshot says how the request
// ended: restored, refused or failed (the last two an error).
func (s *Requests) waitRestore(ctx context.Context, bucket, cluster string, r *RestoreResult) error {
	hint := fmt.Sprintf("the request stands: the managers act on it if they take it within %s of sending; `clusterctl describe %s` shows the swarm", names.RequestMaxAge, cluster)
	deadline := r.Sent.Add(names.RequestMaxAge + 5*time.Minute)
	tick := time.NewTicker(pollStatus)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return stoppedWaiting(fmt.Errorf("waiting for the restore: %w", ctx.Err()), hint)
		case <-tick.C:
		}
		// A snapshot may be missing or unreadable while the leader's
		// engine is being restored: read again.
		st, err := s.status.readStatus(ctx, bucket, cluster)
		if err == nil && st != nil && st.Restore != nil && st.Restore.RequestID == r.RequestID && st.Restore.Outcome != wire.RestoreRestoring {
			out := st.Restore.Outcome
			r.Outcome, r.Reason = &out, st.Restore.Reason
			if out != wire.RestoreRestored {
				return refused("the managers of cluster %s did not restore the swarm (%s): %s", cluster, out, st.Restore.Reason)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return refused("no outcome of the restore of cluster %s within %s of the request (%s)", cluster, names.RequestMaxAge+5*time.Minute, hint)
		}
	}
}

// restorePlan says what the restore brings back and what it undoes.
func restorePlan(o RestoreOptions, r *RestoreResult, st *swarmStatus, now time.Time) string {
	var b strings.Builder
	age := query.FormatAge(now.Sub(r.Backup.Time))
	fmt.Fprintf(&b, "Restore of the swarm of cluster %s from the backup of %s (%s ago):\n", o.Cluster, r.Backup.Time.Format(time.RFC3339), age)
	fmt.Fprintf(&b, "  backup    %s (%s)\n", r.Backup.Key, formatSize(r.Backup.Size))
	fmt.Fprintf(&b, "  swarm     %s\n", dashIf(r.Backup.SwarmID))
	fmt.Fprintf(&b, "  managers  %d then, %d now\n", r.Backup.Managers, len(st.managers()))
	fmt.Fprintf(&b, "  taken by  %s\n", dashIf(r.Backup.TakenBy))
	if o.FromCluster != "" && o.FromCluster != o.Cluster {
		fmt.Fprintf(&b, "  of        cluster %s: the swarm's join tokens are rotated after the restore, so that its nodes are never let in\n", o.FromCluster)
	}
	fmt.Fprintf(&b, "Lost: every change to the swarm of the last %s (since %s): services, secrets, configs and networks created since are removed, those changed since go back, those removed since come back.\n",
		age, r.Backup.Time.Format(time.RFC3339))
	if len(r.Lost.Services) > 0 {
		fmt.Fprintf(&b, "  services now: %s\n", strings.Join(r.Lost.Services, ", "))
	}
	b.WriteString("The other managers are demoted and leave, the manager that took the backup restores it, and the others join it again: for a minute or so no manager acts, the tasks run on.\n")
	return b.String()
}
