// Package sdkhttptest checks, for the tests of those that build AWS
// configurations, that their HTTP client is guarded (sdkhttp.Guard).
package sdkhttptest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// writerToBody is a request body like the SDK's: it offers WriteTo.
type writerToBody struct {
	*strings.Reader
	wroteTo *atomic.Int32
}

func (b writerToBody) WriteTo(w io.Writer) (int64, error) {
	b.wroteTo.Add(1)
	return b.Reader.WriteTo(w)
}

func (writerToBody) Close() error { return nil }

// RequireGuarded fails t unless a body sent through client is kept from
// the transport's WriteTo. Go's transport reads a sent body once more, and
// through WriteTo when the body has it; that is where the SDK's closed
// body answers io.EOF (see sdkhttp.Guard).
func RequireGuarded(t testing.TB, client aws.HTTPClient) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	var wroteTo atomic.Int32
	const form = "Action=DescribeStacks"
	req, err := http.NewRequest(http.MethodPost, srv.URL, writerToBody{Reader: strings.NewReader(form), wroteTo: &wroteTo})
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(form))
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if n := wroteTo.Load(); n != 0 {
		t.Errorf("the transport called the request body's WriteTo %d times, want 0: the client is not guarded", n)
	}
}
