package motoserver

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
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
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("testing", "testing", "")),
		config.WithBaseEndpoint(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	return ctx, cfg
}
