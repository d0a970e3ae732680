package motoserver

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/clusterctl/clusterctl/internal/sdkhttp"
)

// Config is the AWS configuration of the tests' and the benchmark's own
// calls to a local endpoint: its region, moto's test credentials, none of
// the user's files, and the client the product's calls go through
// (sdkhttp.Guard), so that they meet the endpoint as the product does.
func Config(ctx context.Context, endpoint string) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("testing", "testing", "")),
		config.WithSharedConfigFiles([]string{}), config.WithSharedCredentialsFiles([]string{}),
		config.WithBaseEndpoint(endpoint))
	if err != nil {
		return aws.Config{}, err
	}
	cfg.HTTPClient = sdkhttp.Guard(cfg.HTTPClient)
	return cfg, nil
}
