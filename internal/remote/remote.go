// Package remote runs what an operator asks of a cluster's nodes through
// Systems Manager, with no SSH and no open port: a docker command on a
// manager (Run Command, its output through the cluster bucket) and a
// shell (Session Manager).
package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// SSMAPI is what running a command needs from Systems Manager.
type SSMAPI interface {
	SendCommand(ctx context.Context, in *ssm.SendCommandInput, opts ...func(*ssm.Options)) (*ssm.SendCommandOutput, error)
	GetCommandInvocation(ctx context.Context, in *ssm.GetCommandInvocationInput, opts ...func(*ssm.Options)) (*ssm.GetCommandInvocationOutput, error)
	CancelCommand(ctx context.Context, in *ssm.CancelCommandInput, opts ...func(*ssm.Options)) (*ssm.CancelCommandOutput, error)
}

// S3API is what running a command needs from S3: the standard input put
// in the bucket and every version of it deleted, the output read.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	ListObjectVersions(ctx context.Context, in *s3.ListObjectVersionsInput, opts ...func(*s3.Options)) (*s3.ListObjectVersionsOutput, error)
}

// Document is the Run Command document the docker commands run with.
const Document = "AWS-RunShellScript"

const (
	// MaxInput bounds the standard input clusterctl reads and sends. It
	// always goes through the bucket, never in the command's parameters,
	// which Run Command keeps in its history for anyone with
	// ssm:ListCommands to read: its own limit, apart from the arguments'.
	MaxInput = 256 << 20
	// maxScript bounds the script itself, under SendCommand's limit
	// (16 KiB is the bound we keep under): arguments that long are
	// refused before anything is sent or uploaded.
	maxScript = 15 << 10
	// MaxTimeout is Run Command's longest execution timeout (the
	// document's executionTimeout, 48 hours).
	MaxTimeout = 48 * time.Hour
	// maxOutput bounds what is read of each output object.
	maxOutput = 1 << 30
	// deliveryTimeout is how long Systems Manager tries to deliver the
	// command to an agent that is offline (SendCommand's TimeoutSeconds,
	// at least 30).
	deliveryTimeout = 120
	// defaultExecution is the execution timeout on the node without
	// --timeout: the document's own default.
	defaultExecution = time.Hour
)

// OutputPath is the key, under OutputS3KeyPrefix, where the SSM agent
// writes a stream (stdout or stderr) of the AWS-RunShellScript command
// commandID on instance.
func OutputPath(prefix, commandID, instance, stream string) string {
	return fmt.Sprintf("%s/%s/%s/awsrunShellScript/0.awsrunShellScript/%s", prefix, commandID, instance, stream)
}

// Docker is one docker command to run on a manager.
type Docker struct {
	Instance string
	Args     []string
	// Stdin is the standard input to send; nil for none (the command
	// reads /dev/null).
	Stdin  []byte
	Bucket string // the cluster bucket: output and input
	Run    string // this run's id: its prefix under names.CommandPrefix
	Region string // of the bucket, for a node without the node agent (aws s3 cp)
	// Timeout bounds the command on the node; 0: an hour.
	Timeout time.Duration
}

// Result is how a docker command ended on the node.
type Result struct {
	CommandID  string
	InstanceID string
	// Status is the invocation's status as Systems Manager reports it.
	Status   string
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	// Truncated: the output objects were missing and the invocation's
	// inline output (at most 24,000 characters) stands in for them.
	Truncated bool
	// InputLeft says why the standard input could not be deleted from
	// the bucket after the command (nil: deleted, every version).
	InputLeft error
}

// Runner runs docker commands through Run Command.
type Runner struct {
	SSM SSMAPI
	S3  S3API
	// Poll is how often the invocation is asked about at most (from 100
	// ms, doubling); 0: a second.
	Poll time.Duration
	// OutputWait bounds how long output objects a finished invocation
	// names are waited for (the agent uploads them as it reports); 0: 10 s.
	OutputWait time.Duration
}

// Input is a standard input waiting in the cluster bucket, pinned: the
// node fetches exactly this version and refuses any other content, so a
// principal that may write the bucket cannot swap it between the upload
// and the fetch.
type Input struct {
	Key       string
	VersionID string
	SHA256    string // hex
}

// pinnedInput is the Input of body put at key as version.
func pinnedInput(key, version string, body []byte) *Input {
	sum := sha256.Sum256(body)
	return &Input{Key: key, VersionID: version, SHA256: hex.EncodeToString(sum[:])}
}

