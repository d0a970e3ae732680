#!/usr/bin/env bash
# add-agents the CoreOS way, for the benchmark to compare against: read the
# core's outputs and its node agent's pins with describe-stacks, turn them
# into the group stack's parameters with jq, create the stack and wait with
# the AWS CLI waiter (which polls DescribeStacks every 30 s).
#
# Usage: add-agents.sh CLUSTER GROUP TYPE COUNT TEMPLATE
# TEMPLATE is the group template as `clusterctl render group` prints it; an
# operator of this approach keeps such a file next to the script.
set -euo pipefail

if [ $# -ne 5 ]; then
	echo "usage: add-agents.sh CLUSTER GROUP TYPE COUNT TEMPLATE" >&2
	exit 2
fi
cluster=$1 group=$2 type=$3 count=$4 template=$5
stack=$cluster-$group

params=$(mktemp)
trap 'rm -f "$params"' EXIT

# The same defaults as clusterctl: min 0, max = count, one node replaced at
# a time with the rest kept in service (CloudFormation needs the minimum in
# service below the maximum).
min_in_service=$((count > 0 ? count - 1 : 0))
case $type in
*g.* | *gd.* | *gn.* | a1.*) arch=arm64 ;;
*) arch=x86_64 ;;
esac

aws cloudformation describe-stacks --stack-name "$cluster" --output json |
	jq --arg type "$type" --arg count "$count" --arg mis "$min_in_service" \
		--arg image "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-$arch" '
	[.Stacks[0].Outputs[]
		| select(.OutputKey | IN("ClusterName", "BucketName", "ManagersKey",
			"ControlSecurityGroupId", "AgentSecurityGroupId", "AgentInstanceProfile",
			"VpcId", "SubnetIds", "ContractVersion"))
		| {ParameterKey: .OutputKey, ParameterValue: .OutputValue}]
	# The node agent the core pins (its parameters), which clusterctl
	# uploaded with the core: a group runs the same one.
	+ [.Stacks[0].Parameters[]
		| select(.ParameterKey | IN("NodeAgentAmd64", "NodeAgentArm64"))]
	+ ({InstanceType: $type, DesiredCapacity: $count, MinSize: "0", MaxSize: $count,
		VolumeSize: "30", ImageParameter: $image, MaxBatchSize: "1",
		MinInstancesInService: $mis}
		| to_entries | map({ParameterKey: .key, ParameterValue: .value}))' >"$params"

aws cloudformation create-stack --stack-name "$stack" \
	--template-body "file://$template" --parameters "file://$params" \
	--tags "Key=clusterctl:cluster,Value=$cluster" "Key=clusterctl:role,Value=agents" \
	"Key=clusterctl:group,Value=$group" "Key=clusterctl:labels,Value=-" \
	--output text >/dev/null

aws cloudformation wait stack-create-complete --stack-name "$stack"
echo "$stack: CREATE_COMPLETE"
