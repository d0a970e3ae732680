package names

import (
	"reflect"
	"regexp"
	"testing"
)

// As TestTemplateSet, for the load balancer's names.
func TestLoadBalancerTemplateSet(t *testing.T) {
	safe := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
	v := reflect.ValueOf(LoadBalancerTemplate())
	for i := range v.NumField() {
		name, val := v.Type().Field(i).Name, v.Field(i).String()
		if !safe.MatchString(val) {
			t.Errorf("LoadBalancerTemplate().%s = %q: empty or not a logical id", name, val)
		}
	}
	for _, id := range []string{ResourceListener(443), ResourceTargetGroup(80), ResourceNodePortIngress("tcp", 30080), ResourceNodePortIngress("udp", 53)} {
		if !safe.MatchString(id) {
			t.Errorf("logical id %q is not alphanumeric", id)
		}
	}
	if ResourceNodePortIngress("tcp", 53) == ResourceNodePortIngress("udp", 53) {
		t.Error("tcp and udp rules on one node port share a logical id")
	}
}
