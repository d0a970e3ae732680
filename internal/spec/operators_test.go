package spec

import (
	"strings"
	"testing"
)

// The operators are checked when given, before anything is read or
// created (exit 2, one line naming the flag's setting).
func TestValidateOperators(t *testing.T) {
	many := make([]string, MaxOperators+1)
	for i := range many {
		many[i] = "arn:aws:iam::123456789012:role/op" + strings.Repeat("x", i+1)
	}
	for _, tc := range []struct {
		name string
		ops  []string
		want string // "" when valid
	}{
		{"unset: resolved later", nil, ""},
		{"a role", []string{"arn:aws:iam::123456789012:role/Admin"}, ""},
		{"a role with a path", []string{"arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_Admin_0123456789abcdef"}, ""},
		{"a user with a path", []string{"arn:aws:iam::123456789012:user/ops/alice@example.com"}, ""},
		{"the root user", []string{"arn:aws:iam::123456789012:root"}, ""},
		{"other partitions", []string{"arn:aws-cn:iam::123456789012:role/a", "arn:aws-us-gov:iam::123456789012:user/b"}, ""},
		{"several", []string{"arn:aws:iam::123456789012:role/Admin", "arn:aws:iam::210987654321:role/Deployer"}, ""},
		{"empty list", []string{}, "no operator given"},
		{"empty flag", []string{""}, "no operator given"},
		{"an empty entry", []string{"arn:aws:iam::123456789012:role/a", ""}, `invalid operator ""`},
		{"a session", []string{"arn:aws:sts::123456789012:assumed-role/Admin/alice"}, "a session's ARN; give its role's"},
		{"a wildcard", []string{"arn:aws:iam::123456789012:role/*"}, "no wildcards"},
		{"an account", []string{"123456789012"}, "expected an IAM role's or user's ARN"},
		{"a group", []string{"arn:aws:iam::123456789012:group/admins"}, "expected an IAM role's or user's ARN"},
		{"an instance profile", []string{"arn:aws:iam::123456789012:instance-profile/p"}, "expected an IAM role's or user's ARN"},
		{"a short account", []string{"arn:aws:iam::1234:role/a"}, "expected an IAM role's or user's ARN"},
		{"a name too long", []string{"arn:aws:iam::123456789012:role/" + strings.Repeat("a", 65)}, "expected an IAM role's or user's ARN"},
		{"a space", []string{"arn:aws:iam::123456789012:role/a b"}, "expected an IAM role's or user's ARN"},
		{"twice", []string{"arn:aws:iam::123456789012:role/a", "arn:aws:iam::123456789012:role/a"}, "listed twice"},
		{"too many", many, "at most 20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validCore()
			c.Operators = tc.ops
			err := c.Complete()
			if tc.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			checkFieldError(t, err, "operators", tc.want)
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("more than one line: %q", err)
			}
		})
	}
	if FlagFor(Core{}, "operators") != "--operators" {
		t.Error("operators has no flag")
	}
}
