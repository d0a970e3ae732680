package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/aws/smithy-go"
	kongcompletion "github.com/jotaen/kong-completion"
	"github.com/posener/complete"

	"github.com/clusterctl/clusterctl/internal/awsapi"
	"github.com/clusterctl/clusterctl/internal/awsx"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// CompletionCmd is `clusterctl completion bash|zsh|fish`.
type CompletionCmd struct {
	Shell string `arg:"" optional:"" predictor:"shell" help:"The shell: bash, zsh or fish."`
}

func (c *CompletionCmd) Run(kctx *kong.Context, app *App) error {
	if err := app.textOnly("completion"); err != nil {
		return err
	}
	if !slices.Contains(shells, c.Shell) {
		return errs.Usage("%s", whichShell(c.Shell, os.Getenv("SHELL")))
	}
	// The script calls this very binary back, so it does not depend on PATH.
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.Abs(bin)
	}
	if err != nil {
		return fmt.Errorf("locating the clusterctl binary: %w", err)
	}
	_, err = io.WriteString(app.IO.Out, completionScript(c.Shell, kctx.Model.Name, bin))
	return err
}

// shells are those completion has a script for.
var shells = []string{"bash", "zsh", "fish"}

// whichShell is the line for a completion asked without its shell: how to
// load it, for the login shell when it is one of those supported.
func whichShell(given, loginShell string) string {
	msg := "which shell? clusterctl completion bash, zsh or fish"
	if given != "" {
		msg = fmt.Sprintf("no completion for shell %q: clusterctl completion bash, zsh or fish", given)
	}
	switch sh := filepath.Base(loginShell); sh {
	case "bash", "zsh":
		msg += fmt.Sprintf(" (for your %s: source <(clusterctl completion %s))", sh, sh)
	case "fish":
		msg += " (for your fish: clusterctl completion fish | source)"
	}
	return msg
}

// completionScript registers bin as the completer of name. Each shell hands
// the command line to bin in COMP_LINE (bash and zsh natively through
// `complete -C`, fish through a function) and offers what it prints.
func completionScript(shell, name, bin string) string {
	q := shellQuote(bin)
	switch shell {
	case "zsh":
		// Native zsh completion, for the descriptions: the binary answers
		// "word:description" lines when describeEnv is set.
		return fmt.Sprintf(`# %[1]s completion for zsh: source <(%[1]s completion zsh)
(( $+functions[compdef] )) || { autoload -U +X compinit && compinit; }
_%[1]s() {
    local -a candidates
    candidates=("${(@f)$(COMP_LINE="${(j: :)words[1,CURRENT]}" %[3]s=1 %[2]s 2>/dev/null)}")
    candidates=("${(@)candidates:#}")
    if (( ${#candidates} )); then
        _describe -t values %[1]s candidates
    else
        _files
    fi
}
compdef _%[1]s %[1]s
`, name, q, describeEnv)
	case "fish":
		return fmt.Sprintf(`# %[1]s completion for fish: %[1]s completion fish | source
function __%[1]s_complete
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    %[2]s
end
complete -f -c %[1]s -a "(__%[1]s_complete)"
`, name, q)
	}
	return fmt.Sprintf(`# %[1]s completion for bash: source <(%[1]s completion bash)
complete -o default -o bashdefault -C %[2]s %[1]s
`, name, q)
}

// shellQuote quotes s for bash, zsh and fish alike.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// namesTimeout bounds the AWS call behind name completion: a shell waiting
// on a tab key must not hang on an unreachable endpoint. timeoutEnv sets
// another bound (a Go duration, as "5s"), for a slow link or a loaded
// machine.
const (
	namesTimeout = 2 * time.Second
	timeoutEnv   = "CLUSTERCTL_COMPLETION_TIMEOUT"
)

// completionTimeout is the bound timeoutEnv's value v sets: namesTimeout
// unless v is a positive duration. A completion says nothing, so a bad
// value is not an error.
func completionTimeout(v string) time.Duration {
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d
	}
	return namesTimeout
}

