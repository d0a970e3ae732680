package motoserver

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

// A JSON template is read as JSON, as CloudFormation reads it: a character
// outside the Basic Multilingual Plane, escaped as JSON escapes it (a
// surrogate pair), is that one character. (moto read every template as
// YAML, whose escapes make two lone surrogates of it; and the YAML parser
// in Python was most of the server's CPU in the end-to-end tests.)
func TestJSONTemplateReadAsJSON(t *testing.T) {
	ctx, cfg := started(t)
	cfn := cloudformation.NewFromConfig(cfg)
	body := `{"Description": "caf\u00e9 \ud83d\ude80", "Parameters": {"P": {"Type": "String", "Default": "x"}},
  "Resources": {"Q": {"Type": "AWS::SQS::Queue"}}, "Outputs": {"O": {"Value": {"Ref": "P"}}}}`
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("json"), TemplateBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("json")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Stacks) != 1 || aws.ToString(out.Stacks[0].Description) != "café 🚀" {
		t.Fatalf("stacks %+v, want one described as %q", out.Stacks, "café 🚀")
	}
	if o := out.Stacks[0].Outputs; len(o) != 1 || aws.ToString(o[0].OutputValue) != "x" {
		t.Errorf("outputs %+v, want O=x", o)
	}
}
