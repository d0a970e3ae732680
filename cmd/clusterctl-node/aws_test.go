package main

import (
	"testing"

	"github.com/clusterctl/clusterctl/internal/sdkhttp/sdkhttptest"
)

// The node's calls are guarded as the CLI's are (see sdkhttp.Guard).
func TestLoadAWSGuardsRequestBodies(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	// As on a node: with no CA bundle, the configuration holds no client.
	t.Setenv("AWS_CA_BUNDLE", "")
	cfg, err := loadAWS(t.Context(), "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	sdkhttptest.RequireGuarded(t, cfg.HTTPClient)
}
