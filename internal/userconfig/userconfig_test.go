package userconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSaveLoadRemove(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clusterctl", "config.json")
	if c, err := Load(path); err != nil || c != (Config{}) {
		t.Fatalf("missing file: %+v, %v; want the zero config", c, err)
	}
	want := Config{Cluster: "prod", Region: "eu-west-1"}
	if err := Save(path, want); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, %v: want 0600", fi.Mode(), err)
	}
	if c, err := Load(path); err != nil || c != want {
		t.Fatalf("loaded %+v, %v; want %+v", c, err, want)
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := Remove(path); err != nil {
		t.Fatalf("removing a missing file: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 0 {
		t.Errorf("left in the directory: %v", entries)
	}
}

func TestLoadRefusesWhatSaveDoesNotWrite(t *testing.T) {
	for _, tt := range []struct{ name, body, want string }{
		{"not JSON", "cluster: prod\n", "invalid character"},
		{"a misspelt key", `{"clustr": "prod"}`, `unknown field "clustr"`},
		{"two objects", `{"cluster": "a"} {"cluster": "b"}`, "text after the JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "clusterctl use --clear") {
				t.Errorf("error %v: want one naming the file, %q and how to remove it", err, tt.want)
			}
		})
	}
}

func TestResolvePrecedence(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	path, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	if err := Save(path, Config{Cluster: "prod", Region: "eu-west-1"}); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		want Default
	}{
		{"the file", nil, Default{Cluster: "prod", Region: "eu-west-1", Path: path}},
		{"the environment over the file", map[string]string{EnvCluster: "staging"}, Default{Cluster: "staging", Region: "eu-west-1", FromEnv: true, Path: path}},
		{"set empty: none", map[string]string{EnvCluster: ""}, Default{Region: "eu-west-1", FromEnv: true, Path: path}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(env(tt.env))
			if err != nil || got != tt.want {
				t.Errorf("Resolve = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if !strings.HasPrefix(path, os.Getenv("XDG_CONFIG_HOME")) {
		t.Errorf("path %s is not under XDG_CONFIG_HOME", path)
	}
}
