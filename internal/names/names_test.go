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
	var check func(prefix string, v reflect.Value)
	check = func(prefix string, v reflect.Value) {
		for i := range v.NumField() {
			name, f := prefix+v.Type().Field(i).Name, v.Field(i)
			switch f.Kind() {
			case reflect.Struct:
				check(name+".", f)
			case reflect.Int:
				if f.Int() <= 0 {
					t.Errorf("Template().%s = %d: unset", name, f.Int())
				}
			default:
				if val := f.String(); !safe.MatchString(val) {
					t.Errorf("Template().%s = %q: empty or needs quoting", name, val)
				}
			}
		}
	}
	check("", reflect.ValueOf(Template()))
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

// An alarm's name says its cluster and kind, and is read back only as one
// of that cluster's.
func TestAlarmNames(t *testing.T) {
	if got := AlarmName("prod", AlarmNodesDown); got != "clusterctl-prod-nodes-down" {
		t.Errorf("AlarmName = %q", got)
	}
	for _, tc := range []struct{ cluster, name, want string }{
		{"prod", "clusterctl-prod-nodes-down", AlarmNodesDown},
		{"prod", "clusterctl-prod-nodes-up", ""},
		{"prod", "clusterctl-prod-x-nodes-down", ""},
		{"prod-x", "clusterctl-prod-nodes-down", ""},
		{"prod", "prod-nodes-down", ""},
	} {
		if got := AlarmKind(tc.cluster, tc.name); got != tc.want {
			t.Errorf("AlarmKind(%q, %q) = %q, want %q", tc.cluster, tc.name, got, tc.want)
		}
	}
	for _, a := range AlarmKinds() {
		for _, b := range AlarmKinds() {
			if a != b && len(a) > len(b) && a[len(a)-len(b)-1:] == "-"+b {
				t.Errorf("kind %s ends with -%s: two clusters' alarms could share a name", a, b)
			}
		}
	}
}
