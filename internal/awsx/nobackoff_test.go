package awsx

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

type noBackoff struct{ aws.RetryerV2 }

func (noBackoff) RetryDelay(int, error) (time.Duration, error) { return 0, nil }

func retryerWithoutBackoff(r aws.Retryer) aws.Retryer {
	return noBackoff{r.(aws.RetryerV2)}
}
