// Command clusterctl runs container clusters on AWS with CloudFormation: one
// core stack plus independent agent-group stacks joined to it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/clusterctl/clusterctl/internal/awsx"
	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/iostreams"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], iostreams.System())
	stop()
	os.Exit(code)
}

// run parses args, runs the command and maps its error to an exit code.
// Every error reaches the user as one "clusterctl: ..." message.
func run(ctx context.Context, args []string, ios *iostreams.IO) (code int) {
	defer func() {
		// A bug must not reach the user as a Go stack trace.
		if r := recover(); r != nil {
			fmt.Fprintf(ios.ErrOut, "clusterctl: internal error: %v\n", r)
			code = errs.ExitFailed
		}
	}()
	var cli CLI
	defaults := newDefaultCluster(os.LookupEnv)
	parser, err := kong.New(&cli, append([]kong.Option{
		kong.Name("clusterctl"),
		kong.Description("Run container clusters on AWS with CloudFormation: one core stack, independent agent groups."),
		kong.Writers(ios.Out, ios.ErrOut),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Vars{"version": version},
		durationFlags(),
		kong.Resolvers(defaults),
	}, helpOptions()...)...)
	if err != nil {
		fmt.Fprintf(ios.ErrOut, "clusterctl: %v\n", err)
		return errs.ExitFailed
	}
	shapeModel(parser.Model.Node)
	// A shell asking for completions (see completion.go).
	if asked, err := completeLine(ctx, parser, ios.Out); asked {
		if err != nil {
			fmt.Fprintf(ios.ErrOut, "clusterctl: %v\n", err)
			return errs.ExitFailed
		}
		return errs.ExitOK
	}
	// A bare clusterctl: what it does and its commands, as help says it.
	if len(args) == 0 {
		kctx, err := kong.Trace(parser, nil)
		if err == nil {
			err = kctx.PrintUsage(false)
		}
		if err != nil {
			fmt.Fprintf(ios.ErrOut, "clusterctl: %v\n", err)
			return errs.ExitFailed
		}
		return errs.ExitOK
	}
	args = clusterFlagAfterCommand(parser.Model.Node, args)
	kctx, err := parser.Parse(args)
	if err := defaults.problem(); err != nil {
		fmt.Fprintf(ios.ErrOut, "clusterctl: %s\n", oneLine(err.Error()))
		return errs.ExitUsage
	}
	if err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			if msg := updateOnlyFlag(pe.Context, pe); msg != "" {
				fmt.Fprintf(ios.ErrOut, "clusterctl: %s\n", msg)
				return errs.ExitUsage
			}
			if hint := commandSynonym(pe); hint != "" {
				fmt.Fprintf(ios.ErrOut, "clusterctl: %s\n", hint)
				return errs.ExitUsage
			}
			if moved := noClusterFlag(pe); moved != "" {
				fmt.Fprintf(ios.ErrOut, "clusterctl: %s\n", moved)
				return errs.ExitUsage
			}
			fmt.Fprintf(ios.ErrOut, "clusterctl: %s%s\n", oneLine(parseMessage(pe)), argumentHint(pe, args))
			return errs.ExitUsage
		}
		fmt.Fprintf(ios.ErrOut, "clusterctl: %s\n", oneLine(err.Error()))
		return errs.ExitCode(err)
	}
	if msg := repeatedFlag(kctx, args); msg != "" {
		fmt.Fprintf(ios.ErrOut, "clusterctl: %s\n", msg)
		return errs.ExitUsage
	}
	if msg := updateOnlyFlag(kctx, nil); msg != "" {
		fmt.Fprintf(ios.ErrOut, "clusterctl: %s\n", msg)
		return errs.ExitUsage
	}
	if note := defaults.note(); note != "" {
		fmt.Fprintln(ios.ErrOut, note)
	}
	app := newApp(ctx, ios, &cli.Globals, args)
	app.defaults = defaults
	err = kctx.Run(app)
	if err != nil && app.svc != nil {
		// A cluster or group not found: the close name, if one is live.
		err = cluster.NewFinder(app.svc).Suggest(app.Context(), err)
	}
	app.finish()
	if err != nil {
		code := errs.ExitCode(err)
		if errs.Silent(err) {
			return code
		}
		fmt.Fprintf(ios.ErrOut, "clusterctl: %s\n", message(err))
		return code
	}
	return errs.ExitOK
}

// message is the text the user sees for a command's error. An endpoint
// that could not be reached or did not answer is the whole story of the
// first line (the SDK's wrapping is noise); the lines after it, which say
// what state a command left and how to resume, are kept.
func message(err error) string {
	text := errs.Message(err)
	if line, ok := awsx.NotAWS(err); ok {
		if _, rest, found := strings.Cut(text, "\n"); found {
			return line + "\n" + rest
		}
		return line
	}
	e, ok := awsx.Unreachable(err)
	if !ok {
		return text
	}
	if _, rest, found := strings.Cut(text, "\n"); found {
		return e.Error() + "\n" + rest
	}
	return e.Error()
}

