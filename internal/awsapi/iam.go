package awsapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// IAM makes clusterctl's one IAM call, GetRole, for the ARN (with its
// path) of the role an assumed-role session acts as. It is signed with the
// SDK's SigV4 signer and sent through the configuration's bounded HTTP
// client rather than by the SDK's IAM client: that client registers the
// schema of every IAM operation at start-up, 0.6 MB of the binary for one
// call (docs/benchmarks.md, "The binary's size"). Not retried, and not in
// the -v call log.
type IAM struct {
	cfg aws.Config
	now func() time.Time
}

// NewIAM returns the IAM call of cfg.
func NewIAM(cfg aws.Config) IAM { return IAM{cfg: cfg, now: time.Now} }

// RoleARN is the ARN of the role named name.
func (a IAM) RoleARN(ctx context.Context, name string) (string, error) {
	if a.cfg.Credentials == nil || a.cfg.HTTPClient == nil {
		return "", errors.New("IAM GetRole: no credentials")
	}
	endpoint, region := iamEndpoint(a.cfg)
	body := url.Values{"Action": {"GetRole"}, "Version": {"2010-05-08"}, "RoleName": {name}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("IAM GetRole: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	creds, err := a.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return "", fmt.Errorf("IAM GetRole: credentials: %w", err)
	}
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "iam", region, a.now()); err != nil {
		return "", fmt.Errorf("IAM GetRole: signing: %w", err)
	}
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("IAM GetRole: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("IAM GetRole: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Code    string `xml:"Error>Code"`
			Message string `xml:"Error>Message"`
		}
		if xml.Unmarshal(raw, &e) != nil || e.Code == "" {
			return "", fmt.Errorf("IAM GetRole: HTTP %d", resp.StatusCode)
		}
		return "", fmt.Errorf("IAM GetRole: %s: %s", e.Code, e.Message)
	}
	var out struct {
		Arn string `xml:"GetRoleResult>Role>Arn"`
	}
	if err := xml.Unmarshal(raw, &out); err != nil {
		return "", fmt.Errorf("IAM GetRole: reading the answer: %w", err)
	}
	return out.Arn, nil
}

// iamEndpoint is IAM's endpoint for cfg and the region its requests are
// signed for: the custom endpoint (--endpoint-url) if any, else the global
// endpoint of the region's partition.
func iamEndpoint(cfg aws.Config) (endpoint, region string) {
	if cfg.BaseEndpoint != nil && *cfg.BaseEndpoint != "" {
		return *cfg.BaseEndpoint, cfg.Region
	}
	switch r := cfg.Region; {
	case strings.HasPrefix(r, "cn-"):
		return "https://iam.cn-north-1.amazonaws.com.cn", "cn-north-1"
	case strings.HasPrefix(r, "us-gov-"):
		return "https://iam.us-gov.amazonaws.com", "us-gov-west-1"
	case strings.HasPrefix(r, "us-isob-"):
		return "https://iam.us-isob-east-1.sc2s.sgov.gov", "us-isob-east-1"
	case strings.HasPrefix(r, "us-iso-"):
		return "https://iam.us-iso-east-1.c2s.ic.gov", "us-iso-east-1"
	}
	return "https://iam.amazonaws.com", "us-east-1"
}
