package awsx

import (
	"errors"
	"fmt"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// NotAWS says, for an error whose answer came from something that does
// not speak AWS's protocol (a web server, a proxy's error page at a
// mistyped --endpoint-url), what answered and how, in one line: the
// SDK's own words ("https response error StatusCode: 404, RequestID: ,
// api error UnknownError: UnknownError") say neither. ok is false for
// anything else, an AWS error among them.
func NotAWS(err error) (line string, ok bool) {
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.Response == nil || re.Response.Response == nil {
		return "", false
	}
	// AWS answers an error with a code; what has none was not AWS (or not
	// the service the call was for). 404 and 405 are what a web server
	// answers an API call.
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() != "UnknownError" {
		return "", false
	}
	status := re.HTTPStatusCode()
	if status != 404 && status != 405 {
		return "", false
	}
	endpoint := "the AWS endpoint"
	if req := re.Response.Request; req != nil && req.URL != nil {
		endpoint = "AWS endpoint " + req.URL.Scheme + "://" + req.URL.Host
	}
	call := ""
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		call = fmt.Sprintf(" to %s.%s", oe.ServiceID, oe.OperationName)
	}
	return fmt.Sprintf("%s answered HTTP %d%s, which is not an AWS answer: is --endpoint-url (or AWS_ENDPOINT_URL) an endpoint of this service?", endpoint, status, call), true
}