// Script is the shell script that runs docker with args on the node,
// reading the standard input from in, in bucket (nil for none, then
// /dev/null). Each argument travels in base64, decoded on the node into
// one word of "$@": what the user typed is never in the parameters in a
// form Systems Manager rewrites ({{ssm:NAME}} is resolved in them before
// the script runs) nor one the shell re-reads. The standard input is
// never in the script: Run Command keeps its parameters for 30 days.
func Script(args []string, bucket string, in *Input, region string) string {
	var b strings.Builder
	b.WriteString("# clusterctl docker\nset -u\nset --\n")
	if len(args) > 0 {
		b.WriteString("for w in")
		for _, a := range args {
			fmt.Fprintf(&b, " '%s'", base64.StdEncoding.EncodeToString([]byte(a)))
		}
		// The x keeps the trailing newlines command substitution strips.
		b.WriteString("; do\n  a=$(printf '%s' \"$w\" | base64 -d && printf x) || exit 125\n  set -- \"$@\" \"${a%x}\"\ndone\n")
	}
	if in == nil {
		b.WriteString("docker \"$@\" </dev/null\n")
		return b.String()
	}
	fmt.Fprintf(&b, "in=$(mktemp) || exit 125\ntrap 'rm -f \"$in\"' EXIT\n")
	// The node agent fetches that version with the instance role and
	// checks its hash; a manager of a core deployed before the agent has
	// the AWS CLI instead. Either way the script checks the hash again
	// before docker reads a byte: the fetch path is not trusted alone.
	fmt.Fprintf(&b, "agent=\"${CLUSTERCTL_ROOT:-}/usr/local/bin/clusterctl-node\"\n")
	fmt.Fprintf(&b, "if [ -x \"$agent\" ]; then \"$agent\" get --version-id %s --sha256 %s %s \"$in\"; else aws s3api get-object --region %s --bucket %s --key %s --version-id %s \"$in\" >/dev/null; fi ||\n",
		shellWord(in.VersionID), shellWord(in.SHA256), shellWord(in.Key), shellWord(region), shellWord(bucket), shellWord(in.Key), shellWord(in.VersionID))
	fmt.Fprintf(&b, "  { echo 'clusterctl: could not fetch the standard input from the cluster bucket (a node agent older than clusterctl: clusterctl update-core)' >&2; exit 125; }\n")
	fmt.Fprintf(&b, "[ \"$(sha256sum <\"$in\" | cut -d' ' -f1)\" = %s ] ||\n", shellWord(in.SHA256))
	fmt.Fprintf(&b, "  { echo 'clusterctl: the standard input in the cluster bucket is not what clusterctl sent (SHA-256 differs): refusing, nothing ran' >&2; exit 125; }\n")
	b.WriteString("docker \"$@\" <\"$in\"\n")
	return b.String()
}

// Check refuses, before anything is read, sent or uploaded, docker
// arguments that cannot be sent as typed and a timeout Run Command does
// not take (exit 2).
func Check(args []string, timeout time.Duration) error {
	if err := CheckUTF8(args); err != nil {
		return err
	}
	// The longest script these arguments make: with standard input, a
	// bucket name of the longest and a long region and run id.
	longest := Script(args, strings.Repeat("b", 63), &Input{Key: names.CommandInputKey(strings.Repeat("r", 40)), VersionID: strings.Repeat("v", 64), SHA256: strings.Repeat("0", 64)}, "ap-southeast-5")
	if n := len(longest); n > maxScript {
		return errs.Usage("the docker arguments are too long to send (%d bytes of script, at most %d): put long content on standard input", n, maxScript)
	}
	if timeout > MaxTimeout {
		return errs.Usage("--timeout %s is above Run Command's longest execution timeout, 48h", shortDuration(timeout))
	}
	return nil
}

// shortDuration spells d without trailing zero units: 49h, 48h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// CheckUTF8 refuses an argument that is not valid UTF-8 rather than
// send it changed: Run Command carries text only. It takes the command
// line as the program received it (a parser may have replaced the
// invalid bytes already).
func CheckUTF8(args []string) error {
	for _, a := range args {
		if !utf8.ValidString(a) {
			return errs.Usage("the argument %q is not valid UTF-8: Run Command carries text only, and docker would get another word", a)
		}
	}
	return nil
}

