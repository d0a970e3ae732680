package awsn

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/clusterctl/clusterctl/internal/names"
)

// CallerAPI is what the agent needs of STS.
type CallerAPI interface {
	GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, opts ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// ConfirmationKey is the bucket key at which this instance confirms an
// interruption notice: names.InterruptionPrefix/<aws:userid>, the key the
// agents' role may write only as that session. An instance role's session
// is named by the instance id: a userid that does not end in it is not
// this instance's role session, and no key is given.
func ConfirmationKey(ctx context.Context, api CallerAPI, instance string) (string, error) {
	out, err := api.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", fmt.Errorf("asking STS who this node is: %w", err)
	}
	id := aws.ToString(out.UserId)
	if !strings.HasSuffix(id, ":"+instance) || strings.ContainsAny(id, "/ ") {
		return "", fmt.Errorf("this node's credentials are not its instance role's (aws:userid %.80q)", id)
	}
	return names.InterruptionPrefix + "/" + id, nil
}
