package awsx

import (
	"os"
	"testing"
)

// The region of `clusterctl use` comes after --region and the
// environment's, and before the profile's (which the SDK reads when Load
// sets none).
func TestRegionOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    Options
		env  map[string]string
		want string
	}{
		{"flag beats all", Options{Region: "eu-west-1", DefaultRegion: "us-west-2"}, map[string]string{"AWS_REGION": "ap-south-1"}, "eu-west-1"},
		{"AWS_REGION beats the default", Options{DefaultRegion: "us-west-2"}, map[string]string{"AWS_REGION": "ap-south-1"}, ""},
		{"AWS_DEFAULT_REGION beats the default", Options{DefaultRegion: "us-west-2"}, map[string]string{"AWS_DEFAULT_REGION": "ap-south-1"}, ""},
		{"the default beats the profile", Options{DefaultRegion: "us-west-2"}, nil, "us-west-2"},
		{"nothing: the SDK's", Options{}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := regionOf(tt.o, func(k string) string { return tt.env[k] }); got != tt.want {
				t.Errorf("regionOf = %q, want %q", got, tt.want)
			}
		})
	}
}

// A default region reaches the configuration when the environment names
// none, over a profile's region.
func TestLoadDefaultRegion(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/config", "[default]\nregion = ap-south-1\n")
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	cfg, _, err := Load(t.Context(), Options{DefaultRegion: "eu-north-1"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "eu-north-1" {
		t.Errorf("region %q, want the default eu-north-1 over the profile's", cfg.Region)
	}
	cfg, _, err = Load(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "ap-south-1" {
		t.Errorf("region %q without a default, want the profile's ap-south-1", cfg.Region)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
