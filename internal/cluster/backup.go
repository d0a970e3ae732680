package cluster

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// The swarm's backups are the managers' (docs/design.md, "Backups of the
// swarm"): the bucket lets only their role read them, so clusterctl learns
// of them from the status snapshot, and asks for one through the core's
// queue, as drain-node asks for a drain.

// Backup is a backup of the swarm, as backups lists it. The JSON keys are
// a public interface.
type Backup struct {
	Time       time.Time `json:"time"`
	AgeSeconds float64   `json:"ageSeconds"`
	Size       int64     `json:"size"`
	SwarmID    string    `json:"swarm"`
	Managers   int       `json:"managers"`
	TakenBy    string    `json:"takenBy"`
	Key        string    `json:"key"`
}

// Requests are sent to the managers through the cluster's queue: backup,
// restore, secrets sync.
type Requests struct {
	find     *Finder
	leases   *Leases
	observer *Observer
	say      *Say
	status   *Status
	Region   string
	SQS      SQSAPI
}

// Backups lists the backups of cluster's swarm, newest first, as its
// status snapshot says; stale tells a snapshot no leader published
// lately (the list is as of then).
func (s *Requests) Backups(ctx context.Context, cluster string) (list []Backup, stale string, err error) {
	core, err := s.find.getCore(ctx, cluster)
	if err != nil {
		return nil, "", err
	}
	bucket, err := s.find.bucketOf(ctx, core)
	if err != nil {
		return nil, "", err
	}
	st, err := s.status.readStatus(ctx, bucket, cluster)
	if err != nil {
		return nil, "", err
	}
	if st == nil {
		return nil, "", refused("cluster %s has no status snapshot yet: its managers have published nothing", cluster)
	}
	now := time.Now()
	if w := st.at(now); w.Stale() {
		stale = w.Problem()
	}
	list = []Backup{}
	for i := len(st.Backups) - 1; i >= 0; i-- {
		b := st.Backups[i]
		list = append(list, Backup{Time: b.Taken, AgeSeconds: seconds(now.Sub(b.Taken)), Size: b.Size, SwarmID: b.SwarmID,
			Managers: b.Managers, TakenBy: b.TakenBy, Key: b.Key})
	}
	return list, stale, nil
}

// BackupsTable is the table of backups.
func BackupsTable(list []Backup) query.Table {
	t := query.Table{Header: []string{"TIME", "AGE", "SIZE", "SWARM", "MANAGERS", "TAKEN BY"}}
	for _, b := range list {
		t.Rows = append(t.Rows, []string{b.Time.UTC().Format(time.RFC3339), query.FormatAge(time.Duration(b.AgeSeconds * float64(time.Second))),
			formatSize(b.Size), dashIf(b.SwarmID), fmt.Sprint(b.Managers), dashIf(b.TakenBy)})
	}
	return t
}

func dashIf(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatSize prints a size as a person reads it: 512 B, 167 KiB, 2.5 MiB.
func formatSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// BackupResult is how backup ended. The JSON keys are a public interface.
type BackupResult struct {
	Cluster   string `json:"cluster"`
	RequestID string `json:"requestId"`
	// Taken is the newest backup's time when waited for; null otherwise.
	Taken           *time.Time `json:"taken"`
	DurationSeconds float64    `json:"durationSeconds"`
}

// RequestBackup asks the managers of cluster to back the swarm up now,
// and with wait waits until the status snapshot shows a backup taken
// since.
func (s *Requests) RequestBackup(ctx context.Context, cluster string, wait bool, progress io.Writer) (*BackupResult, error) {
	start := time.Now()
	if spec.CheckClusterName(cluster) != nil {
		return nil, fmt.Errorf("invalid cluster name %q", cluster)
	}
	core, err := s.find.getCore(ctx, cluster)
	if err != nil {
		return nil, err
	}
	bucket, err := s.find.bucketOf(ctx, core)
	if err != nil {
		return nil, err
	}
	queue, err := s.leases.queueOf(ctx, core)
	if err != nil {
		return nil, err
	}
	sent := time.Now()
	id, err := s.sendBackupRequest(ctx, queue, cluster, sent)
	if err != nil {
		return nil, err
	}
	r := &BackupResult{Cluster: cluster, RequestID: id}
	if wait {
		// Without --wait, the command's result line says it (once).
		progressf(progress, "Asked the managers of cluster %s for a backup (request %s)\n", cluster, id)
		hint := fmt.Sprintf("the request stands: the managers act on it if they take it within %s of sending; `clusterctl backups -j %s` lists the backups", names.RequestMaxAge, cluster)
		deadline := sent.Add(names.RequestMaxAge + time.Minute)
		tick := time.NewTicker(pollStatus)
		defer tick.Stop()
		for r.Taken == nil {
			select {
			case <-ctx.Done():
				return nil, stoppedWaiting(fmt.Errorf("waiting for the backup: %w", ctx.Err()), hint)
			case <-tick.C:
			}
			st, err := s.status.readStatus(ctx, bucket, cluster)
			if err != nil {
				return nil, err
			}
			// The snapshot says the second: a backup of the second sent is
			// this one's.
			if st != nil && st.LastBackup != nil && !st.LastBackup.Before(sent.Truncate(time.Second)) {
				t := *st.LastBackup
				r.Taken = &t
			} else if time.Now().After(deadline) {
				return nil, refused("no backup of cluster %s within %s of the request (%s)", cluster, names.RequestMaxAge+time.Minute, hint)
			}
		}
	}
	r.DurationSeconds = seconds(time.Since(start))
	return r, nil
}

// sendBackupRequest puts a backup request on the core's queue.
func (s *Requests) sendBackupRequest(ctx context.Context, queue, cluster string, at time.Time) (string, error) {
	caller, err := s.leases.caller(ctx)
	if err != nil {
		return "", err
	}
	id := wire.NewRequestID()
	body, err := wire.NewBackupRequest(id, at, caller, s.Region, cluster)
	if err != nil {
		return "", err
	}
	if _, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(body)}); err != nil {
		return "", fmt.Errorf("sending the request to the core's queue: %w", err)
	}
	return id, nil
}

// backupBeforeManagersChange asks the managers for a backup before an
// update replaces, adds or removes managers: the rolling update launches a
// new manager first and removes an old one only once the new one is a
// Reachable manager, minutes later, so the backup is taken before any
// manager goes. Nothing is asked of a swarm whose status is missing or
// stale (no leader would act on it), nor of a core without a queue.
func (s *Requests) backupBeforeManagersChange(ctx context.Context, core *stacks.Stack) {
	bucket, err := s.find.bucketOf(ctx, core)
	if err != nil {
		return
	}
	st, err := s.status.readStatus(ctx, bucket, core.Name)
	if err != nil || st == nil || st.at(time.Now()).Stale() {
		return
	}
	queue, err := s.leases.queueOf(ctx, core)
	if err != nil {
		return
	}
	id, err := s.sendBackupRequest(ctx, queue, core.Name, time.Now())
	if err != nil {
		s.say.printf("Note: asking the managers for a backup before the update failed: %v\n", err)
		return
	}
	s.say.printf("Asked the managers of cluster %s for a backup before the managers change (request %s)\n", core.Name, id)
}