// parseMessage is kong's message for a command line it refused, but for a
// missing -j: the one line every command says then (missingCluster), with
// the other flags missing after it.
func parseMessage(pe *kong.ParseError) string {
	text := pe.Error()
	list, ok := strings.CutPrefix(text, "missing flags: ")
	if !ok || pe.Context == nil || pe.Context.Selected() == nil {
		return text
	}
	var others []string
	found := false
	for _, f := range strings.Split(list, ", ") {
		if strings.HasPrefix(f, "-j/--cluster") || strings.HasPrefix(f, "--cluster=") {
			found = true
			continue
		}
		others = append(others, f)
	}
	if !found {
		return text
	}
	msg := missingCluster(pe.Context.Selected().FullPath()).Error()
	if len(others) > 0 {
		msg += "; missing flags too: " + strings.Join(others, ", ")
	}
	return msg
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// argumentHint says, after kong's "unexpected argument X", which flag X
// belongs to, given the command it was typed to: a cluster file is -f, a
// cluster -j where the command takes no cluster argument, a group -n; with
// the command line corrected.
func argumentHint(pe *kong.ParseError, args []string) string {
	word, ok := strings.CutPrefix(pe.Error(), "unexpected argument ")
	if !ok || pe.Context == nil {
		return ""
	}
	cmd := pe.Context.Selected()
	if cmd == nil {
		return ""
	}
	flags := map[string]bool{}
	for _, group := range cmd.AllFlags(true) {
		for _, f := range group {
			flags[f.Name] = true
		}
	}
	clusterArg := false
	for _, p := range cmd.Positional {
		clusterArg = clusterArg || p.Name == "name" || p.Name == "cluster"
	}
	// A cluster given with -j already: the word is the group.
	clusterGiven := slices.ContainsFunc(args, func(a string) bool {
		return a == "-j" || strings.HasPrefix(a, "-j=") || a == "--join" || strings.HasPrefix(a, "--join=") || a == "--cluster" || strings.HasPrefix(a, "--cluster=")
	})
	var flag, what string
	switch {
	case flags["file"]:
		flag, what = "-f", "the cluster file"
	case flags["cluster"] && !clusterArg && !clusterGiven:
		flag, what = "-j", "the cluster"
	case flags["name"]:
		flag, what = "-n", "the group"
	default:
		return ""
	}
	// The command's own words come first (FullPath starts with the
	// program's name); the word is after them. A cluster is the first word
	// typed, the one kong took for the command's argument when it takes
	// one that may be left out (logs core web: core is the cluster, web
	// the service).
	at := slices.Index(args[min(len(strings.Fields(cmd.FullPath()))-1, len(args)):], word)
	if at >= 0 {
		at += len(strings.Fields(cmd.FullPath())) - 1
	}
	if flag == "-j" && len(cmd.Positional) > 0 && !slices.ContainsFunc(cmd.Positional, func(p *kong.Positional) bool { return p.Required }) {
		at = firstWord(cmd, args)
	}
	if at < 0 {
		return ""
	}
	fixed := slices.Concat(args[:at], []string{flag}, args[at:])
	return fmt.Sprintf(": %s is given with %s (clusterctl %s)", what, flag, commandLine(fixed))
}

// firstWord is the index in args of the first word after cmd's own words
// that is neither a flag nor a flag's value; -1 if none.
func firstWord(cmd *kong.Node, args []string) int {
	takesValue := map[string]bool{}
	for _, group := range cmd.AllFlags(true) {
		for _, f := range group {
			if f.Value.IsBool() || f.IsCounter() {
				continue
			}
			takesValue["--"+f.Name] = true
			for _, a := range f.Aliases {
				takesValue["--"+a] = true
			}
			if f.Short != 0 {
				takesValue["-"+string(f.Short)] = true
			}
		}
	}
	for i := len(strings.Fields(cmd.FullPath())) - 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return -1
		case strings.HasPrefix(a, "-"):
			if takesValue[a] {
				i++
			}
		default:
			return i
		}
	}
	return -1
}

// repeatedFlag refuses a flag of one value given twice (-c 2 -c 3): kong
// would keep the last silently. Flags that take several values (-m, --tags)
// may repeat.
func repeatedFlag(kctx *kong.Context, args []string) string {
	for _, f := range kctx.Flags() {
		if !f.Set || f.IsSlice() || f.IsMap() || f.IsCounter() {
			continue
		}
		spellings := []string{"--" + f.Name}
		for _, a := range f.Aliases {
			spellings = append(spellings, "--"+a)
		}
		if f.Short != 0 {
			spellings = append(spellings, "-"+string(f.Short))
		}
		if f.Value.IsBool() {
			spellings = append(spellings, "--no-"+f.Name)
		}
		var given []string
		for i, a := range args {
			if a == "--" {
				break
			}
			name, _, hasValue := strings.Cut(a, "=")
			if !slices.Contains(spellings, name) {
				continue
			}
			if !hasValue && !f.Value.IsBool() && i+1 < len(args) {
				a += " " + args[i+1]
			}
			given = append(given, a)
		}
		if len(given) > 1 {
			flag := "--" + f.Name
			if f.Short != 0 {
				flag = "-" + string(f.Short) + "/" + flag
			}
			return fmt.Sprintf("%s given %d times (%s): give it once", flag, len(given), strings.Join(given, ", "))
		}
	}
	return ""
}
