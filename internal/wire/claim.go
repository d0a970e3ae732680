package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Exactly one of several writers wins by S3's conditional writes: a
// create-only put (If-None-Match: *) succeeds for one of them, and a
// take-over (If-Match: the ETag read) only while the object is still the
// one read. The CLI's leases and the managers' initialisation marker are
// both taken this way.

// ClaimAPI is what a conditional write needs of S3: the put, and a read of
// the object there when the put is refused. *s3.Client satisfies it.
type ClaimAPI interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// PutConditional writes body (JSON) to bucket/key, encrypted: only if there
// is no object there (ifMatch ""), else only if the object is still the
// one of ETag ifMatch. It returns the ETag and version id written; a lost
// race is an error for which IsPrecondition (or, for a take-over of an
// object deleted in between, IsMissing) holds.
//
// A refused put whose body is what the bucket now holds, byte for byte,
// is this write landed: the SDK sends a put again when its answer was
// lost (a connection cut after S3 had written), and the second attempt
// meets the first's object. Every claim's body names its writer and its
// time, so another writer's object never reads as this one's.
func PutConditional(ctx context.Context, api ClaimAPI, bucket, key string, body []byte, ifMatch string) (etag, version string, err error) {
	in := &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), ContentType: aws.String("application/json"),
		ServerSideEncryption: s3types.ServerSideEncryptionAes256,
	}
	if ifMatch == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(ifMatch)
	}
	out, err := api.PutObject(ctx, in)
	if err == nil {
		return aws.ToString(out.ETag), VersionID(out.VersionId), nil
	}
	if IsPrecondition(err) || ifMatch != "" && IsMissing(err) {
		if etag, version, ok := landed(ctx, api, bucket, key, body); ok {
			return etag, version, nil
		}
	}
	return "", "", err
}

// landed tells whether the object at bucket/key is body, and its ETag and
// version id when it is.
func landed(ctx context.Context, api ClaimAPI, bucket, key string, body []byte) (etag, version string, ok bool) {
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)},
		func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true })
	if err != nil {
		return "", "", false
	}
	defer out.Body.Close()
	got, err := io.ReadAll(io.LimitReader(out.Body, int64(len(body))+1))
	if err != nil || !bytes.Equal(got, body) {
		return "", "", false
	}
	return aws.ToString(out.ETag), VersionID(out.VersionId), true
}

// VersionID reads an object's version id: "" when the bucket is not
// versioned (S3 says "null").
func VersionID(v *string) string {
	if s := aws.ToString(v); s != "null" {
		return s
	}
	return ""
}

// IsPrecondition recognises a failed If-None-Match / If-Match (412), and
// ConditionalRequestConflict (409: a concurrent conditional write won).
func IsPrecondition(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "PreconditionFailed" || ae.ErrorCode() == "ConditionalRequestConflict") {
		return true
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusPreconditionFailed || re.HTTPStatusCode() == http.StatusConflict)
}

// IsMissing recognises an object (or key) that is not there.
func IsMissing(err error) bool {
	var nk *s3types.NoSuchKey
	var nf *s3types.NotFound
	var ae smithy.APIError
	return errors.As(err, &nk) || errors.As(err, &nf) || errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")
}

// InitMarker is the swarm's initialisation marker
// (names.ControlKey(names.InitMarker)): the manager that claimed the
// swarm's initialisation, written create-only so that exactly one manager
// initialises it, and taken over (If-Match) when it is stale.
type InitMarker struct {
	InstanceID string    `json:"instanceId"`
	Address    string    `json:"address"`
	Time       time.Time `json:"time"`
}

// Marshal is the marker's body, its time to the second.
func (m InitMarker) Marshal() []byte {
	m.Time = m.Time.UTC().Truncate(time.Second)
	b, _ := json.Marshal(m) // strings and a time: cannot fail
	return b
}

// ParseInitMarker reads a marker; one that is not JSON names no instance.
func ParseInitMarker(body []byte) InitMarker {
	var m InitMarker
	_ = json.Unmarshal(body, &m)
	return m
}
