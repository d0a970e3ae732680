package spec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Field is one setting of a Core or a Group.
type Field struct {
	// Path is the setting's key in a cluster file, nested with dots:
	// "count", "rollingUpdate.maxBatch".
	Path  string
	Value reflect.Value
	Tag   reflect.StructTag
}

// Fields lists the settings of v, a Core or a Group (a pointer to one to
// set them), in declaration order.
func Fields(v any) []Field {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	var out []Field
	walk(rv, "", &out)
	return out
}

func walk(v reflect.Value, prefix string, out *[]Field) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() == reflect.Struct {
			walk(v.Field(i), prefix+key+".", out)
			continue
		}
		*out = append(*out, Field{Path: prefix + key, Value: v.Field(i), Tag: f.Tag})
	}
}

// Flag is the command-line flag of the setting: "-c/--count" or "--min".
func (f Field) Flag() string {
	long := "--" + f.Tag.Get("name")
	if s := f.Tag.Get("short"); s != "" {
		return "-" + s + "/" + long
	}
	return long
}

// Param is the template parameter that carries the setting's value: ""
// when none does (the setting is intent, recorded in the template's
// metadata), "-" when the setting is neither (a group's name).
func (f Field) Param() string { return f.Tag.Get("cfn") }

// FlagFor returns the flag of the setting at path in v (a Core or a
// Group), or "" when there is no such setting.
func FlagFor(v any, path string) string {
	for _, f := range Fields(v) {
		if f.Path == path {
			return f.Flag()
		}
	}
	return ""
}

// overlay copies the settings at the given paths from src to dst, both
// pointers to the same struct type.
func overlay(dst, src any, given []string) {
	s := Fields(src)
	for i, f := range Fields(dst) {
		if slices.Contains(given, f.Path) {
			f.Value.Set(s[i].Value)
		}
	}
}

// Change is one setting that differs between two specs of the same
// thing. Old and New are the values as a file would hold them (nil when
// unset); the Text forms say what unset means (default, closed, none).
type Change struct {
	Path    string `json:"setting"`
	Old     any    `json:"old"`
	New     any    `json:"new"`
	OldText string `json:"-"`
	NewText string `json:"-"`
}

// Diff lists the settings whose values differ from old to new (two Cores
// or two Groups), in declaration order.
func Diff(old, new any) []Change {
	var out []Change
	n := Fields(new)
	for i, f := range Fields(old) {
		a, b := value(f.Value), value(n[i].Value)
		if reflect.DeepEqual(a, b) {
			continue
		}
		unset := f.Tag.Get("unset")
		out = append(out, Change{Path: f.Path, Old: a, New: b, OldText: text(a, unset), NewText: text(b, unset)})
	}
	return out
}

// value is a setting as plain data: nil when unset, numbers behind
// pointers dereferenced, labels as a map.
func value(v reflect.Value) any {
	if v.IsZero() || (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.Len() == 0 {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		return v.Elem().Interface()
	case reflect.Map:
		return v.Convert(reflect.TypeFor[map[string]string]()).Interface()
	}
	return v.Interface()
}

func text(v any, unset string) string {
	switch v := v.(type) {
	case nil:
		if unset == "" {
			unset = "unset"
		}
		return "(" + unset + ")"
	case []string:
		return strings.Join(v, ",")
	case map[string]string:
		return Labels(v).String()
	}
	return fmt.Sprint(v)
}

var stringsType = reflect.TypeFor[[]string]()

// Parameters returns the template parameters that carry settings of v (a
// Core or a Group), by the settings' cfn tags. Lists are comma-separated.
func Parameters(v any) map[string]string {
	out := map[string]string{}
	for _, f := range Fields(v) {
		p := f.Param()
		if p == "" || p == "-" {
			continue
		}
		switch f.Value.Kind() {
		case reflect.String:
			out[p] = f.Value.String()
		case reflect.Bool:
			out[p] = strconv.FormatBool(f.Value.Bool())
		case reflect.Pointer:
			if !f.Value.IsNil() {
				out[p] = strconv.FormatInt(f.Value.Elem().Int(), 10)
			}
		case reflect.Slice:
			out[p] = strings.Join(f.Value.Convert(stringsType).Interface().([]string), ",")
		}
	}
	return out
}

// SetParameters sets the settings of v (a pointer to a Core or a Group)
// that parameters carry from deployed parameter values; a parameter the
// stack lacks leaves its setting unset.
func SetParameters(v any, params map[string]string) error {
	for _, f := range Fields(v) {
		p := f.Param()
		raw, ok := params[p]
		if p == "" || p == "-" || !ok {
			continue
		}
		switch f.Value.Kind() {
		case reflect.String:
			f.Value.SetString(raw)
		case reflect.Bool:
			b, err := strconv.ParseBool(strings.TrimSpace(raw))
			if err != nil {
				return fmt.Errorf("parameter %s = %q: not true or false", p, raw)
			}
			f.Value.SetBool(b)
		case reflect.Pointer:
			n, err := strconv.Atoi(strings.TrimSpace(raw))
			if err != nil {
				return fmt.Errorf("parameter %s = %q: not a number", p, raw)
			}
			f.Value.Set(reflect.ValueOf(&n))
		case reflect.Slice:
			f.Value.Set(reflect.ValueOf(SplitList(raw)).Convert(f.Value.Type()))
		}
	}
	return nil
}

// SplitList reads a list parameter: comma-separated, or a Python list
// ("['a', 'b']"), the form moto reports after an update.
func SplitList(s string) []string {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "["), "]"))
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.Trim(strings.TrimSpace(p), `'"`)
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Intent returns the settings of v (a Core or a Group) that no parameter
// carries, as the JSON object a cluster file would hold for them (unset
// ones left out).
func Intent(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding settings: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encoding settings: %w", err)
	}
	for _, f := range Fields(v) {
		if f.Param() == "" {
			continue
		}
		parent, key := m, f.Path
		if i := strings.LastIndex(f.Path, "."); i >= 0 {
			parent, _ = m[f.Path[:i]].(map[string]any)
			key = f.Path[i+1:]
		}
		delete(parent, key)
	}
	for k, x := range m {
		if sub, ok := x.(map[string]any); ok && len(sub) == 0 {
			delete(m, k)
		}
	}
	return m, nil
}

// SetIntent sets the settings of v (a pointer to a Core or a Group) from
// an object Intent wrote.
func SetIntent(v any, raw json.RawMessage) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("reading recorded settings: %w", err)
	}
	return nil
}

// Args returns the command-line flags that give the settings of v (a Core
// or a Group) that are set, in declaration order, values quoted for a
// shell where they need it: what creates the same thing again. A group's
// name is left out (it is given with its cluster).
func Args(v any) []string {
	var out []string
	for _, f := range Fields(v) {
		val := value(f.Value)
		if val == nil || f.Param() == "-" || f.Tag.Get("name") == "" {
			// A setting without a flag (the core's secrets) has its own command.
			continue
		}
		flag := "--" + f.Tag.Get("name")
		if _, ok := val.(bool); ok {
			out = append(out, flag)
			continue
		}
		out = append(out, flag, ShellWord(text(val, "")))
	}
	return out
}

// ShellWord quotes s for a POSIX shell unless it needs no quoting.
func ShellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=,:@", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
