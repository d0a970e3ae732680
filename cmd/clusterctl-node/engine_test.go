package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// The node checks the engine version by the shape the settings allow.
func TestEngineVersionShapeIsSpecs(t *testing.T) {
	if got, want := shapes["ENGINE_VERSION"].String(), spec.EngineVersionRE.String(); got != want {
		t.Errorf("node's shape %s, spec's %s", got, want)
	}
}

// setup installs exactly the stack's engine version; a stack of before the
// setting gets the distribution's docker; a value of another shape is
// refused before anything is installed.
func TestEnginePackage(t *testing.T) {
	for _, tc := range []struct {
		s         settings
		want, err string
	}{
		{settings{"ENGINE_VERSION": "25.0.8"}, "docker-25.0.8", ""},
		{settings{"ENGINE_VERSION": "25.0.8-1.amzn2023.0.4"}, "docker-25.0.8-1.amzn2023.0.4", ""},
		{settings{}, "docker", ""},
		{settings{"ENGINE_VERSION": ""}, "docker", ""},
		{settings{"ENGINE_VERSION": "25;reboot"}, "", "refusing ENGINE_VERSION"},
		{settings{"ENGINE_VERSION": "latest"}, "", "refusing ENGINE_VERSION"},
	} {
		got, err := enginePackage(tc.s)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.s, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.s, got, err, tc.want)
		}
	}
}

// The labels say the agent's hash and the engine version asked for.
func TestRunLabels(t *testing.T) {
	got := runLabels("ab12", settings{"ENGINE_VERSION": "25.0.8"})
	want := []string{names.EngineLabelAgent + "=ab12", names.EngineLabelEngineVersion + "=25.0.8"}
	if !slices.Equal(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	if got := runLabels("ab12", settings{}); len(got) != 1 {
		t.Errorf("without a version: %v", got)
	}
}

// The running agent's hash is that of its binary.
func TestSelfSHA256(t *testing.T) {
	sha, err := selfSHA256()
	if err != nil || len(sha) != 64 {
		t.Errorf("sha %q, %v", sha, err)
	}
}
