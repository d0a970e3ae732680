// Package awsx loads the AWS configuration clusterctl runs with: the standard
// chain (environment, profiles, AWS_ENDPOINT_URL, ...) plus the global flags,
// an adaptive retryer, and the -v call log.
package awsx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/middleware"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/sdkhttp"
)

// Options are the global flags that shape the AWS configuration.
type Options struct {
	Region      string
	Profile     string
	EndpointURL string
	// MaxAttempts bounds retries of throttled and transient (5xx) calls.
	MaxAttempts int
	// Log, when set, receives one line per AWS call with its duration (-v).
	Log io.Writer
	// Bounds of each attempt; zero values are taken from the environment
	// (EnvConnectTimeout, EnvResponseTimeout), then the defaults.
	Bounds Bounds
	// DefaultRegion is the region of `clusterctl use`: it comes after
	// --region and the environment's AWS_REGION/AWS_DEFAULT_REGION, and
	// before the profile's region, which `clusterctl use --region` was
	// typed to override.
	DefaultRegion string
}

// ErrNoRegion is returned when neither flags nor the environment name a region.
var ErrNoRegion = errors.New("no AWS region configured: pass --region, set AWS_REGION, or set a default with clusterctl use CLUSTER --region REGION")

// regionOf is the region Load sets itself, "" to leave it to the SDK
// (the environment, then the profile): --region, else the default region
// unless the environment names one.
func regionOf(o Options, getenv func(string) string) string {
	switch {
	case o.Region != "":
		return o.Region
	case getenv("AWS_REGION") != "" || getenv("AWS_DEFAULT_REGION") != "":
		return ""
	}
	return o.DefaultRegion
}

// DefaultMaxAttempts is enough that a run of 20% throttled and 5% failing
// calls still goes through (the chance of 10 failures in a row is ~1e-7).
const DefaultMaxAttempts = 10

// Load returns the AWS config and the call recorder (nil-safe to use).
func Load(ctx context.Context, o Options) (aws.Config, *Recorder, error) {
	var loaders []func(*config.LoadOptions) error
	if region := regionOf(o, os.Getenv); region != "" {
		loaders = append(loaders, config.WithRegion(region))
	}
	if o.Profile != "" {
		loaders = append(loaders, config.WithSharedConfigProfile(o.Profile))
	}
	attempts := o.MaxAttempts
	if attempts == 0 {
		attempts = DefaultMaxAttempts
	}
	bounds, err := boundsFrom(o.Bounds, os.Getenv)
	if err != nil {
		return aws.Config{}, nil, err
	}
	loaders = append(loaders, config.WithHTTPClient(awshttp.NewBuildableClient()))
	loaders = append(loaders, config.WithRetryer(func() aws.Retryer {
		return dialBounded{retry.NewAdaptiveMode(func(ao *retry.AdaptiveModeOptions) {
			ao.StandardOptions = append(ao.StandardOptions, func(so *retry.StandardOptions) {
				so.MaxAttempts = attempts
				so.MaxBackoff = 10 * time.Second
				// The adaptive token bucket already slows us down under
				// throttling; the retry quota would turn a burst of
				// throttles into a hard failure.
				so.RateLimiter = ratelimit.None
			})
		})}
	}))
	// The SDK's own warnings (falling back to IMDSv1, ...) go to the -v
	// log only: what the user must know reaches them as clusterctl's
	// one-line errors.
	loaders = append(loaders, config.WithLogger(sdkLogger(o.Log)))
	cfg, err := config.LoadDefaultConfig(ctx, loaders...)
	if pe := (config.SharedConfigProfileNotExistError{}); errors.As(err, &pe) {
		return aws.Config{}, nil, errs.Usage("AWS profile %q not found in the AWS configuration (aws configure list-profiles lists those there)", pe.Profile)
	}
	if err != nil {
		return aws.Config{}, nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, nil, ErrNoRegion
	}
	if err := CheckRegion(cfg.Region); err != nil {
		return aws.Config{}, nil, err
	}
	if err := checkCredentials(ctx, cfg); err != nil {
		return aws.Config{}, nil, err
	}
	// Bounded once the standard configuration (a CA bundle, ...) is in.
	if b, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		cfg.HTTPClient = bounded(b, bounds)
	}
	cfg.HTTPClient = sdkhttp.Guard(cfg.HTTPClient)
	if o.EndpointURL != "" {
		cfg.BaseEndpoint = aws.String(o.EndpointURL)
	}
	rec := &Recorder{log: o.Log, counts: map[string]int{}}
	cfg.APIOptions = append(cfg.APIOptions, rec.middleware, attemptURL)
	if path := os.Getenv(EnvRecordCalls); path != "" {
		cfg.APIOptions = append(cfg.APIOptions, callRecorder{path}.middleware)
	}
	return cfg, rec, nil
}

// CustomEndpoint tells whether the config points somewhere other than AWS
// (then S3 must use path-style addressing: a local endpoint has no
// per-bucket DNS names).
func CustomEndpoint(cfg aws.Config) bool { return cfg.BaseEndpoint != nil && *cfg.BaseEndpoint != "" }

// Recorder counts AWS calls by operation and, for -v, logs each with its
// duration.
type Recorder struct {
	log    io.Writer
	mu     sync.Mutex
	counts map[string]int
}

func (r *Recorder) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("clusterctlCallLog",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			start := time.Now()
			out, md, err := next.HandleInitialize(ctx, in)
			op := awsmiddleware.GetServiceID(ctx) + "." + awsmiddleware.GetOperationName(ctx)
			attempts := 0
			if res, ok := retry.GetAttemptResults(md); ok {
				attempts = len(res.Results)
			}
			if e := asEndpointError(err); e != nil {
				// One line naming the endpoint instead of the SDK's
				// "exceeded maximum number of attempts, ..., dial tcp ...".
				e.Operation, e.Attempts = op, attempts
				err, attempts = e, 0 // the message counts them already
			}
			r.mu.Lock()
			r.counts[op]++
			if r.log != nil {
				status := "ok"
				if err != nil {
					status = "error: " + firstLine(err.Error())
				}
				if attempts > 1 {
					status += fmt.Sprintf(" (%d attempts)", attempts)
				}
				fmt.Fprintf(r.log, "aws %s %s %s\n", op, time.Since(start).Round(time.Millisecond), status)
			}
			r.mu.Unlock()
			return out, md, err
		}), middleware.Before)
}

// Total is the number of AWS calls made so far.
func (r *Recorder) Total() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.counts {
		n += c
	}
	return n
}

// Summary is the -v closing line: total and per-operation counts.
func (r *Recorder) Summary() string {
	if r == nil {
		return "aws calls: 0"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := make([]string, 0, len(r.counts))
	total := 0
	for op, c := range r.counts {
		ops = append(ops, fmt.Sprintf("%s=%d", op, c))
		total += c
	}
	sort.Strings(ops)
	return fmt.Sprintf("aws calls: %d (%s)", total, strings.Join(ops, " "))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
