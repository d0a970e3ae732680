package main

import (
	"errors"

	"github.com/alecthomas/kong"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// The flag commands fill the settings of internal/spec straight from their
// flags (spec.Core and spec.Group are embedded in the command structs) and
// run the same defaults and validation as a cluster file. Errors name the
// setting by its path; for flag input this is where a path becomes the
// flag that gave it.

// coreInput completes and checks a core given by flags, before any AWS call.
func coreInput(name string, core *spec.Core) error {
	if err := checkCluster(name, ""); err != nil {
		return err
	}
	return flagError(core.Complete(), core)
}

// groupInput completes and checks a group given by flags, before any AWS
// call; clusterFlag names the flag that gave the cluster.
func groupInput(clusterName, clusterFlag string, g *spec.Group) error {
	if err := checkCluster(clusterName, clusterFlag); err != nil {
		return err
	}
	return flagError(g.Complete(clusterName), g)
}

// checkCluster checks a cluster name given by flag (or, flag "", as an
// argument).
func checkCluster(name, flag string) error {
	err := spec.CheckClusterName(name)
	var fe *spec.FieldError
	switch {
	case !errors.As(err, &fe):
		return err
	case flag == "":
		return errs.Usage("%s", fe.Msg)
	}
	return errs.Usage("%s: %s", flag, fe.Msg)
}

// checkNames checks, each when given, a cluster name (given by
// clusterFlag, or "" for an argument) and a group name given by -n. The
// control node's group passes: inventory lists it.
func checkNames(cluster, clusterFlag, group string) error {
	if cluster != "" {
		if err := checkCluster(cluster, clusterFlag); err != nil {
			return err
		}
	}
	if group == "" || group == names.GroupControl {
		return nil
	}
	return flagError(spec.CheckGroupName(cluster, group), &spec.Group{})
}

// flagError names, in a spec.FieldError about settings (a *spec.Core or
// *spec.Group filled by flags), the flag of the setting at fault.
func flagError(err error, settings any) error {
	var fe *spec.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	flag := spec.FlagFor(settings, fe.Path)
	switch {
	case flag == "":
		return errs.Usage("%s", fe.Msg) // the message names what it is about
	case fe.Missing:
		return errs.Usage("missing flags: %s", flag)
	}
	return errs.Usage("%s: %s", flag, fe.Msg)
}

// given returns the paths of the settings in v (a *spec.Core or
// *spec.Group embedded in the command) whose flags were given.
func given(kctx *kong.Context, v any) []string {
	set := map[uintptr]bool{}
	for _, f := range kctx.Flags() {
		if f.Set && f.Target.CanAddr() {
			set[f.Target.UnsafeAddr()] = true
		}
	}
	var out []string
	for _, f := range spec.Fields(v) {
		if f.Value.CanAddr() && set[f.Value.UnsafeAddr()] {
			out = append(out, f.Path)
		}
	}
	return out
}

// ClusterFlag is -j/--cluster (also --cluster) on the commands that name
// their cluster as an argument, so that the form every other command
// takes works there too.
type ClusterFlag struct {
	Join string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" help:"The cluster, as the argument names it."`
}

// into settles the cluster of a command whose argument is *arg: the
// argument or -j, the same when both are given. required: one of them
// must be.
func (f ClusterFlag) into(arg *string, command string, required bool) error {
	switch {
	case f.Join == "":
	case *arg == "":
		*arg = f.Join
	case *arg != f.Join:
		return errs.Usage("the cluster is given twice, as %s and -j %s: give it once (clusterctl %s NAME)", *arg, f.Join, command)
	}
	if *arg == "" && required {
		return missingCluster("clusterctl " + command)
	}
	return nil
}

// missingCluster is the one line every command says when no cluster was
// given, whether it takes the cluster as an argument or by -j only.
func missingCluster(commandPath string) error {
	return errs.Usage("which cluster? %s -j NAME (clusterctl list-clusters lists them)", commandPath)
}
