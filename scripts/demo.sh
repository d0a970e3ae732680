#!/usr/bin/env bash
# The README's headline flows against the local AWS of scripts/moto.sh: create
# a network of the cluster's own and a core in it, add heterogeneous groups and one behind a load balancer, list,
# update, then the file workflow (export → edit → apply --dry-run → apply),
# the upgrade plan, and tear down. Each command is printed before it runs. The server is
# stopped on exit, failure or Ctrl-C.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=${CLUSTERCTL:-$here/bin/clusterctl}
# shellcheck source=scripts/moto.sh
source "$here/scripts/moto.sh"

log=$(mktemp -t clusterctl-demo-moto.XXXXXX)
work=$(mktemp -d -t clusterctl-demo.XXXXXX)
moto_pid=""
cleanup() {
	if [ -n "$moto_pid" ]; then
		kill "$moto_pid" 2>/dev/null || true
		wait "$moto_pid" 2>/dev/null || true
	fi
	rm -rf "$log" "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
start_moto "$(free_port)" "$log"
cd "$work"

run() {
	printf '\n\033[1m$ clusterctl %s\033[0m\n' "$*"
	"$bin" "$@"
}
say() {
	printf '\n\033[2m# %s\033[0m\n' "$*"
}

echo "Local AWS on $AWS_ENDPOINT_URL"
say "A network of the cluster's own: nodes in private subnets without public IPs, load balancers in public ones"
run create-network core
run create-core core --network core
run add-agents -n r3-agents -t r3.large -j core -c 3 -m instancetype=r3,role=worker
run add-agents -n c5-agents -t c5.xlarge -j core
say "A group behind a load balancer: port 80 on the nodes, as examples/compose.yml publishes it"
run add-agents -n front -t t3.small -j core -c 2 --publish 80
run list-groups -j core
run list-groups -j core -o wide
run list-nodes -j core
run update-group -n r3-agents -j core -t r5.large -c 4 --yes
say "On AWS the rolling update replaces the 3 r3.large nodes with r5.large ones, one at a time, and adds a fourth."
say "moto's Auto Scaling stand-in launches from the old instance type: the list below shows 4 nodes still typed r3.large, where AWS shows r5.large."
run list-nodes -j core -n r3-agents

say "The file workflow: export the live cluster, edit the file, see the plan, apply it"
printf '\n\033[1m$ clusterctl export core > core.yaml\033[0m\n'
"$bin" export core >core.yaml
cat core.yaml
say "Edit: a new group batch of 2 c5.large"
printf '  - name: batch\n    instanceType: c5.large\n    count: 2\n' >>core.yaml
run apply -f core.yaml --dry-run
run apply -f core.yaml
run list-groups -j core

say "Upgrades: what each stack runs against what it would run now (image, Docker Engine, node agent, contract), in the order upgrade rolls them"
run upgrade -j core --dry-run
say "Everything here was deployed by this clusterctl, so every stack is current; a newer release's node agent or a new Amazon Linux image shows as old → new per stack, the core first."

run remove-group -n c5-agents -j core --yes
run delete-core core --cascade --yes
run delete-network core --yes
run list-clusters
echo
echo "demo: done"
