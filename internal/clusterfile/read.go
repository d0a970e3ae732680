// Package clusterfile reads and writes cluster files: a spec.Cluster as
// YAML or JSON (apiVersion clusterctl/v1, kind Cluster). Reading keeps the
// line of every setting, so that an error names the file, the line and
// the setting; writing keeps the keys in the order the spec declares
// them; Schema is the file's JSON Schema, generated from the Go types.
package clusterfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v4"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/fuzzy"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// Error is invalid input in a cluster file: at a line (0 when the file as
// a whole is at fault) and a setting's path (groups[1].count; "" when
// none).
type Error struct {
	File string
	Line int
	Path string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Read parses a cluster file, named file in errors, YAML or JSON (JSON is
// read as the YAML it also is), fills in the defaults and checks every
// rule of the spec. Unknown keys are errors. Every error is a usage error
// (*Error) naming the file, the line and the setting.
func Read(file string, data []byte) (spec.Cluster, error) {
	var c spec.Cluster
	r := &reader{file: file, lines: map[string]int{}}
	root, err := r.document(data)
	if err != nil {
		return c, errs.AsUsage(err)
	}
	if err := r.decode(root, reflect.ValueOf(&c).Elem(), ""); err != nil {
		return c, errs.AsUsage(err)
	}
	if err := c.Complete(); err != nil {
		return c, errs.AsUsage(r.fieldError(err))
	}
	return c, nil
}

type reader struct {
	file string
	// lines holds the line of every setting read, by its path.
	lines map[string]int
}

func (r *reader) errorf(line int, path, format string, args ...any) error {
	return &Error{File: r.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// yamlLine finds the line in a yaml.v3 syntax error ("yaml: line 3: ...").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// document parses the one document of the file and returns its root.
func (r *reader) document(data []byte) (*yaml.Node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, r.errorf(0, "", "empty file: expected a cluster (apiVersion: %s, kind: %s)", spec.APIVersion, spec.Kind)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, r.syntax(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, r.errorf(next.Line, "", "a second document: a file holds one cluster")
	case !errors.Is(err, io.EOF):
		return nil, r.syntax(err)
	}
	root := doc.Content[0]
	r.lines[""] = root.Line
	if root.Kind != yaml.MappingNode {
		return nil, r.errorf(root.Line, "", "expected a cluster (apiVersion: %s, kind: %s, name, core, groups), found %s", spec.APIVersion, spec.Kind, shape(root))
	}
	return root, nil
}

func (r *reader) syntax(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = strings.TrimPrefix(err.Error(), m[0])
	}
	return r.errorf(line, "", "invalid YAML or JSON: %s", msg)
}

// decode reads node n into v, the setting at path, checking its shape
// against v's type: a struct is a mapping of known keys, a list of
// structs a sequence of them; anything else is decoded by yaml.v3 (which
// calls spec.Labels' own UnmarshalYAML).
func (r *reader) decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // an empty value leaves the setting out
	}
	switch {
	case v.Kind() == reflect.Struct:
		return r.mapping(n, v, path)
	case v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Struct:
		// A section that may be left out (network:): read as a struct.
		p := reflect.New(v.Type().Elem())
		if err := r.mapping(n, p.Elem(), path); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		if n.Kind != yaml.SequenceNode {
			return r.errorf(n.Line, path, "expected a list, found %s", shape(n))
		}
		list := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			at := fmt.Sprintf("%s[%d]", path, i)
			r.lines[at] = item.Line
			if err := r.decode(item, list.Index(i), at); err != nil {
				return err
			}
		}
		v.Set(list)
		return nil
	}
	// yaml.v3 would truncate 40.5 into a whole number.
	whole := v.Kind() != reflect.Pointer || v.Type().Elem().Kind() != reflect.Int || n.ShortTag() == "!!int"
	if err := n.Decode(v.Addr().Interface()); err != nil || !whole {
		return r.errorf(n.Line, path, "expected %s, found %s", expected(v.Type()), shape(n))
	}
	return nil
}

// mapping reads a mapping into the struct v, key by key.
func (r *reader) mapping(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return r.errorf(n.Line, path, "expected a mapping of settings, found %s", shape(n))
	}
	fields := map[string]int{}
	var known []string
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if key != "" && key != "-" {
			fields[key] = i
			known = append(known, key)
		}
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		at := k.Value
		if path != "" {
			at = path + "." + k.Value
		}
		if first, dup := seen[k.Value]; dup {
			return r.errorf(k.Line, at, "given twice (first at line %d)", first)
		}
		seen[k.Value] = k.Line
		f, ok := fields[k.Value]
		if !ok {
			return r.errorf(k.Line, at, "unknown setting%s", hint(k.Value, known))
		}
		r.lines[at] = k.Line
		if err := r.decode(val, v.Field(f), at); err != nil {
			return err
		}
	}
	return nil
}

// hint suggests the known key meant: the same but for case, hyphens and
// underscores (instance-type for instanceType), one a typo or two away,
// or one that begins or ends with it (volume, type); failing that, it
// lists the keys.
func hint(key string, known []string) string {
	norm := func(s string) string { return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(s)) }
	best, dist := "", 3
	for _, k := range known {
		if norm(k) == norm(key) {
			return "; did you mean " + k + "?"
		}
		if d := fuzzy.Distance(norm(key), norm(k)); d < dist {
			best, dist = k, d
		}
	}
	for _, k := range known {
		if n := norm(key); best == "" && len(n) >= 4 && (strings.HasPrefix(norm(k), n) || strings.HasSuffix(norm(k), n)) {
			best = k
		}
	}
	if best != "" {
		return "; did you mean " + best + "?"
	}
	return " (expected one of " + strings.Join(known, ", ") + ")"
}

// expected says what a setting of type t is written as.
func expected(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[spec.Labels]():
		return "a mapping of label keys to values (role: web)"
	case t == reflect.TypeFor[spec.Tags]():
		return "a mapping of tag keys to values (team: payments)"
	case t == reflect.TypeFor[spec.InstanceTypes]():
		return "an instance type or a list of them"
	case t == reflect.TypeFor[spec.Duration]():
		return "a duration such as 10m or 90s"
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Int:
		return "a whole number"
	case t.Kind() == reflect.Slice:
		return "a list"
	case t.Kind() == reflect.String:
		return "a single value"
	}
	return t.String()
}

// shape says what a node is, for errors: a list, a mapping, or the value.
func shape(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// fieldError places a spec.FieldError of the whole cluster at its line:
// that of the setting, or of the nearest enclosing one given (a missing
// setting is placed at its group).
func (r *reader) fieldError(err error) error {
	var fe *spec.FieldError
	if !errors.As(err, &fe) {
		return &Error{File: r.file, Msg: err.Error()}
	}
	msg := fe.Msg
	if fe.Missing {
		msg = "missing"
	}
	path := fe.Path
	if rest, ok := strings.CutPrefix(path, "core.secrets"); ok {
		// The core's secrets are the file's top-level list.
		path = "secrets" + rest
	}
	return &Error{File: r.file, Line: r.line(path), Path: path, Msg: msg}
}

func (r *reader) line(path string) int {
	for {
		if l, ok := r.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return r.lines[""]
		}
		path = path[:i]
	}
}
