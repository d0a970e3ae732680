package wire

import (
	"testing"
	"time"
)

// What a confirmation vouches for, and whose key names which instance.
func TestInterruptionConfirmation(t *testing.T) {
	const id = "i-0123456789abcdef0"
	sent := time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC)
	spot := InterruptionConfirmation{InstanceID: id, Kind: InterruptionSpot, Action: "terminate", Time: sent.Add(2 * time.Minute)}
	rebalance := InterruptionConfirmation{InstanceID: id, Kind: InterruptionRebalance, Time: sent}
	for _, tc := range []struct {
		name       string
		c          InterruptionConfirmation
		instance   string
		kind       string
		sent       time.Time
		confirming bool
	}{
		{"spot for spot", spot, id, InterruptionSpot, sent, true},
		{"spot for rebalance", spot, id, InterruptionRebalance, sent, true},
		{"rebalance for spot", rebalance, id, InterruptionSpot, sent, false},
		{"another instance", spot, "i-0fedcba9876543210", InterruptionSpot, sent, false},
		{"an hour later", spot, id, InterruptionSpot, sent.Add(time.Hour), false},
		{"an hour before", spot, id, InterruptionSpot, sent.Add(-time.Hour), false},
	} {
		if got := tc.c.Confirms(tc.instance, tc.kind, tc.sent, 15*time.Minute); got != tc.confirming {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
	if c, err := ParseInterruptionConfirmation(spot.Marshal()); err != nil || c != spot {
		t.Errorf("round trip %+v %v", c, err)
	}
	for _, bad := range []string{`{}`, `{"instanceId":"x","kind":"spot","time":"2026-11-28T14:00:00Z"}`, `{"instanceId":"` + id + `","kind":"other","time":"2026-11-28T14:00:00Z"}`, `[`} {
		if _, err := ParseInterruptionConfirmation([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	for key, want := range map[string]string{
		"interruptions/AROAX:" + id:    id,
		"interruptions/AIDAUSER":       "",
		"interruptions/AROAX:not-an-i": "",
	} {
		if got := ConfirmationOwner(key); got != want {
			t.Errorf("%s: %q, want %q", key, got, want)
		}
	}
}
