package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// Node configurations that no launch template version keeps (of the
// group itself: the current and the previous one; of a group that has no
// stack: none) are removed by the next command on a group of the cluster,
// but only once ConfigGrace old: before, they may be a hand-deployed
// group's, uploaded before its stack.
func TestUnusedNodeConfigsRemovedAfterGrace(t *testing.T) {
	s := motoService(t)
	ctx := context.Background()
	core, err := NewCore(s).CreateCore(ctx, "core", spec.Core{}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bucket := core.Outputs[names.OutputBucketName]
	if _, err := NewGroups(s).AddAgents(ctx, "core", spec.Group{Name: "g", InstanceType: spec.InstanceTypes{"t3.small"}}, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	keys := func(group string) []string {
		t.Helper()
		all, err := newArtifacts(s).listNodeConfigs(ctx, bucket, names.GroupConfigPrefix(group))
		if err != nil {
			t.Fatal(err)
		}
		return distinctKeys(all[group])
	}
	update := func(change spec.Group, given ...string) {
		t.Helper()
		_, err := NewGroups(s).UpdateGroup(ctx, UpdateOptions{Cluster: "core", Group: "g", Yes: true,
			Desired: func(d spec.Group) spec.Group { return d.Update(change, given) }})
		if err != nil {
			t.Fatal(err)
		}
	}
	first := keys("g")
	update(spec.Group{Labels: spec.Labels{"role": "a"}}, "labels")
	update(spec.Group{Labels: spec.Labels{"role": "b"}}, "labels")
	ghost := "join/groups/ghost/node-" + strings.Repeat("0", 64) + ".sh"
	if _, err := s.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(ghost), Body: strings.NewReader("#!/bin/sh\n")}); err != nil {
		t.Fatal(err)
	}

	// Within the grace: nothing is removed.
	update(spec.Group{Count: aws.Int(2)}, "count")
	if got := keys("g"); len(first) != 1 || len(got) != 3 {
		t.Errorf("node configurations of g within the grace: %v, want 3", got)
	}
	if got := keys("ghost"); !slices.Equal(got, []string{ghost}) {
		t.Errorf("a fresh node configuration of a group with no stack was removed: %v", got)
	}

	// Past it: the unused ones go.
	s.Now = func() time.Time { return time.Now().Add(ConfigGrace + time.Minute) }
	said := &strings.Builder{}
	s.IO.ErrOut = said
	update(spec.Group{Count: aws.Int(3)}, "count")
	for _, want := range []string{"Removed 1 node configuration no launch template of group g uses", "Removed 1 node configuration no launch template of group ghost uses"} {
		if !strings.Contains(said.String(), want) {
			t.Errorf("the update does not say %q:\n%s", want, said)
		}
	}
	if got := keys("g"); len(got) != 2 || slices.Contains(got, first[0]) {
		t.Errorf("node configurations of g past the grace: %v, want the current and the previous one, not %s", got, first[0])
	}
	if got := keys("ghost"); len(got) != 0 {
		t.Errorf("node configuration of a group with no stack left past the grace: %v", got)
	}
}
