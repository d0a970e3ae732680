package sdkhttp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/clusterctl/clusterctl/internal/sdkhttp"
	"github.com/clusterctl/clusterctl/internal/sdkhttp/sdkhttptest"
)

// race forces the order in which an endpoint's quick answer meets Go's
// transport: the request's body is on the wire, the answer's headers are
// back and the SDK has closed the body, and only then does the transport's
// sending goroutine go on past the body. The answer's body is held back
// until the connection is closed (or, once nothing will close it, for
// hold), so that it must be read from the connection.
type race struct {
	released chan struct{} // the SDK has closed the request's body
	closed   chan struct{} // the client closed its connection
	once     sync.Once
}

type raceConn struct {
	net.Conn
	r *race
}

func (c *raceConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if strings.HasPrefix(string(p), "Action=") {
		select {
		case <-c.r.released:
		case <-time.After(10 * time.Second):
		}
	}
	return n, err
}

func (c *raceConn) Close() error {
	c.r.once.Do(func() { close(c.r.closed) })
	return c.Conn.Close()
}

// closesBodies does what the SDK does once the answer's headers are in:
// it closes the request's body.
type closesBodies struct {
	next aws.HTTPClient
	r    *race
}

func (c closesBodies) Do(req *http.Request) (*http.Response, error) {
	res, err := c.next.Do(req)
	req.Body.Close()
	close(c.r.released)
	return res, err
}

func describeStacks(t *testing.T, guard func(aws.HTTPClient) aws.HTTPClient, hold time.Duration) error {
	t.Helper()
	r := &race{released: make(chan struct{}), closed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		const answer = `<DescribeStacksResponse><DescribeStacksResult><Stacks></Stacks></DescribeStacksResult></DescribeStacksResponse>`
		w.Header().Set("Content-Type", "text/xml")
		w.Header().Set("Content-Length", "113")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.closed:
		case <-time.After(hold):
		}
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	client := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &raceConn{Conn: c, r: r}, nil
		}
	})
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		HTTPClient:  closesBodies{next: guard(client), r: r},
		Retryer:     func() aws.Retryer { return retry.AddWithMaxAttempts(retry.NewStandard(), 1) },
	}
	cf := cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	_, err := cf.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{})
	return err
}

func TestAnswerBeforeTheBodyIsDoneWith(t *testing.T) {
	if err := describeStacks(t, sdkhttp.Guard, 300*time.Millisecond); err != nil {
		t.Fatalf("DescribeStacks through the guard: %v", err)
	}
}

// The SDK's own behaviour, which the guard is for. If this fails, the SDK
// no longer fails a call whose body it closed early, and Guard may go.
func TestTheSDKAloneLosesTheAnswer(t *testing.T) {
	none := func(c aws.HTTPClient) aws.HTTPClient { return c }
	err := describeStacks(t, none, 10*time.Second)
	if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("DescribeStacks without the guard: %v, want the connection closed under the answer", err)
	}
}

func TestGuardKeepsWriteToFromTheTransport(t *testing.T) {
	sdkhttptest.RequireGuarded(t, sdkhttp.Guard(awshttp.NewBuildableClient()))
	// What a configuration that set no client holds.
	sdkhttptest.RequireGuarded(t, sdkhttp.Guard(nil))
}
