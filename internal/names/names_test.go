package names

import (
	"reflect"
	"regexp"
	"testing"
)

// The templates put names inside JSON strings and shell words without
// quoting, so every name must be set and need no escaping there.
func TestTemplateSet(t *testing.T) {
	safe := regexp.MustCompile(`^[A-Za-z][-A-Za-z0-9:._/]*$`)
	v := reflect.ValueOf(Template())
	for i := range v.NumField() {
		name, val := v.Type().Field(i).Name, v.Field(i).String()
		if !safe.MatchString(val) {
			t.Errorf("Template().%s = %q: empty or needs quoting", name, val)
		}
	}
}

func TestKeys(t *testing.T) {
	if got := NodeConfigKey("web", "ab12"); got != "join/groups/web/node-ab12.env" {
		t.Errorf("NodeConfigKey = %q", got)
	}
	if got := GroupConfigPrefix("a"); got != "join/groups/a/" {
		t.Errorf("GroupConfigPrefix = %q", got)
	}
	if got := GroupStack("core", "r3"); got != "core-r3" {
		t.Errorf("GroupStack = %q", got)
	}
}

// The node agent's key names the binary's hash and says it is gzipped.
func TestAgentKey(t *testing.T) {
	if got := AgentKey("arm64", "ab12"); got != "join/agent/clusterctl-node-linux-arm64-ab12.gz" {
		t.Errorf("AgentKey = %q", got)
	}
}
