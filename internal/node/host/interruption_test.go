package host

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/wire"
)

// imdsWith is an IMDSv2 endpoint serving items below latest/meta-data/.
func imdsWith(t *testing.T, items map[string]string) Metadata {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/latest/api/token" {
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			w.Write([]byte("token"))
			return
		}
		v, ok := items[strings.TrimPrefix(r.URL.Path, "/latest/meta-data/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(v))
	}))
	t.Cleanup(srv.Close)
	return NewMetadata(srv.URL)
}

// The metadata's interruption notices, as EC2 serves them: a spot
// instance-action first, else a rebalance recommendation; nothing when
// neither is there or either is not of EC2's shape.
func TestInterruptionFromMetadata(t *testing.T) {
	const id = "i-0123456789abcdef0"
	at := time.Date(2026, 11, 28, 14, 2, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		items map[string]string
		want  wire.InterruptionConfirmation
		ok    bool
	}{
		{"none", map[string]string{}, wire.InterruptionConfirmation{}, false},
		{"spot", map[string]string{"spot/instance-action": `{"action": "terminate", "time": "2026-11-28T14:02:00Z"}`},
			wire.InterruptionConfirmation{InstanceID: id, Kind: wire.InterruptionSpot, Action: "terminate", Time: at}, true},
		{"rebalance", map[string]string{"events/recommendations/rebalance": `{"noticeTime": "2026-11-28T14:02:00Z"}`},
			wire.InterruptionConfirmation{InstanceID: id, Kind: wire.InterruptionRebalance, Time: at}, true},
		{"both: spot", map[string]string{"spot/instance-action": `{"action": "stop", "time": "2026-11-28T14:02:00Z"}`,
			"events/recommendations/rebalance": `{"noticeTime": "2026-11-28T13:00:00Z"}`},
			wire.InterruptionConfirmation{InstanceID: id, Kind: wire.InterruptionSpot, Action: "stop", Time: at}, true},
		{"not EC2's shape", map[string]string{"spot/instance-action": `terminate`}, wire.InterruptionConfirmation{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := imdsWith(t, tc.items).Interruption(context.Background(), id)
			if ok != tc.ok || got != tc.want {
				t.Errorf("%+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