// Run sends the command, waits for it and reads its output. The command's
// own failure is a Result with its exit code, not an error. Ctrl-C (ctx
// cancelled) and --timeout (ctx past its deadline) cancel it on the node.
func (r *Runner) Run(ctx context.Context, d Docker) (res *Result, err error) {
	if err := Check(d.Args, d.Timeout); err != nil {
		return nil, err
	}
	var input *Input
	if d.Stdin != nil {
		inputKey := names.CommandInputKey(d.Run)
		// Deleted however the run ends (Ctrl-C included, with a context
		// of its own), and after a failed put too: the object may exist.
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			left := DeleteEveryVersion(cctx, r.S3, d.Bucket, inputKey)
			switch {
			case left == nil:
			case res != nil:
				res.InputLeft = left
			case err != nil:
				err = fmt.Errorf("%w; and %w", err, left)
			}
		}()
		put, err := r.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(d.Bucket), Key: aws.String(inputKey), Body: bytes.NewReader(d.Stdin)})
		if err != nil {
			return nil, fmt.Errorf("putting the standard input in s3://%s/%s: %w", d.Bucket, inputKey, err)
		}
		// The bucket is versioned: without a version the node could not
		// be told which content to take.
		if aws.ToString(put.VersionId) == "" {
			return nil, fmt.Errorf("putting the standard input in s3://%s/%s: the bucket named no version of it (is the bucket versioned?)", d.Bucket, inputKey)
		}
		input = pinnedInput(inputKey, aws.ToString(put.VersionId), d.Stdin)
	}
	script := Script(d.Args, d.Bucket, input, d.Region)
	execution := d.Timeout
	if execution <= 0 {
		execution = defaultExecution
	}
	prefix := names.CommandOutputPrefix(d.Run)
	sent, err := r.SSM.SendCommand(ctx, &ssm.SendCommandInput{
		DocumentName: aws.String(Document),
		InstanceIds:  []string{d.Instance},
		Comment:      aws.String(comment(d.Args)),
		Parameters: map[string][]string{
			"commands":         {script},
			"executionTimeout": {strconv.Itoa(int((execution + time.Second - 1) / time.Second))},
		},
		OutputS3BucketName: aws.String(d.Bucket),
		OutputS3KeyPrefix:  aws.String(prefix),
		TimeoutSeconds:     aws.Int32(deliveryTimeout),
	})
	if err != nil {
		return nil, fmt.Errorf("sending the command to %s: %w", d.Instance, err)
	}
	if sent.Command == nil || aws.ToString(sent.Command.CommandId) == "" {
		return nil, fmt.Errorf("sending the command to %s: no command id in the answer", d.Instance)
	}
	id := aws.ToString(sent.Command.CommandId)
	inv, err := r.wait(ctx, id, d.Instance)
	if err != nil {
		return nil, r.stopped(ctx, err, id, d.Instance)
	}
	res = &Result{CommandID: id, InstanceID: d.Instance, Status: string(inv.Status), ExitCode: int(inv.ResponseCode)}
	switch inv.Status {
	case ssmtypes.CommandInvocationStatusSuccess:
		res.ExitCode = 0
	case ssmtypes.CommandInvocationStatusFailed:
		if inv.ResponseCode < 0 {
			return nil, fmt.Errorf("command %s did not run on %s: %s", id, d.Instance, details(inv))
		}
	case ssmtypes.CommandInvocationStatusTimedOut:
		return nil, fmt.Errorf("command %s on %s: %s (execution timeout %s, delivery timeout %ds)", id, d.Instance, details(inv), execution, deliveryTimeout)
	default:
		return nil, fmt.Errorf("command %s on %s ended %s: %s", id, d.Instance, inv.Status, details(inv))
	}
	// With an output bucket, Systems Manager names where the output went
	// (documented: empty only without a bucket). Without that, what ran
	// and what it printed are unknown.
	if aws.ToString(inv.StandardOutputUrl) == "" {
		return nil, fmt.Errorf("command %s on %s ended %s, but Systems Manager names no output in s3://%s/%s: what ran and what it printed are unknown",
			id, d.Instance, inv.Status, d.Bucket, prefix)
	}
	if err := r.readOutput(ctx, d.Bucket, prefix, inv, res); err != nil {
		return nil, err
	}
	return res, nil
}

// DeleteEveryVersion deletes the object key and every version and delete
// marker of it: the bucket is versioned, and a plain DeleteObject would
// leave the data behind as a noncurrent version.
func DeleteEveryVersion(ctx context.Context, api S3API, bucket, key string) error {
	fail := func(err error) error {
		return fmt.Errorf("the standard input may be left in s3://%s/%s (delete every version of it: aws s3api list-object-versions --bucket %s --prefix %s): %w",
			bucket, key, bucket, key, err)
	}
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)}
	for {
		out, err := api.ListObjectVersions(ctx, in)
		if err != nil {
			return fail(err)
		}
		var versions []string
		for _, v := range out.Versions {
			if aws.ToString(v.Key) == key {
				versions = append(versions, aws.ToString(v.VersionId))
			}
		}
		for _, m := range out.DeleteMarkers {
			if aws.ToString(m.Key) == key {
				versions = append(versions, aws.ToString(m.VersionId))
			}
		}
		for _, v := range versions {
			if _, err := api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(v)}); err != nil && !wire.IsMissing(err) {
				return fail(err)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return nil
		}
		in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
	}
}

