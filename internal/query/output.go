package query

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/itchyny/gojq"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	yaml "go.yaml.in/yaml/v4"
)

// Table is the table form of a result: the wide form adds columns.
type Table struct {
	Header []string
	Rows   [][]string
}

// KVTable is the table form of a map: one row per key, sorted.
func KVTable(m map[string]string, keyHeader, valueHeader string) Table {
	t := Table{Header: []string{keyHeader, valueHeader}}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		t.Rows = append(t.Rows, []string{k, m[k]})
	}
	return t
}

// Output writes results in the format the operator chose (-o) after an
// optional jq filter (--query) on their JSON form.
type Output struct {
	Format string
	// Width is what the default table must fit (see Fit); 0: no limit.
	// -o wide is never cut.
	Width int
	query *gojq.Code
}

// Formats are the values -o takes.
func Formats() []string { return []string{"table", "wide", "json", "yaml"} }

// NewOutput checks the format and compiles the query before any AWS call, so
// bad input costs nothing.
func NewOutput(format, query string) (*Output, error) {
	format = strings.ToLower(format)
	if !slices.Contains(Formats(), format) {
		return nil, fmt.Errorf("invalid output format %q: expected table, wide, json or yaml", format)
	}
	o := &Output{Format: format}
	if query != "" {
		q, err := gojq.Parse(query)
		if err != nil {
			return nil, fmt.Errorf("invalid --query %q: %s", query, oneLine(err.Error()))
		}
		code, err := gojq.Compile(q)
		if err != nil {
			return nil, fmt.Errorf("invalid --query %q: %s", query, oneLine(err.Error()))
		}
		o.query = code
	}
	return o, nil
}

// TableForm tells whether Write prints the table form: table or wide
// output and no query.
func (o *Output) TableForm() bool {
	return o.query == nil && (o.Format == "table" || o.Format == "wide")
}

// Write prints v. table builds the table form (wide selects the wide columns);
// it is only called for table output without a query.
func (o *Output) Write(w io.Writer, v any, table func(wide bool) Table) error {
	if o.TableForm() {
		if o.Format == "wide" {
			return WriteTable(w, table(true))
		}
		return WriteTable(w, Fit(table(false), o.Width))
	}
	generic, err := toGeneric(v)
	if err != nil {
		return err
	}
	results := []any{generic}
	if o.query != nil {
		results, err = runQuery(o.query, generic)
		if err != nil {
			return err
		}
	}
	for i, r := range results {
		if i > 0 && o.Format == "yaml" {
			// Several results are several documents, so the stream stays
			// valid YAML; a single one needs no separator.
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if err := o.writeValue(w, r); err != nil {
			return err
		}
	}
	return nil
}

func (o *Output) writeValue(w io.Writer, v any) error {
	switch o.Format {
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding YAML: %w", err)
		}
		_, err = w.Write(b)
		return err
	case "json":
		return writeJSON(w, v)
	default:
		// Like jq -r: strings raw, everything else as JSON.
		if s, ok := v.(string); ok {
			_, err := fmt.Fprintln(w, s)
			return err
		}
		return writeJSON(w, v)
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	return nil
}

// toGeneric turns a typed result into plain maps and slices, the JSON form
// that --query sees.
func toGeneric(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding JSON: %w", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decoding JSON: %w", err)
	}
	return out, nil
}

func runQuery(code *gojq.Code, v any) ([]any, error) {
	var out []any
	iter := code.Run(v)
	for {
		r, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if err, ok := r.(error); ok {
			if h, ok := err.(*gojq.HaltError); ok && h.Value() == nil {
				return out, nil
			}
			return nil, fmt.Errorf("running --query: %w", err)
		}
		out = append(out, r)
	}
}

// WriteTable prints aligned columns without borders (kubectl style).
func WriteTable(w io.Writer, t Table) error {
	var buf bytes.Buffer
	tbl := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Settings: tw.Settings{
				Separators: tw.Separators{ShowHeader: tw.Off, ShowFooter: tw.Off, BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowTop: tw.Off, ShowBottom: tw.Off, ShowHeaderLine: tw.Off, ShowFooterLine: tw.Off},
			},
		})),
		tablewriter.WithConfig(tablewriter.Config{
			Header: tw.CellConfig{
				Alignment:  tw.CellAlignment{Global: tw.AlignLeft},
				Formatting: tw.CellFormatting{AutoFormat: tw.Off},
				Padding:    tw.CellPadding{Global: tw.Padding{Left: "", Right: "   "}},
			},
			Row: tw.CellConfig{
				Alignment:  tw.CellAlignment{Global: tw.AlignLeft},
				Formatting: tw.CellFormatting{AutoWrap: tw.WrapNone},
				Padding:    tw.CellPadding{Global: tw.Padding{Left: "", Right: "   "}},
			},
		}),
	)
	tbl.Header(cells(t.Header))
	for _, r := range t.Rows {
		if err := tbl.Append(cells(r)); err != nil {
			return fmt.Errorf("writing table: %w", err)
		}
	}
	if err := tbl.Render(); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	// The column padding leaves trailing blanks that only get in the way of diff and grep.
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// cells makes each cell of a row Printable.
func cells(row []string) []string {
	out := make([]string, len(row))
	for i, c := range row {
		out[i] = Printable(c)
	}
	return out
}

// Printable is text from elsewhere (the swarm, a node, a tag) as it may
// reach a terminal: control characters (terminal escape sequences among
// them), invisible format characters (bidi overrides, zero-width ones)
// and bytes that are not UTF-8 are written as Go escapes (\x1b, \u202e,
// \xff), so that a cell can neither drive the terminal nor pass for other
// text or rows. JSON and YAML keep the data as it is.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if escaped(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r < 0x80 && escaped(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		case r <= 0xffff && escaped(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		case escaped(r):
			fmt.Fprintf(&b, "\\U%08x", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// escaped tells whether Printable writes r as an escape.
func escaped(r rune) bool {
	return r == utf8.RuneError || unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r)
}

// Plural counts a noun: "1 subnet", "2 subnets".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// WriteEach prints one item of a stream of results (log events): under
// -o json one compact line per result, so that the stream is JSON Lines;
// under -o yaml one document per result. The table form is the caller's.
func (o *Output) WriteEach(w io.Writer, v any) error {
	generic, err := toGeneric(v)
	if err != nil {
		return err
	}
	results := []any{generic}
	if o.query != nil {
		if results, err = runQuery(o.query, generic); err != nil {
			return err
		}
	}
	for _, r := range results {
		switch {
		case o.Format == "yaml":
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
			if err := o.writeValue(w, r); err != nil {
				return err
			}
		case o.Format != "json":
			if err := o.writeValue(w, r); err != nil {
				return err
			}
		default:
			b, err := json.Marshal(r)
			if err != nil {
				return fmt.Errorf("encoding JSON: %w", err)
			}
			if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
				return err
			}
		}
	}
	return nil
}
