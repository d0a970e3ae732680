package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/names"
)

type getCmd struct {
	VersionID string `name:"version-id" required:"" help:"The object's version: exactly this one is fetched."`
	SHA256    string `name:"sha256" required:"" help:"The SHA-256 (hex) the content must have; anything else is refused."`
	Key       string `arg:"" help:"The object's key, under commands/."`
	File      string `arg:"" help:"Where to write it."`
}

// maxInput bounds what is fetched: clusterctl docker sends at most 256 MiB.
const maxInput = 256 << 20

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Run fetches what clusterctl docker put in the bucket for a command (its
// standard input) with the instance role, as the node's other reads: no
// AWS CLI on the node. Only the commands/ prefix: nothing else is a
// command's to read. The object is pinned: that version, that hash, or
// nothing is written (a principal that may write the bucket could have
// put another version since clusterctl's upload).
func (g getCmd) Run(ctx context.Context, c *cli) error {
	if !strings.HasPrefix(g.Key, names.CommandPrefix+"/") || strings.Contains(g.Key, "..") {
		return fmt.Errorf("refusing key %.100q: not under %s/", g.Key, names.CommandPrefix)
	}
	if !sha256RE.MatchString(g.SHA256) {
		return fmt.Errorf("refusing --sha256 %.100q: not a hex SHA-256", g.SHA256)
	}
	s, err := c.settings("AWS_REGION", "BUCKET_NAME")
	if err != nil {
		return err
	}
	cfg, err := loadAWS(ctx, s["AWS_REGION"])
	if err != nil {
		return fmt.Errorf("the AWS configuration: %w", err)
	}
	return fetchPinned(ctx, (&env{cfg: cfg}).s3(), s["BUCKET_NAME"], g.Key, g.VersionID, g.SHA256, g.File)
}

// objectGetter is what a pinned fetch needs of S3.
type objectGetter interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// fetchPinned writes version of key to file when its content hashes to
// sum; on any other content it writes nothing and says so.
func fetchPinned(ctx context.Context, api objectGetter, bucket, key, version, sum, file string) error {
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(version)},
		func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true })
	if err != nil {
		return fmt.Errorf("reading s3://%s/%s version %s: %w", bucket, key, version, err)
	}
	defer out.Body.Close()
	tmp, err := os.CreateTemp(filepath.Dir(file), ".get-*")
	if err != nil {
		return fmt.Errorf("fetching s3://%s/%s: %w", bucket, key, err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(out.Body, maxInput+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("reading s3://%s/%s: %w", bucket, key, err)
	}
	if n > maxInput {
		return fmt.Errorf("s3://%s/%s is larger than %d MiB: refusing it", bucket, key, maxInput>>20)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return fmt.Errorf("s3://%s/%s version %s has SHA-256 %s, not the %s clusterctl sent: refusing it", bucket, key, version, got, sum)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("fetching s3://%s/%s: %w", bucket, key, err)
	}
	return nil
}
