// Package sdkhttp holds what the AWS SDK's HTTP client needs around it in
// clusterctl and its node agent: today, one race taken out.
package sdkhttp

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Guard returns next with the request bodies it sends made safe to close
// early.
//
// The SDK wraps a request's body in a reader that it closes as soon as the
// answer's headers are in, and that answers WriteTo with io.EOF once
// closed. Go's transport, after sending a body of known length, reads the
// body once more to check that nothing is left. When the answer comes back
// before that check (the endpoint answers as soon as it has the bytes; the
// sending goroutine may not have run since), the check takes the io.EOF
// for a failure and the transport closes the connection while the answer's
// body is still being read: the call fails after the endpoint has done it,
// and the SDK's retry of a call that is not idempotent (CreateStack,
// PutParameter, a conditional put) meets "already exists". A body that
// offers only Read and Close ends with an io.EOF that io.Copy takes for the
// end it is.
//
// A nil next, what the SDK's configuration holds when nothing set a client
// (it leaves each service client to make its own), is the SDK's default
// client.
func Guard(next aws.HTTPClient) aws.HTTPClient {
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	return guarded{next: next}
}

type guarded struct{ next aws.HTTPClient }

func (g guarded) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		sent := new(http.Request)
		*sent = *r
		sent.Body = readCloser{r.Body}
		r = sent
	}
	return g.next.Do(r)
}

// readCloser hides every method of the body but Read and Close.
type readCloser struct{ io.ReadCloser }
