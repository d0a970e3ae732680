package main

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kong"
)

// synonyms are the commands other tools (kubectl, eksctl, gh) would have
// a user type, which are too far from clusterctl's for kong's spelling
// suggestion (add-group is not a typo of add-agents), or closer to the
// wrong one (ls is two letters from logs).
var synonyms = map[string][]string{
	"add-group":      {"add-agents"},
	"create-group":   {"add-agents"},
	"create-agents":  {"add-agents"},
	"delete-group":   {"remove-group"},
	"rm-group":       {"remove-group"},
	"get-nodes":      {"list-nodes"},
	"nodes":          {"list-nodes"},
	"get-groups":     {"list-groups"},
	"groups":         {"list-groups"},
	"get-clusters":   {"list-clusters"},
	"clusters":       {"list-clusters"},
	"ls":             {"list-nodes", "list-groups", "list-clusters"},
	"list":           {"list-nodes", "list-groups", "list-clusters"},
	"get":            {"list-nodes", "list-groups", "list-clusters"},
	"create-cluster": {"create-core"},
	"delete-cluster": {"delete-core"},
	"update-cluster": {"update-core"},
	"status":         {"describe"},
}

// commandSynonym is the message for a command clusterctl does not have but
// names otherwise ("" when the word is not one of those): kong's own
// message with the suggestion that fits.
func commandSynonym(pe *kong.ParseError) string {
	rest, ok := strings.CutPrefix(pe.Error(), "unexpected argument ")
	if !ok || pe.Context == nil || pe.Context.Selected() != nil {
		return ""
	}
	word, _, _ := strings.Cut(rest, ",")
	cmds, ok := synonyms[word]
	if !ok {
		return ""
	}
	quoted := make([]string, len(cmds))
	for i, c := range cmds {
		quoted[i] = fmt.Sprintf("%q", c)
	}
	if len(quoted) == 1 {
		return fmt.Sprintf("unknown command %q, did you mean %s?", word, quoted[0])
	}
	return fmt.Sprintf("unknown command %q, did you mean %s or %s?", word, strings.Join(quoted[:len(quoted)-1], ", "), quoted[len(quoted)-1])
}
