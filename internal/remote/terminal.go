package remote

import (
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/internal/errs"
)

// Run Command runs a script to its end and hands its output back whole:
// there is no terminal on the other side and nothing streams. A docker
// command that needs one (a TTY, an interactive prompt) or never ends
// (following logs or events) is refused before anything is sent.

// dockerGlobalValue are docker's global options that take a value.
var dockerGlobalValue = []string{"--config", "-c", "--context", "-H", "--host", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey"}

// runBooleans are the options of docker run, create, exec and start that
// take no value; any other option of theirs is taken to take one, so that
// its value is not read as the image or container.
var runBooleans = []string{
	"-d", "--detach", "-i", "--interactive", "-t", "--tty", "--rm", "--privileged", "--init", "-P",
	"--publish-all", "--read-only", "--sig-proxy", "--no-healthcheck", "--oom-kill-disable", "-q", "--quiet",
	"-a", "--attach", "--disable-content-trust",
}

// CheckDocker refuses docker arguments that need a terminal or never end:
// the error (exit 2) points to `clusterctl shell`. stdinTTY says whether
// the operator's standard input is a terminal (then it is not sent, and
// -i has nothing to read).
func CheckDocker(args []string, stdinTTY bool) error {
	if len(args) == 0 {
		return errs.Usage("no docker command given: clusterctl docker -j CLUSTER -- ARGS..., e.g. -- node ls")
	}
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if slices.Contains(dockerGlobalValue, args[i]) {
			i++
		}
		i++
	}
	if i >= len(args) {
		return errs.Usage("no docker command among %q", strings.Join(args, " "))
	}
	cmd, rest := args[i], args[i+1:]
	if (cmd == "container" || cmd == "service" || cmd == "system") && len(rest) > 0 {
		cmd, rest = cmd+" "+rest[0], rest[1:]
	}
	refuse := func(why string) error {
		return errs.Usage("`docker %s` %s, and Run Command gives none: open a shell on a manager with `clusterctl shell -j CLUSTER` and run it there", strings.Join(args[i:], " "), why)
	}
	switch cmd {
	case "attach", "container attach":
		return refuse("needs a terminal")
	case "run", "container run", "exec", "container exec", "create", "container create", "start", "container start":
		tty, interactive := runFlags(rest)
		if tty {
			return refuse("asks for a terminal (-t)")
		}
		if interactive && stdinTTY && cmd != "create" && cmd != "container create" {
			return refuse("reads the terminal (-i with standard input a terminal)")
		}
	case "logs", "container logs", "service logs":
		if hasFlag(rest, "f", "--follow") {
			return refuse("follows the logs for ever (-f)")
		}
	case "events", "system events":
		if !hasFlag(rest, "", "--until") {
			return refuse("streams events for ever (without --until)")
		}
	case "stats", "container stats":
		if !hasFlag(rest, "", "--no-stream") {
			return refuse("streams for ever (without --no-stream)")
		}
	case "login":
		if !hasFlag(rest, "", "--password-stdin") && !hasFlag(rest, "p", "--password") {
			return refuse("prompts for a password (give --password-stdin)")
		}
	}
	return nil
}

// runFlags finds -t and -i among the options of run, create, exec or
// start, which end at the first word that is no option's value.
func runFlags(args []string) (tty, interactive bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return
		}
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case strings.HasPrefix(a, "--"):
			on := !hasValue || value != "false"
			switch name {
			case "--tty":
				tty = tty || on
			case "--interactive":
				interactive = interactive || on
			}
			if !hasValue && !slices.Contains(runBooleans, name) {
				i++ // its value
			}
		default:
			// A cluster of one-letter options, -dit; the last one may
			// take a value (-e X, -eX).
			for j, r := range a[1:] {
				o := "-" + string(r)
				switch o {
				case "-t":
					tty = true
				case "-i":
					interactive = true
				}
				if !slices.Contains(runBooleans, o) {
					if j == len(a)-2 {
						i++ // the value follows
					}
					break
				}
			}
		}
	}
	return
}

// hasFlag says whether args hold an option: its one letter alone or in
// a cluster (short, "" for none) or its long form, with or without a
// value; "--" ends the options.
func hasFlag(args []string, short, long string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == long || strings.HasPrefix(a, long+"=") && !strings.HasSuffix(a, "=false"):
			return true
		case short != "" && len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Contains(a[1:], short):
			return true
		}
	}
	return false
}

// shellWord quotes one word for a POSIX shell.
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=,:@%+", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
