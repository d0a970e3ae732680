package awsx

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// iamPrefixes maps the SDK's service id to the service prefix of IAM's
// action names: what an operator's policy grants.
var iamPrefixes = map[string]string{
	"ACM":                       "acm",
	"Auto Scaling":              "autoscaling",
	"CloudFormation":            "cloudformation",
	"CloudWatch":                "cloudwatch",
	"CloudWatch Logs":           "logs",
	"EC2":                       "ec2",
	"Elastic Load Balancing v2": "elasticloadbalancing",
	"IAM":                       "iam",
	"S3":                        "s3",
	"Secrets Manager":           "secretsmanager",
	"SNS":                       "sns",
	"SQS":                       "sqs",
	"SSM":                       "ssm",
	"STS":                       "sts",
}

// s3Actions are the S3 operations IAM authorises under another action's
// name; every other S3 operation is its own action. A versioned read or
// delete is a different action again (versioned below).
var s3Actions = map[string]string{
	"HeadObject":         "GetObject",
	"HeadBucket":         "ListBucket",
	"ListObjects":        "ListBucket",
	"ListObjectsV2":      "ListBucket",
	"ListObjectVersions": "ListBucketVersions",
	"DeleteObjects":      "DeleteObject",
	"GetBucketLocation":  "GetBucketLocation",
}

// s3Versioned are the actions IAM names differently when the request
// names an object version.
var s3Versioned = map[string]string{
	"GetObject":    "GetObjectVersion",
	"DeleteObject": "DeleteObjectVersion",
}

// IAMActions are the IAM actions ("s3:GetObject") that authorise the
// operation op of the SDK service whose id is service, called with the
// input in (the SDK's *XxxInput, which decides S3's versioned actions;
// nil when unknown). An unknown service keeps its id, lower-cased without
// spaces, so a new client shows up in the record rather than vanishing.
func IAMActions(service, op string, in any) []string {
	prefix, ok := iamPrefixes[service]
	if !ok {
		prefix = strings.ToLower(strings.ReplaceAll(service, " ", ""))
	}
	if prefix != "s3" {
		return []string{prefix + ":" + op}
	}
	action := op
	if a, ok := s3Actions[op]; ok {
		action = a
	}
	plain, versioned := s3VersionsOf(in)
	var out []string
	if plain || s3Versioned[action] == "" {
		out = append(out, "s3:"+action)
	}
	if versioned && s3Versioned[action] != "" {
		out = append(out, "s3:"+s3Versioned[action])
	}
	return out
}

// s3VersionsOf says whether an S3 input acts on the current objects
// (plain) and on given versions (versioned); DeleteObjects may do both.
func s3VersionsOf(in any) (plain, versioned bool) {
	has := func(v *string) bool { return v != nil && *v != "" }
	switch x := in.(type) {
	case *s3.GetObjectInput:
		return !has(x.VersionId), has(x.VersionId)
	case *s3.HeadObjectInput:
		return !has(x.VersionId), has(x.VersionId)
	case *s3.DeleteObjectInput:
		return !has(x.VersionId), has(x.VersionId)
	case *s3.DeleteObjectsInput:
		if x.Delete == nil {
			return true, false
		}
		for _, o := range x.Delete.Objects {
			if has(o.VersionId) {
				versioned = true
			} else {
				plain = true
			}
		}
		return plain || !versioned, versioned
	}
	return true, false
}
