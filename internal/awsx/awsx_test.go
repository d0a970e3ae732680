package awsx

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

const describeStacksOK = `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks></Stacks></DescribeStacksResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></DescribeStacksResponse>`
const throttled = `<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>1</RequestId></ErrorResponse>`

// A few throttles and a 5xx are retried and counted as one call.
func TestRetriesAndCallLog(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch hits.Add(1) {
		case 1, 2:
			w.WriteHeader(400)
			w.Write([]byte(throttled))
		case 3:
			w.WriteHeader(503)
		default:
			w.Write([]byte(describeStacksOK))
		}
	}))
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	var log bytes.Buffer
	cfg, rec, err := Load(context.Background(), Options{Region: "us-east-1", EndpointURL: srv.URL, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !CustomEndpoint(cfg) {
		t.Error("CustomEndpoint = false with --endpoint-url")
	}
	cfn := cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) {
		// Keep the test fast: the retry policy is what is under test, not the backoff.
		o.Retryer = retryerWithoutBackoff(o.Retryer)
	})
	if _, err := cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{}); err != nil {
		t.Fatalf("DescribeStacks after throttling: %v", err)
	}
	if got := hits.Load(); got != 4 {
		t.Errorf("server saw %d requests, want 4 (2 throttled, 1 5xx, 1 ok)", got)
	}
	if rec.Total() != 1 {
		t.Errorf("Total = %d, want 1 call", rec.Total())
	}
	if !strings.Contains(log.String(), "aws CloudFormation.DescribeStacks") || !strings.Contains(log.String(), " ok") {
		t.Errorf("call log = %q", log.String())
	}
	if got := rec.Summary(); got != "aws calls: 1 (CloudFormation.DescribeStacks=1)" {
		t.Errorf("Summary = %q", got)
	}
}

func TestNoRegion(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_PROFILE", "")
	if _, _, err := Load(context.Background(), Options{}); err != ErrNoRegion {
		t.Errorf("err = %v, want ErrNoRegion", err)
	}
}