// completeLine answers a completion request: the shell scripts above pass
// the command line in COMP_LINE (and the cursor in COMP_POINT), the
// protocol of `complete -C`. Commands and flags come from kong's model,
// cluster and group names from the account. It reports whether there was a
// request.
func completeLine(ctx context.Context, parser *kong.Kong, w io.Writer) (bool, error) {
	line := os.Getenv("COMP_LINE")
	if line == "" {
		return false, nil
	}
	names := &nameSource{ctx: ctx, line: strings.Fields(line), timeout: completionTimeout(os.Getenv(timeoutEnv))}
	var commands []string
	for _, n := range parser.Model.Children {
		commands = append(commands, n.Name)
	}
	cmd, err := kongcompletion.Command(parser,
		kongcompletion.WithPredictor("command", complete.PredictSet(commands...)),
		kongcompletion.WithPredictor("cluster", complete.PredictFunc(names.clusters)),
		kongcompletion.WithPredictor("group", complete.PredictFunc(names.groups(valueFlags(parser.Model.Node), false))),
		kongcompletion.WithPredictor("node-group", complete.PredictFunc(names.groups(valueFlags(parser.Model.Node), true))),
		kongcompletion.WithPredictor("shell", complete.PredictSet(shells...)),
		kongcompletion.WithPredictor("output", complete.PredictSet(query.Formats()...)),
		kongcompletion.WithPredictor("spot-allocation", complete.PredictSet(spec.SpotAllocations()...)),
	)
	if err != nil {
		return true, fmt.Errorf("completion: %w", err)
	}
	withGlobalFlags(cmd, parser.Model.Node.Flags)
	c := complete.New(parser.Model.Name, cmd)
	if os.Getenv(describeEnv) == "" {
		c.Out = w
		c.Complete()
		return true, nil
	}
	var words strings.Builder
	c.Out = &words
	c.Complete()
	described := descriptions(parser.Model.Node, strings.Fields(line))
	for _, word := range strings.Fields(words.String()) {
		entry := strings.ReplaceAll(word, ":", `\:`)
		if d := described[word]; d != "" {
			entry += ":" + d
		}
		fmt.Fprintln(w, entry)
	}
	return true, nil
}

// describeEnv asks completeLine for "word:description" lines, the form
// zsh's _describe takes, rather than words alone.
const describeEnv = "CLUSTERCTL_COMPLETE_DESCRIBE"

// descriptions are the one-line helps of what may be offered after the
// words of a command line: the subcommands of the command the words name,
// and its flags and those of the commands above it.
func descriptions(root *kong.Node, words []string) map[string]string {
	node := root
	for _, w := range words[min(1, len(words)):] {
		for _, c := range node.Children {
			if c.Name == w || slices.Contains(c.Aliases, w) {
				node = c
				break
			}
		}
	}
	out := map[string]string{}
	for _, c := range node.Children {
		out[c.Name] = firstSentence(c.Help)
	}
	for n := node; n != nil; n = n.Parent {
		for _, f := range n.Flags {
			d := firstSentence(f.Help)
			for _, name := range append([]string{f.Name}, f.Aliases...) {
				out["--"+name] = d
			}
			if f.Short != 0 {
				out["-"+string(f.Short)] = d
			}
		}
	}
	return out
}

// firstSentence shortens a help text to what fits beside a completion.
func firstSentence(help string) string {
	if i := strings.Index(help, ". "); i >= 0 {
		help = help[:i]
	}
	help = strings.TrimSuffix(strings.Join(strings.Fields(help), " "), ".")
	if r := []rune(help); len(r) > 70 {
		help = string(r[:69]) + "…"
	}
	return help
}

