package spec

import (
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/errs"
)

// The alarms: on or off; where they notify: an e-mail address or an SNS
// topic's ARN, and nothing with the alarms off.
func TestCoreAlarmSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		core Core
		want string // "" for valid
	}{
		{"defaults", Core{}, ""},
		{"off", Core{Alarms: "off"}, ""},
		{"on", Core{Alarms: "on"}, ""},
		{"other", Core{Alarms: "yes"}, `alarms: invalid alarms setting "yes": expected on or off`},
		{"email", Core{Notify: "ops@example.com"}, ""},
		{"email plus", Core{Notify: "ops+swarm@mail.example.co.uk"}, ""},
		{"topic", Core{Notify: "arn:aws:sns:eu-west-1:123456789012:ops-pager"}, ""},
		{"fifo topic", Core{Notify: "arn:aws:sns:us-east-1:123456789012:ops.fifo"}, ""},
		{"gov topic", Core{Notify: "arn:aws-us-gov:sns:us-gov-west-1:123456789012:ops"}, ""},
		{"longest topic", Core{Notify: "arn:aws:sns:eu-west-1:123456789012:" + strings.Repeat("t", 256)}, ""},
		{"longest fifo topic", Core{Notify: "arn:aws:sns:eu-west-1:123456789012:" + strings.Repeat("t", 256) + ".fifo"}, ""},
		{"topic too long", Core{Notify: "arn:aws:sns:eu-west-1:123456789012:" + strings.Repeat("t", 257)}, "invalid SNS topic"},
		{"no domain", Core{Notify: "ops@localhost"}, `notify: invalid notification target "ops@localhost": expected an e-mail address or an SNS topic ARN`},
		{"no at", Core{Notify: "ops.example.com"}, "invalid notification target"},
		{"two ats", Core{Notify: "a@b@example.com"}, "invalid notification target"},
		{"space", Core{Notify: "ops @example.com"}, "invalid notification target"},
		{"shell", Core{Notify: "$(reboot)@example.com"}, "invalid notification target"},
		{"queue arn", Core{Notify: "arn:aws:sqs:eu-west-1:123456789012:q"}, `notify: invalid SNS topic "arn:aws:sqs:eu-west-1:123456789012:q"`},
		{"topic no account", Core{Notify: "arn:aws:sns:eu-west-1::ops"}, "invalid SNS topic"},
		{"subscription arn", Core{Notify: "arn:aws:sns:eu-west-1:123456789012:ops:5f1c0e4c-0c1c-4b41-9a0f-3b3c1e3c1e3c"}, "invalid SNS topic"},
		{"with alarms off", Core{Alarms: "off", Notify: "ops@example.com"}, `notify: --notify "ops@example.com" with alarms off`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.core
			err := c.Complete()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			case tc.want != "" && errs.ExitCode(err) != 2:
				t.Fatalf("exit code %d, want 2", errs.ExitCode(err))
			}
		})
	}
}
