package awsx

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

// An endpoint that answers as a web server does (404, an HTML page) is
// told in one line naming it, the status and the call; an AWS error, and
// a server error, are left as they are.
func TestNotAWS(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		body   string
		want   string // "": not recognised
	}{
		{"web server", 404, "<html><body>Not Found</body></html>", "answered HTTP 404 to CloudFormation.DescribeStacks, which is not an AWS answer"},
		{"method not allowed", 405, "", "answered HTTP 405 to CloudFormation.DescribeStacks"},
		{"AWS error", 400, `<ErrorResponse><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id x does not exist</Message></Error></ErrorResponse>`, ""},
		{"server error", 500, "oops", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c := cloudformation.New(cloudformation.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
				Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), RetryMaxAttempts: 1})
			_, err := c.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String("x")})
			line, ok := NotAWS(err)
			if tt.want == "" {
				if ok {
					t.Errorf("recognised %v as not AWS: %s", err, line)
				}
				return
			}
			if !ok || !strings.Contains(line, tt.want) || !strings.Contains(line, srv.URL) || strings.Contains(line, "UnknownError") {
				t.Errorf("%v: %q, %v; want %q", err, line, ok, tt.want)
			}
		})
	}
}