// withGlobalFlags tells each command's argument predictor about the global
// flags too, so that in `describe --region eu-west-1 <TAB>` the region is
// not taken for the CLUSTER argument.
func withGlobalFlags(cmd complete.Command, globals []*kong.Flag) {
	for _, sub := range cmd.Sub {
		if pp, ok := sub.Args.(*kongcompletion.PositionalPredictor); ok {
			for _, f := range globals {
				names := []string{"--" + f.Name}
				if f.Short != 0 {
					names = append(names, "-"+string(f.Short))
				}
				if f.Value.IsBool() {
					pp.BoolFlags = append(pp.BoolFlags, names...)
				} else {
					pp.ArgFlags = append(pp.ArgFlags, names...)
				}
			}
		}
		withGlobalFlags(sub, globals)
	}
}

// nameSource reads cluster and group names once per completion request,
// with the --region, --profile and --endpoint-url given on the line. Any
// failure (no credentials, no network) offers no names, silently.
type nameSource struct {
	ctx     context.Context
	line    []string
	timeout time.Duration
	loaded  bool
	names   query.Names
}

func (n *nameSource) load() query.Names {
	if n.loaded {
		return n.names
	}
	n.loaded = true
	ctx, cancel := context.WithTimeout(n.ctx, n.timeout)
	defer cancel()
	opts := awsx.Options{
		Region: flagOnLine(n.line, "--region"), Profile: flagOnLine(n.line, "--profile"), EndpointURL: flagOnLine(n.line, "--endpoint-url"),
		MaxAttempts: 1,
	}
	cfg, _, err := awsx.Load(ctx, opts)
	if err != nil {
		return n.names
	}
	cfn := awsapi.NewCloudFormation(cfg)
	names, err := query.ListNames(ctx, cfn)
	var cut *smithy.DeserializationError
	if errors.As(err, &cut) && ctx.Err() == nil {
		// An answer cut off after its headers is asked once more, within
		// the same bound: completion makes one attempt, so that an
		// unreachable endpoint costs nothing, and a refused or unreachable
		// endpoint is not asked again.
		names, err = query.ListNames(ctx, cfn)
	}
	if err == nil {
		n.names = names
	}
	return n.names
}

func (n *nameSource) clusters(complete.Args) []string { return n.load().Clusters }

// groups offers the groups of the cluster named on the line (-j or the
// command's CLUSTER argument), else of every cluster, plus the control
// node's group when withControl; valueFlags tells which flags take a
// value, so that a flag's value is not taken for the cluster.
func (n *nameSource) groups(valueFlags map[string]bool, withControl bool) func(complete.Args) []string {
	return func(a complete.Args) []string {
		known := n.load()
		var out []string
		if withControl {
			out = append(out, names.GroupControl)
		}
		if c := clusterOnLine(a.Completed, valueFlags); c != "" {
			return append(out, known.Groups[c]...)
		}
		for _, gs := range known.Groups {
			out = append(out, gs...)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
}

// clusterOnLine finds the cluster among a command's words: the value of
// -j/--cluster, else the first word that is neither a flag nor a flag's value.
func clusterOnLine(words []string, valueFlags map[string]bool) string {
	if c := flagOnLine(words, "--join", "-j"); c != "" {
		return c
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case strings.HasPrefix(w, "-"):
			if valueFlags[w] {
				i++ // skip its value
			}
		case w != "":
			return w
		}
	}
	return ""
}

// flagOnLine returns the value given to a flag (any of its names) on the
// line, as "--flag value" or "--flag=value"; "" when absent.
func flagOnLine(words []string, names ...string) string {
	for i, w := range words {
		for _, name := range names {
			if v, ok := strings.CutPrefix(w, name+"="); ok {
				return v
			}
			if w == name && i+1 < len(words) {
				return words[i+1]
			}
		}
	}
	return ""
}

// valueFlags lists every flag of the command tree that takes a value, by
// each of its names (--name, -n).
func valueFlags(root *kong.Node) map[string]bool {
	out := map[string]bool{}
	var walk func(*kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			if f.Value.IsBool() {
				continue
			}
			out["--"+f.Name] = true
			if f.Short != 0 {
				out["-"+string(f.Short)] = true
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(root)
	return out
}
