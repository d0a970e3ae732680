package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// Every command that takes a cluster by flag takes it as -j, --cluster and
// --join alike, and help shows it as -j, --cluster=NAME: a user who guessed
// either is never told the flag is unknown.
func TestEveryJoinFlagIsAlsoCluster(t *testing.T) {
	var walk func(n *kong.Node)
	seen := 0
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			if f.Name != "cluster" && f.Name != "join" && f.Short != 'j' {
				continue
			}
			seen++
			if f.Name != "cluster" || f.Short != 'j' || !slices.Contains(f.Aliases, "join") || f.PlaceHolder != "NAME" {
				t.Errorf("%s: the cluster flag is not -j, --cluster=NAME (also --join)", strings.TrimSpace(n.FullPath()))
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(testParser(t).Model.Node)
	if seen == 0 {
		t.Fatal("no command has --cluster: the walk reads nothing")
	}
}
