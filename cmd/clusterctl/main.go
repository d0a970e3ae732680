// Command clusterctl runs container clusters on AWS with CloudFormation: one
// core stack plus independent agent-group stacks joined to it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/clusterctl/clusterctl/internal/awsx"
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
	parser, err := kong.New(&cli,
		kong.Name("clusterctl"),
		kong.Description("Run container clusters on AWS with CloudFormation: one core stack, independent agent groups."),
		kong.Writers(ios.Out, ios.ErrOut),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Vars{"version": version},
	)
	if err != nil {
		fmt.Fprintf(ios.ErrOut, "clusterctl: %v\n", err)
		return errs.ExitFailed
	}
	// A shell asking for completions (see completion.go).
	if asked, err := completeLine(ctx, parser, ios.Out); asked {
		if err != nil {
			fmt.Fprintf(ios.ErrOut, "clusterctl: %v\n", err)
			return errs.ExitFailed
		}
		return errs.ExitOK
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			fmt.Fprintf(ios.ErrOut, "clusterctl: %s\n", oneLine(err.Error()))
			return errs.ExitUsage
		}
		fmt.Fprintf(ios.ErrOut, "clusterctl: %s\n", oneLine(err.Error()))
		return errs.ExitCode(err)
	}
	app := newApp(ctx, ios, &cli.Globals, args)
	err = kctx.Run(app)
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
	e, ok := awsx.Unreachable(err)
	if !ok {
		return text
	}
	if _, rest, found := strings.Cut(text, "\n"); found {
		return e.Error() + "\n" + rest
	}
	return e.Error()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
