package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/lease"
)

// unlock breaks a lease by its id, and only that lease: the test plays the
// run that holds it (as a command that died would have left it).
func TestUnlock(t *testing.T) {
	parallel(t)
	resetMoto(t)
	c := newClients(t)
	ctx := context.Background()
	must(t, "create-core", "core", "-q")
	bucket := outputs(describeStack(t, c, "core"))["BucketName"]

	holder := lease.New(c.s3, bucket, lease.Options{Cluster: "core", Holder: "bob@ci (pid 7)", Command: "update-group -n g -j core -c 3"})
	l, err := holder.Acquire(ctx, lease.Group("g"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	id := l.Record().ID

	r := clusterctl(t, "unlock", "core", "--group", "g", "--id", "0123456789ab")
	if r.code != 1 || !strings.Contains(r.stderr, "not 0123456789ab: nothing broken") || !strings.Contains(r.stderr, id) {
		t.Errorf("unlock with another id:\n%s", r)
	}
	if _, err := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("locks/groups/g")}); err != nil {
		t.Fatalf("the lease is gone after a refused unlock: %v", err)
	}

	r = clusterctl(t, "unlock", "core", "--group", "g", "--id", id)
	if r.code != 0 || !strings.Contains(r.stdout, "Broke lease "+id+` on group "g" of cluster "core"`) || !strings.Contains(r.stdout, "update-group -n g -j core -c 3") {
		t.Errorf("unlock:\n%s", r)
	}
	if _, err := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("locks/groups/g")}); err == nil {
		t.Error("the lease object is still there after unlock")
	}
	if err := l.Renew(ctx); !errors.Is(err, lease.ErrLost) {
		t.Errorf("the holder's renewal after unlock = %v, want ErrLost", err)
	}
	r = clusterctl(t, "unlock", "core", "--group", "g", "--id", id)
	if r.code != 1 || !strings.Contains(r.stderr, "holds no lease: nothing to break\n") {
		t.Errorf("unlock of a broken lease:\n%s", r)
	}

	// The cluster-wide lease of a delete-core lives under the core's key.
	cl, err := holder.Acquire(ctx, lease.Cluster())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Release(ctx)
	r = clusterctl(t, "unlock", "core", "--id", cl.Record().ID)
	if r.code != 0 || !strings.Contains(r.stdout, `on cluster "core"`) {
		t.Errorf("unlock of the cluster lease:\n%s", r)
	}

	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"unlock", "core", "--id", "nope"}, 2, "invalid lease id"},
		{[]string{"unlock", "core", "--group", "bad_name", "--id", id}, 2, "invalid group name"},
		{[]string{"unlock", "core"}, 2, "missing flags: --id"},
		{[]string{"unlock", "nosuch", "--id", id}, 1, `cluster "nosuch" not found`},
	} {
		if r := clusterctl(t, tt.args...); r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: want exit %d and %q\n%s", tt.args, tt.code, tt.want, r)
		}
	}
	must(t, "delete-core", "core", "--yes", "-q")
}
