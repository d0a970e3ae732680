package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// get reads only what clusterctl docker puts under commands/.
func TestGetOnlyCommands(t *testing.T) {
	sum := strings.Repeat("0", 64)
	for _, key := range []string{"control/swarm-backup.tar.gz", "join/swarm/worker-token", "commands/../control/manager-token", "commandsx/y"} {
		err := getCmd{Key: key, File: "/dev/null", VersionID: "v1", SHA256: sum}.Run(context.Background(), &cli{Root: t.TempDir(), Settings: "/node.env"})
		if err == nil || !strings.Contains(err.Error(), "refusing key") {
			t.Errorf("%s: %v", key, err)
		}
	}
}

// versions is a bucket key's versions: what a principal that may write
// the bucket left there after clusterctl's upload.
type versions map[string][]byte

func (v versions) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	body, ok := v[aws.ToString(in.VersionId)]
	if !ok {
		// The latest: a fetch by key only would get the swapped content.
		body = v["latest"]
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(body))}, nil
}

// The standard input is fetched by version and checked by hash: a
// version put over it is not taken, and content that does not hash to
// what clusterctl sent is refused with nothing written.
func TestGetFetchesThePinnedVersionOnly(t *testing.T) {
	sent, swapped := []byte("services: {web: {image: nginx}}\n"), []byte("services: {root: {volumes: ['/:/host']}}\n")
	h := sha256.Sum256(sent)
	sum := hex.EncodeToString(h[:])
	for _, tc := range []struct {
		name    string
		bucket  versions
		version string
		want    []byte
		err     string
	}{
		{"pinned version, swapped latest", versions{"v1": sent, "latest": swapped}, "v1", sent, ""},
		{"the pinned version changed", versions{"v1": swapped}, "v1", nil, "not the " + sum + " clusterctl sent: refusing it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "in")
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			err := fetchPinned(context.Background(), tc.bucket, "b", "commands/r1/stdin", tc.version, sum, file)
			got, _ := os.ReadFile(file)
			if tc.err == "" && (err != nil || !bytes.Equal(got, tc.want)) {
				t.Errorf("err %v, wrote %q", err, got)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || len(got) != 0) {
				t.Errorf("err %v, wrote %q; want %q and nothing written", err, got, tc.err)
			}
		})
	}
}
