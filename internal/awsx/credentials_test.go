package awsx

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// Credentials are checked before any call: the chain falling through to
// an instance role that is not there means none were configured, said in
// one line; a configured source that fails keeps its own reason.
func TestCheckCredentials(t *testing.T) {
	noRole := ec2rolecreds.New(func(o *ec2rolecreds.Options) {
		o.Client = imds.New(imds.Options{Endpoint: "http://127.0.0.1:9", Retryer: aws.NopRetryer{}})
	})
	failing := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("the SSO session has expired")
	})
	for _, tt := range []struct {
		name     string
		provider aws.CredentialsProvider
		want     string // "" for no error
	}{
		{"keys", credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""), ""},
		{"nothing configured", aws.NewCredentialsCache(noRole), ErrNoCredentials.Error()},
		{"no provider", nil, ErrNoCredentials.Error()},
		{"a profile's source failing", aws.NewCredentialsCache(failing), "getting AWS credentials: the SSO session has expired"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkCredentials(t.Context(), aws.Config{Credentials: tt.provider})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v", err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	if strings.Contains(ErrNoCredentials.Error(), "\n") {
		t.Error("the message is more than one line")
	}
}
