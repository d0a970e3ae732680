package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
)

// Deployment is what creating one stack deploys: the stack, the size of
// its template, its parameters, tags and capabilities, and the objects put
// into the cluster bucket before it. create-core --dry-run, add-agents
// --dry-run and render --parameters print it; its JSON keys are a public
// interface.
type Deployment struct {
	Stack         string            `json:"stack"`
	TemplateBytes int               `json:"templateBytes"`
	Parameters    map[string]string `json:"parameters"`
	Tags          map[string]string `json:"tags"`
	Capabilities  []string          `json:"capabilities"`
	Uploads       []Upload          `json:"uploads"`
	// Replaces is the status of a dead stack of the same name that
	// add-agents --replace-failed deletes first ("" when there is none).
	Replaces string `json:"replaces,omitempty"`
}

// Upload is one object put into the cluster bucket before a stack is
// deployed: a group's node configuration. Bucket is "" when rendered
// offline.
type Upload struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// DeploymentOf describes a rendered stack.
func DeploymentOf(r *render.Rendered) *Deployment {
	d := &Deployment{
		Stack:         r.StackName,
		TemplateBytes: len(r.Template),
		Parameters:    r.Parameters,
		Tags:          r.Tags,
		Capabilities:  r.Capabilities,
		Uploads:       UploadsOf(r),
	}
	if d.Capabilities == nil {
		d.Capabilities = []string{}
	}
	return d
}

// UploadsOf lists the objects a rendered stack needs in the cluster
// bucket, which its BucketName parameter names (the core's output).
func UploadsOf(r *render.Rendered) []Upload {
	out := []Upload{}
	for _, a := range r.Artifacts {
		sum := sha256.Sum256(a.Body)
		out = append(out, Upload{Bucket: r.Parameters[names.OutputBucketName], Key: a.Key, Bytes: len(a.Body), SHA256: hex.EncodeToString(sum[:])})
	}
	return out
}

// WriteDeployment prints a deployment for a terminal: the stack line, then
// the parameters, the tags and the uploads as tables.
func WriteDeployment(w io.Writer, d *Deployment) error {
	caps := "none"
	if len(d.Capabilities) > 0 {
		caps = strings.Join(d.Capabilities, ", ")
	}
	fmt.Fprintf(w, "Stack %s: template %d bytes, capabilities %s\n", d.Stack, d.TemplateBytes, caps)
	if d.Replaces != "" {
		fmt.Fprintf(w, "The dead stack %s (%s) is deleted first.\n", d.Stack, d.Replaces)
	}
	fmt.Fprintln(w)
	if err := query.WriteTable(w, query.KVTable(d.Parameters, "PARAMETER", "VALUE")); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := query.WriteTable(w, query.KVTable(d.Tags, "TAG", "VALUE")); err != nil {
		return err
	}
	if len(d.Uploads) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := query.Table{Header: []string{"UPLOAD", "BYTES"}}
	for _, u := range d.Uploads {
		bucket := u.Bucket
		if bucket == "" {
			bucket = "<the core's bucket>" // rendered offline
		}
		t.Rows = append(t.Rows, []string{"s3://" + bucket + "/" + u.Key, fmt.Sprint(u.Bytes)})
	}
	return query.WriteTable(w, t)
}

// StackInput is a stack as the input document of `aws cloudformation
// create-stack --cli-input-json`: with AWS's key names, so an operator can
// deploy what clusterctl renders with the AWS CLI alone.
type StackInput struct {
	StackName    string
	TemplateBody string
	Parameters   []StackParameter
	Tags         []StackTag
	Capabilities []string `json:",omitempty"`
}

// StackParameter is one entry of StackInput.Parameters.
type StackParameter struct{ ParameterKey, ParameterValue string }

// StackTag is one entry of StackInput.Tags.
type StackTag struct{ Key, Value string }

// StackInputOf is the create-stack input of a rendered stack, parameters
// and tags sorted by key.
func StackInputOf(r *render.Rendered) StackInput {
	in := StackInput{StackName: r.StackName, TemplateBody: string(r.Template), Parameters: []StackParameter{}, Tags: []StackTag{}, Capabilities: r.Capabilities}
	for _, k := range slices.Sorted(maps.Keys(r.Parameters)) {
		in.Parameters = append(in.Parameters, StackParameter{k, r.Parameters[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(r.Tags)) {
		in.Tags = append(in.Tags, StackTag{k, r.Tags[k]})
	}
	return in
}

// NodeConfig is a group's node configuration: the script add-agents and
// update-group upload to the cluster bucket before they deploy the group,
// which the agents' user data fetches, checks against its SHA-256 and runs.
type NodeConfig struct {
	Upload
	Script string `json:"script"`
}

// NodeConfigOf is the node configuration of a rendered group.
func NodeConfigOf(r *render.Rendered) (*NodeConfig, error) {
	ups := UploadsOf(r)
	if len(ups) != 1 {
		return nil, fmt.Errorf("stack %s has %d node configurations, not one", r.StackName, len(ups))
	}
	return &NodeConfig{Upload: ups[0], Script: string(r.Artifacts[0].Body)}, nil
}
