package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

func TestParseRestoreFrom(t *testing.T) {
	at := time.Date(2026, 11, 28, 1, 45, 0, 0, time.UTC)
	for _, c := range []struct {
		in     string
		want   time.Time
		latest bool
		bad    bool
	}{
		{in: "latest", latest: true},
		{in: "2026-11-28T01:45:00Z", want: at},
		{in: "2026-11-28T02:45:00+01:00", want: at},
		{in: "20261128T014500Z", want: at},
		{in: "Latest", bad: true},
		{in: "", bad: true},
		{in: "yesterday", bad: true},
		{in: "2026-13-28T01:45:00Z", bad: true},
		{in: "2026-11-28", bad: true},
	} {
		got, latest, err := ParseRestoreFrom(c.in)
		if (err != nil) != c.bad || !got.Equal(c.want) || latest != c.latest {
			t.Errorf("%q: %v %v %v", c.in, got, latest, err)
		}
	}
}

func TestChooseBackup(t *testing.T) {
	t1, t2, t3 := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC), time.Date(2026, 11, 28, 1, 15, 0, 0, time.UTC), time.Date(2026, 11, 28, 1, 30, 0, 0, time.UTC)
	b := func(at time.Time, cluster string) wire.BackupInfo {
		return wire.BackupInfo{Key: names.BackupKey(at, "i-0123456789abcdef0"), BackupMeta: wire.BackupMeta{Taken: at, Cluster: cluster}}
	}
	list := []wire.BackupInfo{b(t1, ""), b(t2, "core"), b(t3, "prod")}
	for _, c := range []struct {
		name        string
		from        string
		fromCluster string
		want        time.Time
		err         string
	}{
		{name: "latest of this cluster", from: "latest", want: t2},
		{name: "latest of the cluster named", from: "latest", fromCluster: "prod", want: t3},
		{name: "by time", from: "2026-11-28T01:00:00Z", want: t1},
		{name: "none at that time", from: "2026-11-28T01:00:01Z", err: "has no backup of cluster core taken at 2026-11-28T01:00:01Z"},
		{name: "another cluster's, unnamed", from: "2026-11-28T01:30:00Z", err: "needs --from-cluster prod"},
		{name: "ours, named as another's", from: "2026-11-28T01:15:00Z", fromCluster: "prod", err: "taken by the managers of cluster core, not prod"},
		{name: "none of the cluster named", from: "latest", fromCluster: "stage", err: "has no backup of cluster stage taken at all"},
	} {
		t.Run(c.name, func(t *testing.T) {
			at, latest, err := ParseRestoreFrom(c.from)
			if err != nil {
				t.Fatal(err)
			}
			got, err := chooseBackup(list, RestoreOptions{Cluster: "core", FromCluster: c.fromCluster}, at, latest)
			if c.err != "" {
				var u *errs.UsageError
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.As(err, &u) {
					t.Fatalf("got %v, %v; want the usage error %q", got, err, c.err)
				}
				return
			}
			if err != nil || !got.Taken.Equal(c.want) {
				t.Fatalf("got %v, %v; want the backup of %s", got, err, c.want)
			}
		})
	}
}
