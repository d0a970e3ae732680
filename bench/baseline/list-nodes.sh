#!/usr/bin/env bash
# list-nodes the CoreOS way, for the benchmark to compare against: bash, the
# AWS CLI and jq. One describe-stacks (the CLI follows its pages) finds the
# core and its agent-group stacks by their ownership tags, then one
# describe-instances per group (the control node counts as group "control")
# lists the nodes. The JSON it prints is byte for byte what
# `clusterctl list-nodes -j CLUSTER -o json` prints.
#
# Usage: list-nodes.sh CLUSTER
set -euo pipefail

cluster=${1:?usage: list-nodes.sh CLUSTER}

stacks=$(aws cloudformation describe-stacks --output json)

# The core's outputs are the join contract; checking them is how this
# approach tells the cluster exists.
if ! jq -e --arg c "$cluster" \
	'.Stacks[] | select(.StackName == $c) | .Outputs[] | select(.OutputKey == "ControlPrivateIp")' \
	<<<"$stacks" >/dev/null; then
	echo "list-nodes.sh: no core stack named $cluster" >&2
	exit 1
fi

mapfile -t groups < <(jq -r --arg c "$cluster" '
	.Stacks[]
	| (.Tags // []) | from_entries
	| select(.["clusterctl:cluster"] == $c and .["clusterctl:role"] == "agents")
	| .["clusterctl:group"]' <<<"$stacks" | sort)

pages=()
for group in control "${groups[@]}"; do
	pages+=("$(aws ec2 describe-instances --output json --filters \
		"Name=tag:clusterctl:cluster,Values=$cluster" \
		"Name=tag:clusterctl:group,Values=$group" \
		"Name=instance-state-name,Values=pending,running,shutting-down,stopping,stopped")")
done

# printf is a builtin: a thousand instances' JSON would not fit in one
# argument of an external command.
printf '%s\n' "${pages[@]}" | jq -s -S '
	def tag($k): [(.Tags // [])[] | select(.Key == $k) | .Value][0] // "";
	[.[].Reservations[].Instances[]]
	| map({
		cluster: tag("clusterctl:cluster"),
		group: tag("clusterctl:group"),
		instanceId: .InstanceId,
		instanceType: .InstanceType,
		state: .State.Name,
		privateIp: (.PrivateIpAddress // ""),
		publicIp: (.PublicIpAddress // ""),
		zone: .Placement.AvailabilityZone,
		launchTime: (.LaunchTime | sub("\\.0+Z$"; "Z") | sub("\\+00:00$"; "Z")),
		labels: ([(.Tags // [])[] | select(.Key | startswith("clusterctl:label:"))
			| {key: (.Key | ltrimstr("clusterctl:label:")), value: .Value}] | from_entries)
	})
	| sort_by(.group != "control", .group, .instanceId)'
