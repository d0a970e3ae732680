package awsx

import (
	"context"
	"fmt"
	"os"
	"strings"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// EnvRecordCalls names a file to which every AWS call is appended as the
// IAM action that authorises it, one "service:Action" a line. The
// end-to-end tests set it to compare what the commands do with what
// `clusterctl render operator-policy` grants.
const EnvRecordCalls = "CLUSTERCTL_RECORD_CALLS"

// callRecorder appends the IAM actions of each call to a file.
type callRecorder struct{ path string }

func (r callRecorder) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("clusterctlRecordCalls",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			// Recorded before the call: a denied or failed call needed
			// its permission all the same.
			actions := IAMActions(awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx), in.Parameters)
			if err := r.append(actions); err != nil {
				return middleware.InitializeOutput{}, middleware.Metadata{}, err
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// append writes the lines in one O_APPEND write, so that the lines of
// processes recording into the same file at once never interleave.
func (r callRecorder) append(actions []string) error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("recording AWS calls (%s): %w", EnvRecordCalls, err)
	}
	_, werr := f.WriteString(strings.Join(actions, "\n") + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("recording AWS calls (%s): %w", EnvRecordCalls, werr)
	}
	return nil
}
