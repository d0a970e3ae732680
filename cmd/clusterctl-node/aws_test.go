package main

import (
	"context"
	"testing"

	"github.com/clusterctl/clusterctl/internal/sdkhttp/sdkhttptest"
)

// The node's calls are guarded as the CLI's are (see sdkhttp.Guard).
func TestLoadAWSGuardsRequestBodies(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	cfg, err := loadAWS(context.Background(), "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	sdkhttptest.RequireGuarded(t, cfg.HTTPClient)
}
