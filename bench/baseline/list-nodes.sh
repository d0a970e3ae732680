#!/usr/bin/env bash
# list-nodes the CoreOS way, for the benchmark to compare against: bash, the
# AWS CLI and jq. One describe-stacks (the CLI follows its pages) finds the
# core (its bucket) and its agent-group stacks by their ownership tags, then
# one describe-instances per group (the managers count as group "control")
# lists the nodes, and one `aws s3 cp` reads the swarm's status snapshot,
# which jq merges in. The JSON it prints is byte for byte what
# `clusterctl list-nodes -j CLUSTER -o json` prints.
#
# Usage: list-nodes.sh CLUSTER
set -euo pipefail

cluster=${1:?usage: list-nodes.sh CLUSTER}

stacks=$(aws cloudformation describe-stacks --output json)

# The core's outputs are the join contract; its bucket output is how this
# approach tells the cluster exists and where its swarm's status is.
bucket=$(jq -r --arg c "$cluster" \
	'[.Stacks[] | select(.StackName == $c) | (.Outputs // [])[] | select(.OutputKey == "BucketName") | .OutputValue][0] // ""' \
	<<<"$stacks")
if [ -z "$bucket" ]; then
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

# The snapshot in a file: a thousand nodes' JSON would not fit in one
# argument. None (or none readable) leaves the swarm unknown.
snapshot=$(mktemp)
trap 'rm -f "$snapshot"' EXIT
aws s3 cp "s3://$bucket/status/swarm.json" "$snapshot" --only-show-errors 2>/dev/null || : >"$snapshot"

# printf is a builtin: a thousand instances' JSON would not fit in one
# argument of an external command.
printf '%s\n' "${pages[@]}" | jq -s -S --arg c "$cluster" --slurpfile snap "$snapshot" '
	def tag($k): [(.Tags // [])[] | select(.Key == $k) | .Value][0] // "";
	def word($n): if $n.state != "ready" then $n.state
		elif $n.availability == "drain" then "drain"
		elif $n.availability == "pause" then "pause"
		else "ready" end;
	def rank: if .state == "ready" then 0 elif .state == "down" then 2 else 1 end;
	def marked($m): if ($m | length) > 0 then " (" + ($m | join(", ")) + ")" else "" end;
	# What the snapshot $s says of swarm node $n (null: none), stale or not.
	def swarm($s; $stale; $n; $marks):
		if $n == null then
			{status: (if $stale then "stale" else "not joined" end), nodeId: "", state: "", availability: "",
			 role: "", managerStatus: "", runningTasks: 0, engineVersion: "", agent: "", snapshotTime: $s.time, stale: $stale}
		else
			((if $n.managerStatus != "" and ($stale | not) then [$n.managerStatus] else [] end) + $marks) as $m
			| {status: ((if $stale then "stale" else word($n) end) + marked($m)),
			   nodeId: $n.nodeId, state: $n.state, availability: $n.availability, role: $n.role,
			   managerStatus: $n.managerStatus, runningTasks: $n.runningTasks, engineVersion: $n.engineVersion,
			   agent: ($n.engineLabels["clusterctl.agent"] // ""), snapshotTime: $s.time, stale: $stale}
		end;
	($snap[0] // null | if . != null and .cluster == $c and .version == 1 then . else null end) as $s
	| (if $s == null then false else (now - ($s.time | fromdate)) | (. > 120 or . < -120) end) as $stale
	| [.[].Reservations[].Instances[]] as $insts
	| ($insts | map(.InstanceId)) as $ids
	# Instance id → the indexes of its swarm nodes, the one it runs now first.
	| (if $s == null then {} else
		[$s.nodes | to_entries[] | select(.value.instanceId != "")]
		| group_by(.value.instanceId)
		| map({key: .[0].value.instanceId, value: (sort_by([(.value | rank), .key]) | map(.key))})
		| from_entries end) as $by
	| [$insts[] | ($by[.InstanceId] // [])[0]] as $used
	| [$insts[] | {
		cluster: tag("clusterctl:cluster"),
		group: tag("clusterctl:group"),
		instanceId: .InstanceId,
		instanceType: .InstanceType,
		imageId: (.ImageId // ""),
		lifecycle: (.InstanceLifecycle // "on-demand"),
		state: .State.Name,
		privateIp: (.PrivateIpAddress // ""),
		publicIp: (.PublicIpAddress // ""),
		zone: .Placement.AvailabilityZone,
		launchTime: (.LaunchTime | sub("\\.0+Z$"; "Z") | sub("\\+00:00$"; "Z")),
		labels: ([(.Tags // [])[] | select(.Key | startswith("clusterctl:label:"))
			| {key: (.Key | ltrimstr("clusterctl:label:")), value: .Value}] | from_entries),
		swarmOnly: false,
		swarm: (if $s == null then null
			else (($by[.InstanceId] // [])[0]) as $i | swarm($s; $stale; (if $i == null then null else $s.nodes[$i] end); []) end)
	}]
	# The swarm nodes no instance matched: flagged.
	+ (if $s == null then [] else
		[$s.nodes | to_entries[] | .key as $k | select(any($used[]; . == $k) | not) | .value | {
			cluster: $c,
			group: (.engineLabels["clusterctl.group"] // ""),
			instanceId: .instanceId,
			instanceType: (.engineLabels["clusterctl.instance-type"] // ""),
			imageId: "",
			lifecycle: (.engineLabels["clusterctl.lifecycle"] // ""),
			state: "",
			privateIp: .address,
			publicIp: "",
			zone: (.engineLabels["clusterctl.zone"] // ""),
			launchTime: null,
			labels: ((.engineLabels // {}) | with_entries(select(.key | startswith("clusterctl.") | not))),
			swarmOnly: true,
			swarm: (.instanceId as $x | swarm($s; $stale; .; [if any($ids[]; . == $x) then "duplicate" else "no instance" end]))
		}] end)
	| sort_by(.cluster, .group != "control", .group, .instanceId, (.swarm.nodeId // ""))'
