package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// Every command that takes a cluster by flag takes it as -j, --join and
// --cluster alike: a user who guessed either is never told the flag is
// unknown.
func TestEveryJoinFlagIsAlsoCluster(t *testing.T) {
	var walk func(n *kong.Node)
	seen := 0
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			if f.Name != "join" {
				continue
			}
			seen++
			if f.Short != 'j' || !slices.Contains(f.Aliases, "cluster") {
				t.Errorf("%s: --join is not also -j and --cluster", strings.TrimSpace(n.FullPath()))
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(testParser(t).Model.Node)
	if seen == 0 {
		t.Fatal("no command has --join: the walk reads nothing")
	}
}
