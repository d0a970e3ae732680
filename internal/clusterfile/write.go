package clusterfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	yaml "go.yaml.in/yaml/v4"

	"github.com/clusterctl/clusterctl/internal/spec"
)

// SchemaComment is a YAML cluster file's first line: editors that speak
// the YAML language server find the schema (`clusterctl schema`) by it.
const SchemaComment = "# yaml-language-server: $schema=clusterctl.schema.json"

// Marshal writes c as a cluster file, "yaml" or "json", with the keys in
// the order the spec declares them and settings left out left out; YAML
// starts with SchemaComment.
func Marshal(c spec.Cluster, format string) ([]byte, error) {
	c = c.FileForm()
	var buf bytes.Buffer
	switch format {
	case "yaml":
		buf.WriteString(SchemaComment + "\n")
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(c); err != nil {
			return nil, fmt.Errorf("encoding the cluster file: %w", err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("encoding the cluster file: %w", err)
		}
	case "json":
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(c); err != nil {
			return nil, fmt.Errorf("encoding the cluster file: %w", err)
		}
	default:
		return nil, fmt.Errorf("cluster file format %q: expected yaml or json", format)
	}
	return buf.Bytes(), nil
}

// Schema returns the JSON Schema of a cluster file, generated from
// spec.Cluster: keys and types from the json tags, descriptions from the
// help the flags show (or the file tag, where that does not fit), apiVersion and kind as constants, and no key the
// spec does not know (editors then flag unknown keys as clusterctl does).
// A key is required when the spec's json tag may not leave it out, but
// for the core: a file without one asks for every default.
func Schema() ([]byte, error) {
	r := &jsonschema.Reflector{RequiredFromJSONSchemaTags: true, Mapper: schemaOf}
	s := r.Reflect(&spec.Cluster{})
	s.ID = "" // the Go package's path is no address of ours
	s.Title = "clusterctl cluster file"
	s.Description = "A cluster: its core and its agent groups (clusterctl apply -f FILE)."
	describe(s, reflect.TypeFor[spec.Cluster]())
	root := s.Definitions["Cluster"]
	if root == nil {
		return nil, fmt.Errorf("JSON Schema: no definition of Cluster")
	}
	root.Properties.Value("apiVersion").Const = spec.APIVersion
	root.Properties.Value("kind").Const = spec.Kind
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("encoding the JSON Schema: %w", err)
	}
	return buf.Bytes(), nil
}

// schemaOf gives the schema of the spec's types that read more than one
// form: a group's instance types are one type or a list of them; its
// published ports a port, a string or a list of them.
func schemaOf(t reflect.Type) *jsonschema.Schema {
	if t == reflect.TypeFor[spec.Ports]() {
		port := []*jsonschema.Schema{{Type: "integer", Minimum: "1", Maximum: "65535"}, {Type: "string"}}
		return &jsonschema.Schema{OneOf: append(port, &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{OneOf: port}})}
	}
	if t == reflect.TypeFor[spec.Duration]() {
		return &jsonschema.Schema{Type: "string", Pattern: `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`}
	}
	if t != reflect.TypeFor[spec.InstanceTypes]() {
		return nil
	}
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Type: "string"},
		{Type: "array", Items: &jsonschema.Schema{Type: "string"}, MinItems: ptrUint(1)},
	}}
}

func ptrUint(n uint64) *uint64 { return &n }

// describe fills in, for struct type t and the structs it holds, each
// property's description (from its help tag) and the required keys.
func describe(s *jsonschema.Schema, t reflect.Type) {
	def := s.Definitions[t.Name()]
	if def == nil {
		return
	}
	def.Required = nil
	for i := range t.NumField() {
		f := t.Field(i)
		key, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		p := def.Properties.Value(key)
		if p == nil {
			continue
		}
		if h := f.Tag.Get("file"); h != "" {
			p.Description = h
		} else if h := f.Tag.Get("help"); h != "" {
			p.Description = h
		}
		optional := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
		ft := f.Type
		if ft.Kind() == reflect.Slice || ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			describe(s, ft)
			optional = true
		}
		if !optional {
			def.Required = append(def.Required, key)
		}
	}
}
