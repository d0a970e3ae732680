#!/usr/bin/env bash
# Several agent groups the bash way, for the benchmark to compare apply
# against: add-agents.sh for each group, one after another (each waits
# for its stack with the AWS CLI waiter before the next starts).
#
# Usage: add-groups.sh CLUSTER TYPE COUNT TEMPLATE_DIR GROUP...
# TEMPLATE_DIR holds GROUP.json for each group, as `clusterctl render
# group` prints it.
set -euo pipefail

if [ $# -lt 5 ]; then
	echo "usage: add-groups.sh CLUSTER TYPE COUNT TEMPLATE_DIR GROUP..." >&2
	exit 2
fi
cluster=$1 type=$2 count=$3 dir=$4
shift 4
here=$(dirname "$0")

for group in "$@"; do
	"$here/add-agents.sh" "$cluster" "$group" "$type" "$count" "$dir/$group.json"
done
