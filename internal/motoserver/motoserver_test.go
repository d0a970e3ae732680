package motoserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestStartResetClose(t *testing.T) {
	s, err := Start(nil)
	if err != nil {
		t.Fatal(err) // never a skip: CI must have moto
	}
	if err := s.Reset(); err != nil {
		t.Error(err)
	}
	s.Close()
	if _, err := http.Get(s.URL + "/moto-api/"); err == nil {
		t.Error("server still answers after Close")
	}
}

// started starts a server for the test, stopped when it ends, and returns
// the configuration of clients that call it.
func started(t *testing.T) (context.Context, aws.Config) {
	t.Helper()
	s, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := context.Background()
	cfg, err := Config(ctx, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, cfg
}

// werkzeug's line per request is written when the output is kept, and
// only then: a server whose output is discarded serves as well without it.
func TestAccessLogOnlyWhenKept(t *testing.T) {
	for _, accessLog := range []bool{true, false} {
		t.Run(fmt.Sprint("access log ", accessLog), func(t *testing.T) {
			var out bytes.Buffer
			s, err := startOn("127.0.0.1", &out, accessLog)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Reset()
			s.Close() // the output is whole once the server has exited
			if err != nil {
				t.Fatal(err)
			}
			if logged := strings.Contains(out.String(), `"POST /moto-api/reset HTTP/1.1" 200`); logged != accessLog {
				t.Errorf("reset logged %v, want %v; output:\n%s", logged, accessLog, out.String())
			}
		})
	}
}
