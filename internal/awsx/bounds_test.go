package awsx

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// silentListener accepts connections and never sends a byte; it counts the
// connections and keeps them open until the test ends.
func silentListener(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	done := make(chan struct{})
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
			close(done)
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return "http://" + l.Addr().String(), &accepted
}

// An endpoint that accepts and never answers: each attempt gives up after
// the response bound, on a new connection, and the call after DialAttempts
// with one line naming the endpoint, the operation and the bound.
func TestSilentEndpointGivesUp(t *testing.T) {
	testEnv(t)
	url, accepted := silentListener(t)
	t.Setenv(EnvResponseTimeout, "200ms")
	cfg, rec, err := Load(context.Background(), Options{Region: "us-east-1", EndpointURL: url})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // the test's own end, if the bound fails
	defer cancel()
	_, err = cloudformation.NewFromConfig(cfg).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{})
	if ctx.Err() != nil {
		t.Fatalf("the call ran until the test's deadline: %v", err)
	}
	e, ok := Unreachable(err)
	if !ok {
		t.Fatalf("err = %v, want an *EndpointError", err)
	}
	want := "AWS endpoint " + url + ": no response to CloudFormation.DescribeStacks in 200ms (3 attempts)"
	if e.Error() != want {
		t.Errorf("message %q, want %q", e.Error(), want)
	}
	if n := accepted.Load(); n != DialAttempts {
		t.Errorf("%d connections, want one per attempt (%d)", n, DialAttempts)
	}
	if rec.Total() != 1 {
		t.Errorf("recorded %d calls, want 1", rec.Total())
	}
}

// The bound is on silence, not on the length of a transfer: a body that
// keeps coming, slower in total than the bound, is read whole.
func TestSlowProgressIsNotCutShort(t *testing.T) {
	testEnv(t)
	const chunks = 8
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "8")
		w.WriteHeader(200)
		for range chunks {
			w.Write([]byte("x"))
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	}))
	defer srv.Close()
	cfg, _, err := Load(context.Background(), Options{Region: "us-east-1", EndpointURL: srv.URL, Bounds: Bounds{Response: 400 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	out, err := client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: strPtr("b"), Key: strPtr("k")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil || string(body) != strings.Repeat("x", chunks) {
		t.Errorf("body %q, %v; want the whole body after %v of steady progress", body, err, chunks*100*time.Millisecond)
	}
}

// A body that stops coming fails its reader after the bound, naming where
// from, instead of hanging it.
func TestStalledBodyFailsTheReader(t *testing.T) {
	testEnv(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(200)
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		<-release
	}))
	defer srv.Close()
	defer close(release)
	cfg, _, err := Load(context.Background(), Options{Region: "us-east-1", EndpointURL: srv.URL, Bounds: Bounds{Response: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	out, err := client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: strPtr("b"), Key: strPtr("k")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	_, err = io.ReadAll(out.Body)
	var se *SilenceError
	if !errors.As(err, &se) || se.After != 200*time.Millisecond || !strings.Contains(err.Error(), strings.TrimPrefix(srv.URL, "http://")) {
		t.Errorf("reading a stalled body: %v, want a SilenceError naming the address", err)
	}
}

func TestBoundsFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		given   Bounds
		env     map[string]string
		want    Bounds
		wantErr string
	}{
		{name: "defaults", want: Bounds{DefaultConnectTimeout, DefaultResponseTimeout}},
		{name: "lowered", env: map[string]string{EnvConnectTimeout: "100ms", EnvResponseTimeout: "1s"}, want: Bounds{100 * time.Millisecond, time.Second}},
		{name: "given wins", given: Bounds{Response: 3 * time.Second}, env: map[string]string{EnvResponseTimeout: "1s"}, want: Bounds{DefaultConnectTimeout, 3 * time.Second}},
		{name: "not a duration", env: map[string]string{EnvResponseTimeout: "30"}, wantErr: `CLUSTERCTL_AWS_RESPONSE_TIMEOUT="30": not a positive duration`},
		{name: "zero", env: map[string]string{EnvConnectTimeout: "0s"}, wantErr: `CLUSTERCTL_AWS_CONNECT_TIMEOUT="0s": not a positive duration`},
		{name: "negative", env: map[string]string{EnvResponseTimeout: "-1s"}, wantErr: "not a positive duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := boundsFrom(tc.given, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				var se *SettingError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("bounds = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func strPtr(s string) *string { return &s }
