#!/usr/bin/env bash
# The whole cluster lifecycle against a local moto server: create a core, add
# two heterogeneous groups, list, update, shrink and delete. Each command is
# printed before it runs. The server is stopped on exit, failure or Ctrl-C.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=${CLUSTERCTL:-$here/bin/clusterctl}

if ! command -v moto_server >/dev/null 2>&1; then
	echo "demo: moto_server not found: pip install 'moto[server]'" >&2
	exit 1
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
log=$(mktemp -t clusterctl-demo-moto.XXXXXX)
moto_server -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto_pid=$!
cleanup() {
	kill "$moto_pid" 2>/dev/null || true
	wait "$moto_pid" 2>/dev/null || true
	rm -f "$log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for _ in $(seq 1 100); do
	if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "http://127.0.0.1:$port/moto-api/" 2>/dev/null; then
		break
	fi
	sleep 0.1
done

export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
unset AWS_PROFILE AWS_SESSION_TOKEN

run() {
	printf '\n\033[1m$ clusterctl %s\033[0m\n' "$*"
	"$bin" "$@"
}

echo "moto_server on $AWS_ENDPOINT_URL"
run create-core core
run add-agents -n r3-agents -t r3.large -j core -c 3 -m instancetype=r3,role=worker
run add-agents -n c5-agents -t c5.xlarge -j core
run list-groups -j core
run list-nodes -j core
run update-group -n r3-agents -j core -t r5.large -c 4 --yes
run list-nodes -j core -o wide
run remove-group -n c5-agents -j core --yes
run list-groups -j core
run delete-core core --cascade --yes
run list-nodes
echo
echo "demo: done"
