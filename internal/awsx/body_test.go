package awsx

import (
	"testing"

	"github.com/clusterctl/clusterctl/internal/sdkhttp/sdkhttptest"
)

// Every call's client is guarded against the transport closing a
// connection under an answer (see sdkhttp.Guard).
func TestLoadGuardsRequestBodies(t *testing.T) {
	testEnv(t)
	cfg, _, err := Load(t.Context(), Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	sdkhttptest.RequireGuarded(t, cfg.HTTPClient)
}
