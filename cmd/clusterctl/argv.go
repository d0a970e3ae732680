package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/clusterctl/clusterctl/internal/spec"
)

// isClusterFlag tells whether name (without "=value") is one of the
// cluster flag's spellings.
func isClusterFlag(name string) bool {
	return name == "-j" || name == "--cluster" || name == "--join"
}

// clusterFlagAfterCommand moves a cluster flag typed before the command
// (clusterctl -j prod list-nodes, as kubectl -n and gh -R are typed) to
// right after the command's words (list-nodes -j prod), where kong takes
// it: each command has its own -j, with its own help. Right after the
// command, not at the end, so that a command passing its arguments on
// (docker) does not take it for one of them. The line is unchanged when
// no command follows the flag: kong then says what is wrong.
func clusterFlagAfterCommand(root *kong.Node, args []string) []string {
	takesValue := map[string]bool{}
	for _, f := range root.Flags {
		if f.Value.IsBool() || f.IsCounter() {
			continue
		}
		takesValue["--"+f.Name] = true
		if f.Short != 0 {
			takesValue["-"+string(f.Short)] = true
		}
	}
	var moved, before []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(a, "=")
		switch {
		case a == "--":
			return args
		case isClusterFlag(name):
			if !hasValue {
				if i+1 >= len(args) {
					return args
				}
				moved = append(moved, a, args[i+1])
				i++
				continue
			}
			moved = append(moved, a)
		case strings.HasPrefix(a, "-"):
			before = append(before, a)
			if !hasValue && takesValue[name] && i+1 < len(args) {
				before = append(before, args[i+1])
				i++
			}
		default:
			if len(moved) == 0 {
				return args
			}
			// The command's words: a command, then its subcommands.
			end, node := i, root
			for end < len(args) {
				child := childNamed(node, args[end])
				if child == nil {
					break
				}
				node, end = child, end+1
			}
			if end == i {
				return args
			}
			return slices.Concat(before, args[i:end], moved, args[end:])
		}
	}
	return args
}

// childNamed is the subcommand of n that word names, nil if none.
func childNamed(n *kong.Node, word string) *kong.Node {
	for _, c := range n.Children {
		if c.Name == word || slices.Contains(c.Aliases, word) {
			return c
		}
	}
	return nil
}

// shapeModel makes kong's model of the commands what help shows and the
// parser takes: -j first, the update-only flags off the commands that
// make a group.
func shapeModel(root *kong.Node) {
	clusterFlagFirstInHelp(root)
	hideUpdateOnly(root)
}

// clusterFlagFirstInHelp puts each command's cluster flag first among
// its flags, where help lists it: a command's settings (embedded from
// internal/spec) would otherwise come before it, and the flag every
// command takes would be the last one read.
func clusterFlagFirstInHelp(n *kong.Node) {
	if at := slices.IndexFunc(n.Flags, func(f *kong.Flag) bool { return f.Name == "cluster" }); at > 0 {
		f := n.Flags[at]
		n.Flags = slices.Insert(slices.Delete(n.Flags, at, at+1), 0, f)
	}
	for _, c := range n.Children {
		clusterFlagFirstInHelp(c)
	}
}

// createsGroup are the commands that make (or render) a new group from
// the group settings they share with update-group: there, turning a
// setting off, or the load balancer away, means nothing; it is the
// default already.
var createsGroup = []string{"add-agents", "render group", "render node-config"}

// updateOnly are the flags of the group settings that only change a
// group: on a command of createsGroup they are neither shown nor taken.
// Each says what the new group has without it.
var updateOnly = map[string]string{
	"--no-spot":      "a new group is on-demand unless --spot",
	"--no-autoscale": "a new group keeps a fixed count unless --autoscale",
	`--publish ""`:   "a new group has no load balancer unless --publish PORT",
}

// hideUpdateOnly removes from the commands of createsGroup the negated
// forms of --spot and --autoscale, and their help's mention of them and
// of --publish "".
func hideUpdateOnly(root *kong.Node) {
	for _, path := range createsGroup {
		n := root
		for _, w := range strings.Fields(path) {
			if n = childNamed(n, w); n == nil {
				break
			}
		}
		if n == nil {
			continue
		}
		for _, f := range n.Flags {
			switch f.Name {
			case "spot", "autoscale":
				f.Tag.Negatable = ""
				f.Help = withoutAside(f.Help, "(--no-"+f.Name)
			case "publish":
				f.Help = withoutAside(f.Help, `(--publish ""`)
			}
		}
	}
}

// withoutAside removes from help the parenthesis that starts with prefix.
func withoutAside(help, prefix string) string {
	at := strings.Index(help, " "+prefix)
	if at < 0 {
		return help
	}
	end := strings.Index(help[at:], ")")
	if end < 0 {
		return help
	}
	return help[:at] + help[at+end+1:]
}

// updateOnlyFlag is the line for a flag of updateOnly given to a command
// of createsGroup: kong's unknown --no-spot or --no-autoscale (their
// negation is removed there), or a --publish given empty; "" otherwise.
func updateOnlyFlag(kctx *kong.Context, parseErr error) string {
	if kctx == nil || !slices.Contains(createsGroup, commandPath(kctx.Selected())) {
		return ""
	}
	flag := ""
	if parseErr != nil {
		rest, ok := strings.CutPrefix(parseErr.Error(), "unknown flag ")
		if !ok {
			return ""
		}
		flag, _, _ = strings.Cut(rest, ",")
		flag, _, _ = strings.Cut(flag, "=")
	} else {
		for _, f := range kctx.Flags() {
			if p, ok := kctx.FlagValue(f).(spec.Ports); ok && f.Name == "publish" && f.Set && len(p) == 0 {
				flag = `--publish ""`
			}
		}
	}
	why, ok := updateOnly[flag]
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s is for update-group, which changes a group: %s", flag, why)
}

// noClusterFlag is the line for a cluster flag given to a command that
// takes none (list-clusters, version), before it or after it; "" for any
// other error.
func noClusterFlag(pe *kong.ParseError) string {
	rest, ok := strings.CutPrefix(pe.Error(), "unknown flag ")
	if !ok || pe.Context == nil || pe.Context.Selected() == nil {
		return ""
	}
	flag, _, _ := strings.Cut(rest, ",")
	flag, _, _ = strings.Cut(flag, "=")
	if !isClusterFlag(flag) {
		return ""
	}
	return fmt.Sprintf("%s takes no cluster (%s): it does not act on one cluster", commandPath(pe.Context.Selected()), flag)
}
