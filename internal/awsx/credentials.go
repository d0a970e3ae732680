package awsx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/smithy-go/logging"
)

// ErrNoCredentials says that the configuration chain found no credentials:
// no keys in the environment, none in the profile, and no instance role.
var ErrNoCredentials = errors.New("no AWS credentials found: pass --profile or set AWS_PROFILE (a profile of ~/.aws/config: `aws configure`, or `aws configure sso` then `aws sso login`), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")

// checkCredentials retrieves the credentials once, before any call, so
// that their absence is said in one line rather than inside the first
// call's error. They are cached: the calls that follow reuse them. Only
// the chain's last resort failing (the instance role, which a laptop does
// not have) means none were configured; a profile's own failure (an
// expired SSO session, a bad role) keeps its message.
func checkCredentials(ctx context.Context, cfg aws.Config) error {
	if cfg.Credentials == nil {
		return ErrNoCredentials
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if aws.IsCredentialsProvider(cfg.Credentials, (*ec2rolecreds.Provider)(nil)) {
			return ErrNoCredentials
		}
		// The cache's own wrapping says nothing the user can act on.
		if inner := errors.Unwrap(err); inner != nil && strings.HasPrefix(err.Error(), "failed to refresh cached credentials") {
			err = inner
		}
		return fmt.Errorf("getting AWS credentials: %w", err)
	}
	return nil
}

// sdkLogger sends the SDK's log lines to w (-v), or nowhere.
func sdkLogger(w io.Writer) logging.Logger {
	if w == nil {
		return logging.Nop{}
	}
	return logging.NewStandardLogger(w)
}
