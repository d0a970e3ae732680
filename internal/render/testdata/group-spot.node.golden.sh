#!/bin/bash
# clusterctl node configuration of group batch in cluster prod.
#
# Stored in the cluster bucket under a key named by its SHA-256, which the
# group's launch template carries; the user data fetches it, checks that
# hash and runs it as root. It holds everything an agent is configured with,
# so that hash changes whenever the configuration does.
#
# It installs Docker, sets the engine labels (the group's, and what the node
# really is from its instance metadata: instance type, spot or on-demand,
# zone; also as instance tags), waits (with a bounded backoff, for the
# control node may still be starting) until the control node has published
# the swarm's join material, checks the CA certificate against the token and
# joins the swarm as a worker.
#
# CLUSTERCTL_IMDS_URL, CLUSTERCTL_ROOT (a prefix for the files written) and
# the waiting times CLUSTERCTL_JOIN_TIMEOUT, CLUSTERCTL_RETRY_MIN and
# CLUSTERCTL_RETRY_MAX (seconds) exist for tests; nothing sets them on a node.
set -euo pipefail

# Node configuration.
cluster='prod'
group='batch'
bucket='prod-bucket-1a2b3c4d5e6f'
control_ip='10.0.1.10'
contract_version='1'
instance_types='c5.large'
image_parameter='/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64'
image_id=''
labels=''
join_prefix='join/swarm'
swarm_port=2377

