package awsx

import (
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/errs"
)

// A profile the configuration does not have is bad input, said in one
// line of ours rather than the SDK's "failed to get shared config profile".
func TestUnknownProfile(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	_, _, err := Load(t.Context(), Options{Profile: "nosuch", Region: "us-east-1"})
	if err == nil || errs.ExitCode(err) != errs.ExitUsage || !strings.HasPrefix(err.Error(), `AWS profile "nosuch" not found in the AWS configuration`) {
		t.Errorf("err = %v (exit %d)", err, errs.ExitCode(err))
	}
}
