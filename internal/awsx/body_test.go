package awsx

import (
	"context"
	"testing"

	"github.com/clusterctl/clusterctl/internal/sdkhttp/sdkhttptest"
)

// Every call's client is guarded against the transport closing a
// connection under an answer (see sdkhttp.Guard).
func TestLoadGuardsRequestBodies(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	cfg, _, err := Load(context.Background(), Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	sdkhttptest.RequireGuarded(t, cfg.HTTPClient)
}