// wait polls the invocation until it ends.
func (r *Runner) wait(ctx context.Context, id, instance string) (*ssm.GetCommandInvocationOutput, error) {
	most := r.Poll
	if most <= 0 {
		most = time.Second
	}
	// Most commands end within a second or two: ask soon, then every
	// second.
	poll := min(most, 100*time.Millisecond)
	for {
		inv, err := r.SSM.GetCommandInvocation(ctx, &ssm.GetCommandInvocationInput{CommandId: aws.String(id), InstanceId: aws.String(instance)})
		var ae interface{ ErrorCode() string }
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.As(err, &ae) && ae.ErrorCode() == "InvocationDoesNotExist":
			// Just sent: Systems Manager has not recorded it yet.
		case err != nil:
			return nil, fmt.Errorf("asking about command %s on %s: %w", id, instance, err)
		default:
			switch inv.Status {
			case ssmtypes.CommandInvocationStatusPending, ssmtypes.CommandInvocationStatusInProgress,
				ssmtypes.CommandInvocationStatusDelayed, ssmtypes.CommandInvocationStatusCancelling:
			default:
				return inv, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
		poll = min(2*poll, most)
	}
}

// stopped cancels the command on the node when Ctrl-C or --timeout
// stopped the wait, and says so.
func (r *Runner) stopped(ctx context.Context, err error, id, instance string) error {
	if ctx.Err() == nil {
		return err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	what := fmt.Sprintf("cancelled command %s on %s", id, instance)
	if _, cerr := r.SSM.CancelCommand(cctx, &ssm.CancelCommandInput{CommandId: aws.String(id), InstanceIds: []string{instance}}); cerr != nil {
		what = fmt.Sprintf("could not cancel command %s on %s (%v): it may still run; aws ssm cancel-command --command-id %s", id, instance, cerr, id)
	}
	if errors.Is(err, context.Canceled) {
		return &errs.InterruptedError{Err: err, Hint: what}
	}
	return fmt.Errorf("%w; %s", err, what)
}

// readOutput reads the streams the agent wrote to the bucket. An absent
// object is an empty stream; but the agent reports the end before its
// upload is visible, so when the invocation's inline output says a
// stream is not empty its object is waited for, and as a last resort the
// inline (truncated) output stands in.
func (r *Runner) readOutput(ctx context.Context, bucket, prefix string, inv *ssm.GetCommandInvocationOutput, res *Result) error {
	wait := r.OutputWait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	for _, s := range []struct {
		name   string
		inline string
		into   *[]byte
	}{
		{"stdout", aws.ToString(inv.StandardOutputContent), &res.Stdout},
		{"stderr", aws.ToString(inv.StandardErrorContent), &res.Stderr},
	} {
		key := OutputPath(prefix, res.CommandID, res.InstanceID, s.name)
		for {
			body, found, err := getObject(ctx, r.S3, bucket, key)
			if err != nil {
				return err
			}
			if found {
				*s.into = body
				break
			}
			if s.inline == "" {
				break
			}
			if time.Now().After(deadline) {
				*s.into, res.Truncated = []byte(s.inline), true
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("reading the output of command %s: %w", res.CommandID, ctx.Err())
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	return nil
}

// getObject reads one object whole; found is false when there is none.
func getObject(ctx context.Context, api S3API, bucket, key string) ([]byte, bool, error) {
	// The agent uploads without checksums: nothing to validate, nothing
	// to log about it.
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)},
		func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true })
	if err != nil {
		if wire.IsMissing(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("reading s3://%s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, maxOutput))
	if err != nil {
		return nil, false, fmt.Errorf("reading s3://%s/%s: %w", bucket, key, err)
	}
	return body, true, nil
}

// details says why an invocation ended as it did.
func details(inv *ssm.GetCommandInvocationOutput) string {
	d := aws.ToString(inv.StatusDetails)
	if d == "" {
		d = string(inv.Status)
	}
	switch d {
	case "Undeliverable":
		return "undeliverable: the instance is not managed by Systems Manager or its agent is not running (aws ssm describe-instance-information)"
	case "DeliveryTimedOut":
		return fmt.Sprintf("not delivered within %ds: the node's SSM agent is offline", deliveryTimeout)
	case "ExecutionTimedOut":
		return "it ran past its execution timeout and was stopped"
	case "AccessDenied":
		return "access denied: the command's output could not be written to the cluster bucket"
	}
	if e := strings.TrimSpace(aws.ToString(inv.StandardErrorContent)); e != "" {
		return d + ": " + e
	}
	return d
}

// comment names the command in Systems Manager's history (at most 100
// characters).
func comment(args []string) string {
	c := "clusterctl docker " + strings.Join(args, " ")
	if len(c) > 100 {
		c = c[:97] + "..."
	}
	return strings.ToValidUTF8(c, "")
}
