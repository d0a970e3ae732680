package cluster

import (
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/wire"
)

// describe lists the tasks no group can hold under their service, counted.
func TestDescribeTextUnplaceable(t *testing.T) {
	d := &Description{Cluster: "core", Unplaceable: []wire.Unplaceable{
		{Service: "gpu", Tasks: 1, Reason: "no group has the label gpu=true"},
		{Service: "big", Tasks: 3, Reason: "no group's instance type has 64 GiB of memory"},
	}}
	var b strings.Builder
	if err := WriteDescription(&b, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nUnplaceable tasks (no group can hold them; not scaled for):\n",
		"\ngpu: 1 task: no group has the label gpu=true\n",
		"\nbig: 3 tasks: no group's instance type has 64 GiB of memory\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe:\n%s\nwant %q", b.String(), want)
		}
	}
}
