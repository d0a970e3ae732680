package main

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kong"
)

// examples are the Examples section of each command's help, by the
// command's path: one entry per command, each line a command as typed
// with an optional "# comment". Every line is also an example of
// README.md or of a docs/*.md, which the end-to-end tests run in order
// against a local AWS,
// so an example in help is one that works (TestHelpExamplesAreReadmeExamples).
var examples = map[string][]string{
	"":                       {"clusterctl create-network core                # a VPC of its own: nodes private, load balancers public", "clusterctl create-core core --network core", "clusterctl add-agents -n r3-agents -t r3.large -j core -c 3 -m role=worker", "clusterctl list-nodes -j core", "clusterctl help update-group"},
	"create-core":            {"clusterctl create-core core --network core", "clusterctl create-core ha --managers 3", "clusterctl create-core qa --ssh-cidr 203.0.113.0/24 --dry-run    # the plan only"},
	"update-core":            {"clusterctl update-core ha --instance-type m6i.large --dry-run", "clusterctl update-core ha --managers 5 --yes"},
	"add-agents":             {"clusterctl add-agents -n r3-agents -t r3.large -j core -c 3 -m role=worker", "clusterctl add-agents -n spot -t m5.large,m5a.large,m6i.large --spot --on-demand-base 1 -j core -c 3", "clusterctl add-agents -n gpu -t g5.xlarge -j core -c 2 --dry-run    # the plan only"},
	"list-nodes":             {"clusterctl list-nodes -j core", "clusterctl list-nodes -j core -n control  # the managers, each with its manager status", "clusterctl list-nodes -j core -o wide     # adds cluster, public IP, zone, launch time, image and labels"},
	"list-groups":            {"clusterctl list-groups -j core", "clusterctl list-groups -j core -o wide    # adds the spot allocation, the stack, the labels and the load balancer"},
	"drain-node":             {`clusterctl drain-node "$(clusterctl list-nodes -j core -n r3-agents --query '.[0].instanceId')"           # needs real AWS`, `clusterctl drain-node "$(clusterctl list-nodes -j core -n r3-agents --query '.[0].instanceId')" --undo    # needs real AWS`},
	"replace-node":           {`clusterctl replace-node "$(clusterctl list-nodes -j core -n r3-agents --query '.[0].instanceId')"         # needs real AWS`},
	"update-group":           {"clusterctl update-group -n r3-agents -j core -m role=worker,tier=memory --dry-run", "clusterctl update-group -n r3-agents -j core -t r5.large -c 4 --yes"},
	"upgrade":                {"clusterctl upgrade -j core --dry-run     # the plan: what each stack runs → what it would run now", "clusterctl upgrade -j core --dry-run -o json     # the plan as JSON: each stack, current or its changes"},
	"remove-group":           {"clusterctl remove-group -n c5-agents -j core --yes    # scripts"},
	"create-network":         {"clusterctl create-network prod --dry-run     # the plan and what it costs by the hour", "clusterctl create-network prod"},
	"delete-network":         {"clusterctl delete-network prod --yes     # refused while a cluster uses it (exit 1)"},
	"delete-core":            {"clusterctl delete-core staging --yes            # a cluster without groups", "clusterctl delete-core prod --cascade --yes     # groups first (in parallel), then the core"},
	"apply":                  {"clusterctl apply -f core.yaml --dry-run   # after an edit", "clusterctl apply -f core.yaml             # a missing network and core first, then the groups in parallel"},
	"export":                 {"clusterctl export core > core.yaml        # the live cluster as its file", "clusterctl export apps -o json"},
	"schema":                 {"clusterctl schema > clusterctl.schema.json"},
	"describe":               {"clusterctl describe core                 # core status, the swarm's managers and quorum, outputs, parameters; groups with status and health"},
	"events":                 {"clusterctl events core -n r3-agents      # the group's stack events, oldest first", "clusterctl events core --follow          # until the operation in progress ends"},
	"logs":                   {"clusterctl logs -j core web                                # service web's tasks, interleaved by time", "clusterctl logs -j core web --since 10m --grep ERROR       # a CloudWatch filter pattern"},
	"wait":                   {"clusterctl wait core -n r3-agents        # re-attach to an operation still in progress"},
	"unlock":                 {"clusterctl unlock core --id 9b1e44c0a2d7      # the core's (or delete-core's) lease; here none (exit 1)"},
	"render":                 {"clusterctl render core > core.json", "clusterctl render group -n arm -t m7g.large -m role=worker > group.json        # offline"},
	"render core":            {"clusterctl render core > core.json", "clusterctl render core prod2 --vpc-id vpc-0abc1234 --subnet-ids subnet-0aaa1111 --parameters"},
	"render group":           {"clusterctl render group -n arm -t m7g.large -m role=worker > group.json        # offline", "clusterctl render group -n web -t c5.large -j core --cli-input-json > web-stack.json"},
	"render network":         {"clusterctl render network prod --nat none > network.json"},
	"render node-config":     {"clusterctl render node-config -n web -t c5.large -j core > web-node.env"},
	"render operator-policy": {"clusterctl render operator-policy -j prod --account 123456789012 > policy.json", "clusterctl render operator-policy -j prod --read-only > read-only.json     # describe, list-*, logs, ...: nothing that changes"},
	"version":                {"clusterctl version", "clusterctl version -o json"},
	"completion":             {"clusterctl completion fish > ~/.config/fish/completions/clusterctl.fish"},
	"help":                   {"clusterctl help update-group"},
	"docker":                 {"clusterctl docker -j core -- node ls                                # needs real AWS", "clusterctl docker -j core -- stack deploy -c - app < examples/compose.yml              # needs real AWS"},
	"shell":                  {"clusterctl shell -j core                   # needs real AWS"},
	"services":               {"clusterctl services -j core                 # needs real AWS"},
	"list-clusters":          {"clusterctl list-clusters"},
	"backup":                 {"clusterctl backup -j core                  # a backup now, through the core's queue"},
	"backups":                {"clusterctl backups -j core                 # needs real AWS: a running swarm (exit 1)"},
	"restore":                {"clusterctl restore -j core --from latest --yes   # needs real AWS: a running swarm (exit 1)"},
	"secrets":                {"clusterctl secrets -j core"},
	"secrets list":           {"clusterctl secrets -j core"},
	"secrets add":            {"clusterctl secrets add -j core api_token --from ssm:/prod/api/token --yes"},
	"secrets remove":         {"clusterctl secrets remove -j core api_token --yes"},
	"use":                    {"clusterctl use core                               # the default from now on, with its region", "clusterctl use --clear                            # forget it (also --none)"},
}

// helpOptions are the kong options of clusterctl's help: a command's own
// flags first and the global ones after them, under their own title, and
// an Examples section after the flags.
func helpOptions() []kong.Option {
	return []kong.Option{
		kong.ExplicitGroups([]kong.Group{{Key: "global", Title: "Global flags:"}}),
		kong.Help(printHelp),
	}
}

// printHelp is kong's help with the command's examples after it.
func printHelp(options kong.HelpOptions, ctx *kong.Context) error {
	if err := kong.DefaultHelpPrinter(options, ctx); err != nil {
		return err
	}
	if options.Summary {
		return nil
	}
	lines := examples[commandPath(ctx.Selected())]
	if len(lines) == 0 {
		return nil
	}
	w := ctx.Stdout
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Examples:")
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
	return nil
}

// commandPath is a command's path without the program's name ("render
// group"); "" for the program itself.
func commandPath(n *kong.Node) string {
	if n == nil {
		return ""
	}
	_, path, _ := strings.Cut(n.FullPath(), " ")
	return path
}
