#!/usr/bin/env bash
# The local AWS the demo, the tests and the examples of the README and docs/ use:
# moto_server with the gaps of its CloudFormation filled in
# (internal/motoserver/gaps.py), and a default VPC with an internet gateway
# and a default route, which an internet-facing load balancer needs and
# plain moto does not give.
#
#   scripts/moto.sh [PORT]      # or: make moto; runs until Ctrl-C
#
# It prints the environment to point clusterctl at it. Sourced (as the demo
# does), it only defines start_moto, which starts the server in the
# background on a free port and exports that environment.
set -euo pipefail

moto_here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# start_moto PORT LOG: starts the server, waits for it, prepares the VPC and
# exports the AWS_* variables; moto_pid is the server's process id.
start_moto() {
	local port=$1 log=$2
	if ! command -v moto_server >/dev/null 2>&1; then
		echo "moto: moto_server not found: pip install 'moto[server]'" >&2
		return 1
	fi
	# Neither at another endpoint nor with a profile: moto's own boto3
	# calls honour them (an empty AWS_PROFILE breaks them).
	env -u AWS_ENDPOINT_URL -u AWS_PROFILE python3 "$moto_here/internal/motoserver/gaps.py" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
	moto_pid=$!
	local up=""
	for _ in $(seq 1 300); do
		if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "http://127.0.0.1:$port/moto-api/" 2>/dev/null; then
			up=yes
			break
		fi
		if ! kill -0 "$moto_pid" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	if [ -z "$up" ]; then
		echo "moto: the server did not answer on 127.0.0.1:$port; its log:" >&2
		cat "$log" >&2
		return 1
	fi
	export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
	export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
	export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
	unset AWS_PROFILE AWS_SESSION_TOKEN
	# The default VPC's internet gateway and route (boto3 comes with moto).
	python3 - <<'EOF'
import os
import boto3

ec2 = boto3.client("ec2", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name=os.environ["AWS_REGION"])
vpc = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"][0]["VpcId"]
attached = ec2.describe_internet_gateways(Filters=[{"Name": "attachment.vpc-id", "Values": [vpc]}])["InternetGateways"]
if not attached:
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    main = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}, {"Name": "association.main", "Values": ["true"]}])["RouteTables"][0]
    ec2.create_route(RouteTableId=main["RouteTableId"], DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
EOF
}

# free_port prints a free loopback port.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	port=${1:-$(free_port)}
	log=$(mktemp -t clusterctl-moto.XXXXXX)
	trap 'kill "$moto_pid" 2>/dev/null || true; wait "$moto_pid" 2>/dev/null || true; rm -f "$log"' EXIT
	trap 'exit 130' INT TERM
	start_moto "$port" "$log"
	cat <<EOF
Local AWS on $AWS_ENDPOINT_URL (default VPC with an internet gateway).
In another shell, point clusterctl and the aws CLI at it:

export AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
unset AWS_PROFILE AWS_SESSION_TOKEN

Ctrl-C stops it (everything in it is forgotten).
EOF
	wait "$moto_pid"
fi