# daemon_json prints the engine configuration: the group's labels and
# clusterctl.group, then what this node really is (from its instance
# metadata, checked by identify), for placement constraints such as
# engine.labels.clusterctl.group==batch or
# engine.labels.clusterctl.lifecycle==on-demand.
daemon_json() {
  cat <<'CLUSTERCTL_DAEMON_JSON'
{
  "labels": [
    "clusterctl.group=batch",
CLUSTERCTL_DAEMON_JSON
  printf '    "%s",\n' "clusterctl.instance-type=$node_type" "clusterctl.lifecycle=$node_lifecycle"
  printf '    "%s"\n  ]\n}\n' "clusterctl.zone=$node_zone"
}

imds_url=${CLUSTERCTL_IMDS_URL:-http://169.254.169.254}
root=${CLUSTERCTL_ROOT:-}
join_timeout=${CLUSTERCTL_JOIN_TIMEOUT:-480}
retry_min=${CLUSTERCTL_RETRY_MIN:-2}
retry_max=${CLUSTERCTL_RETRY_MAX:-30}

log() { printf 'clusterctl: %s\n' "$*" >&2; }

# retry runs a command up to 5 times, 5 s apart: package mirrors and the
# network may lag behind the boot.
retry() {
  local n=1
  until "$@"; do
    if [ "$n" -ge 5 ]; then
      log "gave up after $n attempts: $1 $2"
      return 1
    fi
    n=$((n + 1))
    sleep 5
  done
}

# imds prints one item of the instance metadata, through IMDSv2 (the launch
# templates require session tokens).
imds() {
  local token
  token=$(curl -sSf --retry 5 --retry-connrefused --max-time 5 -X PUT \
    -H 'X-aws-ec2-metadata-token-ttl-seconds: 300' "$imds_url/latest/api/token")
  curl -sSf --retry 5 --retry-connrefused --max-time 5 \
    -H "X-aws-ec2-metadata-token: $token" "$imds_url/latest/meta-data/$1"
}

# swarm_state prints the engine's swarm state: inactive, pending, active,
# error or locked.
swarm_state() { docker info --format '{{.Swarm.LocalNodeState}}'; }

# wait_for_docker waits up to a minute for the engine to answer.
wait_for_docker() {
  local n=0
  until docker info >/dev/null 2>&1; do
    n=$((n + 1))
    if [ "$n" -ge 60 ]; then
      log "the Docker engine did not start"
      return 1
    fi
    sleep 1
  done
}

# ca_matches_token checks that the CA certificate in file $2 is the one whose
# SHA-256 digest the worker join token in file $1 carries (SWMTKN-1-<digest
# in base 36>-<secret>, or SWMTKN-2-<fips>-<digest>-<secret>), so that a
# token and a certificate of different swarms are never used together.
# Docker checks the same digest against the manager when it joins.
ca_matches_token() {
  local want got
  want=$(python3 -c 'import sys
p = sys.stdin.read().strip().split("-")
if len(p) == 5 and p[:2] == ["SWMTKN", "2"]:
    del p[2]
if len(p) != 4 or p[0] != "SWMTKN" or p[1] not in ("1", "2") or len(p[2]) != 50:
    sys.exit("clusterctl: malformed swarm join token")
print("%064x" % int(p[2], 36))' <"$1") || return 1
  got=$(sha256sum <"$2" | cut -d' ' -f1)
  [ "$want" = "$got" ]
}

# check_stack fails when the stack passes a join value other than the one
# this configuration was rendered with: the stack was then updated by other
# means than clusterctl, and joining either value could be wrong.
check_stack() {
  local name=$1 stack_value=$2 ours=$3
  if [ "$stack_value" != "$ours" ]; then
    log "the stack's $name is '$stack_value' but this node configuration has '$ours': run clusterctl update-group -n $group -j $cluster"
    return 1
  fi
}

# identify reads what this node really is from its instance metadata: in a
# mixed group the type is one of several, spot or on-demand, in any of the
# group's zones. The values go into daemon.json and instance tags, so their
# shape is checked first.
identify() {
  instance_id=$(imds instance-id)
  node_type=$(imds instance-type)
  node_lifecycle=$(imds instance-life-cycle)
  node_zone=$(imds placement/availability-zone)
  local v
  for v in "$instance_id" "$node_type" "$node_lifecycle" "$node_zone"; do
    if ! [[ $v =~ ^[a-z0-9][a-z0-9.-]*$ ]]; then
      log "unexpected value in the instance metadata: '$v'"
      return 1
    fi
  done
}

# tag_instance puts what the node is on its instance's tags too, for
# operators and cost reports. The core's agent role allows exactly these
# tags on the cluster's instances; a node of a core that does not allow
# them yet runs without them.
tag_instance() {
  if ! aws ec2 create-tags --resources "$instance_id" --tags \
    "Key=clusterctl:instance-type,Value=$node_type" \
    "Key=clusterctl:lifecycle,Value=$node_lifecycle" \
    "Key=clusterctl:zone,Value=$node_zone" 2>"$work/tags.err"; then
    log "could not tag instance $instance_id, carrying on without the tags: $(tail -n 1 "$work/tags.err")"
  fi
}

# fetch copies one object of the join material to a file.
fetch() {
  if ! aws s3api get-object --bucket "$bucket" --key "$join_prefix/$1" "$work/$1" >/dev/null 2>"$work/s3.err"; then
    log "s3://$bucket/$join_prefix/$1: $(tail -n 1 "$work/s3.err")"
    return 1
  fi
}

# try_join makes one attempt to join with the published join material.
try_join() {
  fetch worker-token || return 1
  fetch ca.pem || return 1
  if ! ca_matches_token "$work/worker-token" "$work/ca.pem"; then
    log "the published CA certificate does not match the join token (published by another swarm, or being replaced)"
    return 1
  fi
  docker swarm join --token "$(cat "$work/worker-token")" --advertise-addr "$ip" "$control_ip:$swarm_port"
}

check_stack ClusterName "${CLUSTERCTL_STACK_CLUSTER-}" "$cluster"
check_stack BucketName "${CLUSTERCTL_STACK_BUCKET-}" "$bucket"
check_stack ControlPrivateIp "${CLUSTERCTL_STACK_CONTROL_IP-}" "$control_ip"
check_stack ContractVersion "${CLUSTERCTL_STACK_CONTRACT-}" "$contract_version"

umask 077
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ip=$(imds local-ipv4)
identify
tag_instance

# Docker first: it installs while the control node may still be starting.
retry dnf install -y docker >/dev/null
install -d -m 0755 "$root/etc/docker" "$root/etc/clusterctl"
daemon_json >"$root/etc/docker/daemon.json"
chmod 0644 "$root/etc/docker/daemon.json"
# What this node was configured with, for operators (shell-quoted).
printf '%s=%q\n' \
  CLUSTER_NAME "$cluster" \
  NODE_ROLE agents \
  NODE_GROUP "$group" \
  NODE_LABELS "$labels" \
  INSTANCE_TYPES "$instance_types" \
  INSTANCE_ID "$instance_id" \
  INSTANCE_TYPE "$node_type" \
  LIFECYCLE "$node_lifecycle" \
  ZONE "$node_zone" \
  IMAGE_PARAMETER "$image_parameter" \
  IMAGE_ID "$image_id" \
  BUCKET_NAME "$bucket" \
  CONTROL_PRIVATE_IP "$control_ip" \
  CONTROL_SECURITY_GROUP_ID "${CLUSTERCTL_STACK_CONTROL_SG-}" \
  CONTRACT_VERSION "$contract_version" >"$root/etc/clusterctl/node.env"
chmod 0644 "$root/etc/clusterctl/node.env"
systemctl enable --now docker
wait_for_docker

deadline=$((SECONDS + join_timeout))
pause=$retry_min
until [ "$(swarm_state)" = active ]; do
  if [ "$(swarm_state)" = pending ]; then
    log "joining the swarm"
  elif try_join; then
    continue
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    log "could not join the swarm at $control_ip:$swarm_port within $join_timeout s"
    exit 1
  fi
  sleep "$pause"
  pause=$((pause * 2 > retry_max ? retry_max : pause * 2))
done
if [ -e "$work/ca.pem" ]; then
  install -m 0644 "$work/ca.pem" "$root/etc/clusterctl/swarm-ca.pem"
fi
log "joined the swarm at $control_ip:$swarm_port as a worker of group $group ($node_type, $node_lifecycle, $node_zone)"
