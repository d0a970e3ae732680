#!/bin/bash
# clusterctl node configuration of group elastic in cluster prod.
#
# Stored in the cluster bucket under a key named by its SHA-256, which the
# group's launch template carries; the user data fetches it, checks that
# hash and runs it as root. It holds everything an agent is configured with,
# so that hash changes whenever the configuration does.
#
# It installs Docker with the engine labels (the group's, plus
# clusterctl.group, and what the node really is from its instance metadata:
# clusterctl.instance-type, clusterctl.lifecycle, clusterctl.zone and
# clusterctl.instance-id; the first three also as instance tags), then
# installs and starts the agent service (clusterctl-agent.service), which
# joins the swarm, keeps the node in it, and signals CloudFormation when the
# node is Ready in the swarm.
#
# CLUSTERCTL_IMDS_URL and CLUSTERCTL_ROOT (a prefix for the files written)
# exist for tests; nothing sets them on a node.
set -euo pipefail

# Node configuration.
cluster='prod'
group='elastic'
bucket='prod-bucket-1a2b3c4d5e6f'
managers_key='join/swarm/managers'
contract_version='2'
instance_types='m5.large,m5a.large'
image_parameter='/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64'
image_id=''
labels=''
log_group='/clusterctl/prod'
log_driver='awslogs'
log_opts=',"log-driver":"awslogs","log-opts":{"awslogs-group":"/clusterctl/prod","awslogs-region":"%s",%s"mode":"non-blocking","max-buffer-size":"4m","tag":"{{with index .ContainerLabels \\\"com.docker.swarm.service.name\\\"}}service/{{.}}{{else}}container{{end}}/{{.Name}}@%s"}'

# daemon_json prints the engine configuration: the group's labels and
# clusterctl.group, then what this node really is (from its instance
# metadata, checked by identify), for placement constraints such as
# engine.labels.clusterctl.group==elastic or
# engine.labels.clusterctl.lifecycle==on-demand.
daemon_json() {
  cat <<'CLUSTERCTL_DAEMON_JSON'
{
  "labels": [
    "clusterctl.group=elastic",
CLUSTERCTL_DAEMON_JSON
  printf '    "%s",\n' "clusterctl.instance-type=$node_type" "clusterctl.lifecycle=$node_lifecycle" \
    "clusterctl.zone=$node_zone"
  printf '    "%s"\n  ]' "clusterctl.instance-id=$instance_id"
  # With log driver awslogs, the containers' output goes to the cluster's
  # log group (see logOpts in internal/render); CLUSTERCTL_LOGS_ENDPOINT
  # exists for tests.
  if [ "$log_driver" = awslogs ]; then
    # shellcheck disable=SC2059 # the format is clusterctl's
    printf "$log_opts" "$region" "$logs_endpoint" "$instance_id"
  fi
  printf '\n}\n'
}

imds_url=${CLUSTERCTL_IMDS_URL:-http://169.254.169.254}
root=${CLUSTERCTL_ROOT:-}
logs_endpoint=
if [[ ${CLUSTERCTL_LOGS_ENDPOINT:-} =~ ^https?://[-a-zA-Z0-9.]+(:[0-9]{1,5})?/?$ ]]; then
  logs_endpoint="\"awslogs-endpoint\":\"$CLUSTERCTL_LOGS_ENDPOINT\","
fi

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

# valid checks that value has the shape of its kind before anything uses
# it: every value that comes from the stack, the bucket or the instance
# metadata reaches root shell code and the arguments of docker and aws.
valid() {
  local kind=$1 value=$2 re octet='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
  case $kind in
    cluster | group | stack) re='^[a-zA-Z][-a-zA-Z0-9]{0,127}$' ;;
    region) re='^[a-z]{2}(-[a-z]+)+-[0-9]+$' ;;
    bucket) re='^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' ;;
    ipv4) re="^$octet(\.$octet){3}$" ;;
    manager) re="^$octet(\.$octet){3}:[0-9]{1,5}$" ;;
    security-group) re='^sg-[0-9a-f]{8,17}$' ;;
    instance-id) re='^i-[0-9a-f]{8,17}$' ;;
    instance-type) re='^[a-z][a-z0-9-]*\.[a-z0-9]+$' ;;
    lifecycle) re='^[a-z][a-z-]{0,31}$' ;;
    zone) re='^[a-z]{2}-[a-z0-9-]+[a-z]$' ;;
    contract) re='^[0-9]{1,4}$' ;;
    bucket-key) re='^[a-zA-Z0-9][-_a-zA-Z0-9]*(/[-_a-zA-Z0-9][-_.a-zA-Z0-9]*)*$' ;;
    token) re='^SWMTKN-(1|2-[01])-[0-9a-z]{50}-[0-9a-z]{25}$' ;;
    node-id) re='^[a-z0-9]{25}$' ;;
    queue-url) re='^https://[-a-z0-9.]+(:[0-9]+)?/[0-9]{12}/[-_a-zA-Z0-9]{1,80}$' ;;
    auto-scaling-group) re='^[-_.a-zA-Z0-9]{1,255}$' ;;
    hook) re='^[-_/a-zA-Z0-9]{1,255}$' ;;
    lifecycle-token | request-id) re='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' ;;
    availability) re='^(active|drain)$' ;;
    *)
      log "no shape known for $kind"
      return 1
      ;;
  esac
  if [[ $value =~ $re ]]; then
    return 0
  fi
  log "refusing $kind $(printf '%q' "$value" | head -c 100): not the shape of one"
  return 1
}

# docker_info prints what the engine says about itself, as JSON.
docker_info() { docker info --format '{{json .}}'; }

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
  # No indented Python: the managers' program is embedded without its
  # lines' indentation.
  want=$(python3 -c 'import sys
p = sys.stdin.read().strip().split("-")
if len(p) == 5 and p[:2] == ["SWMTKN", "2"]: del p[2]
if len(p) != 4 or p[0] != "SWMTKN" or p[1] not in ("1", "2") or len(p[2]) != 50: sys.exit("clusterctl: malformed swarm join token")
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
    log "the stack's $name is $(printf '%q' "$stack_value" | head -c 100) but this node configuration has '$ours': run clusterctl update-group -n $group -j $cluster"
    return 1
  fi
}

valid cluster "$cluster"
valid group "$group"
valid bucket "$bucket"
valid bucket-key "$managers_key"
valid contract "$contract_version"
IFS=, read -ra types <<<"$instance_types"
for t in "${types[@]}"; do
  valid instance-type "$t"
done
check_stack ClusterName "${CLUSTERCTL_STACK_CLUSTER-}" "$cluster"
check_stack BucketName "${CLUSTERCTL_STACK_BUCKET-}" "$bucket"
check_stack ManagersKey "${CLUSTERCTL_STACK_MANAGERS_KEY-}" "$managers_key"
check_stack ContractVersion "${CLUSTERCTL_STACK_CONTRACT-}" "$contract_version"
control_sg=${CLUSTERCTL_STACK_CONTROL_SG-}
stack=${CLUSTERCTL_STACK_NAME-}
region=${CLUSTERCTL_STACK_REGION-}
valid security-group "$control_sg"
valid stack "$stack"
valid region "$region"

# What this node really is: in a mixed group the type is one of several,
# spot or on-demand, in any of the group's zones.
ip=$(imds local-ipv4)
instance_id=$(imds instance-id)
node_type=$(imds instance-type)
node_lifecycle=$(imds instance-life-cycle)
node_zone=$(imds placement/availability-zone)
valid ipv4 "$ip"
valid instance-id "$instance_id"
valid instance-type "$node_type"
valid lifecycle "$node_lifecycle"
valid zone "$node_zone"

# The same on the instance's tags, for operators and cost reports. The
# core's agent role allows exactly these tags on the cluster's instances;
# a node of a core that does not allow them yet runs without them.
if ! out=$(aws ec2 create-tags --resources "$instance_id" --tags \
  "Key=clusterctl:instance-type,Value=$node_type" \
  "Key=clusterctl:lifecycle,Value=$node_lifecycle" \
  "Key=clusterctl:zone,Value=$node_zone" 2>&1); then
  log "could not tag instance $instance_id, carrying on without the tags: $(tail -n 1 <<<"$out")"
fi

umask 077
retry dnf install -y docker jq >/dev/null
install -d -m 0755 "$root/etc/docker" "$root/etc/clusterctl" "$root/etc/systemd/system" "$root/usr/local/lib/clusterctl"
daemon_json >"$root/etc/docker/daemon.json.new"
mv -f "$root/etc/docker/daemon.json.new" "$root/etc/docker/daemon.json"
chmod 0644 "$root/etc/docker/daemon.json"
# What this node was configured with, for operators and the agent service
# (shell-quoted).
printf '%s=%q\n' \
  CLUSTER_NAME "$cluster" \
  NODE_ROLE agents \
  NODE_GROUP "$group" \
  NODE_LABELS "$labels" \
  INSTANCE_TYPES "$instance_types" \
  INSTANCE_TYPE "$node_type" \
  LIFECYCLE "$node_lifecycle" \
  ZONE "$node_zone" \
  INSTANCE_ID "$instance_id" \
  PRIVATE_IP "$ip" \
  IMAGE_PARAMETER "$image_parameter" \
  IMAGE_ID "$image_id" \
  BUCKET_NAME "$bucket" \
  MANAGERS_KEY "$managers_key" \
  CONTROL_SECURITY_GROUP_ID "$control_sg" \
  CONTRACT_VERSION "$contract_version" \
  STACK_NAME "$stack" \
  AWS_REGION "$region" \
  LOG_GROUP "$log_group" \
  LOG_DRIVER "$log_driver" >"$root/etc/clusterctl/node.env"
chmod 0644 "$root/etc/clusterctl/node.env"
systemctl enable --now docker
wait_for_docker

cat >"$root/usr/local/lib/clusterctl/agent.new" <<'CLUSTERCTL_AGENT_SERVICE'
#!/bin/bash
# clusterctl agent service of group elastic in cluster prod
# (clusterctl-agent.service).
#
# Keeps this node active in the swarm whose join material is published in
# s3://BUCKET/join/swarm/: it waits for the material (an agent may boot
# before the managers), joins any of the managers published in
# s3://BUCKET/join/swarm/managers, and joins again when the
# node is in another swarm (the control plane was replaced: the published
# CA certificate is not the one the node trusts) or when the swarm's status
# snapshot (s3://BUCKET/status/swarm.json) has not shown it Ready for a while
# (it was removed, or its managers changed address). It signals
# CloudFormation once: success when the node is Ready in the swarm, failure
# when it is not within the join timeout. It stops converging once Auto
# Scaling is terminating the instance, so a drained and removed node does
# not join again.
#
# Settings come from /etc/clusterctl/node.env, written by the node
# configuration. CLUSTERCTL_ROOT, CLUSTERCTL_IMDS_URL and the CLUSTERCTL_*
# timings below exist for tests; nothing sets them on a node.
set -uo pipefail

root=${CLUSTERCTL_ROOT:-}
# shellcheck source=/dev/null
. "$root/etc/clusterctl/node.env"
join_prefix=join/swarm
managers_key='join/swarm/managers'
status_key=status/swarm.json
imds_url=${CLUSTERCTL_IMDS_URL:-http://169.254.169.254}
state_dir=$root/var/lib/clusterctl/agent
join_timeout=${CLUSTERCTL_JOIN_TIMEOUT:-480}       # signal failure when not Ready by then
retry_min=${CLUSTERCTL_RETRY_MIN:-2}               # backoff while not Ready
retry_max=${CLUSTERCTL_RETRY_MAX:-30}
check_every=${CLUSTERCTL_CHECK_INTERVAL:-30}       # check while Ready
rejoin_after=${CLUSTERCTL_REJOIN_AFTER:-120}       # not Ready in fresh snapshots this long: join again
stale_after=${CLUSTERCTL_STATUS_STALE_AFTER:-120}  # an older snapshot says nothing
export AWS_DEFAULT_REGION=$AWS_REGION
export PATH=$PATH:/opt/aws/bin

log() { printf 'clusterctl: %s\n' "$*" >&2; }

# imds prints one item of the instance metadata, through IMDSv2 (the launch
# templates require session tokens).
imds() {
  local token
  token=$(curl -sSf --retry 5 --retry-connrefused --max-time 5 -X PUT \
    -H 'X-aws-ec2-metadata-token-ttl-seconds: 300' "$imds_url/latest/api/token")
  curl -sSf --retry 5 --retry-connrefused --max-time 5 \
    -H "X-aws-ec2-metadata-token: $token" "$imds_url/latest/meta-data/$1"
}

# valid checks that value has the shape of its kind before anything uses
# it: every value that comes from the stack, the bucket or the instance
# metadata reaches root shell code and the arguments of docker and aws.
valid() {
  local kind=$1 value=$2 re octet='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
  case $kind in
    cluster | group | stack) re='^[a-zA-Z][-a-zA-Z0-9]{0,127}$' ;;
    region) re='^[a-z]{2}(-[a-z]+)+-[0-9]+$' ;;
    bucket) re='^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' ;;
    ipv4) re="^$octet(\.$octet){3}$" ;;
    manager) re="^$octet(\.$octet){3}:[0-9]{1,5}$" ;;
    security-group) re='^sg-[0-9a-f]{8,17}$' ;;
    instance-id) re='^i-[0-9a-f]{8,17}$' ;;
    instance-type) re='^[a-z][a-z0-9-]*\.[a-z0-9]+$' ;;
    lifecycle) re='^[a-z][a-z-]{0,31}$' ;;
    zone) re='^[a-z]{2}-[a-z0-9-]+[a-z]$' ;;
    contract) re='^[0-9]{1,4}$' ;;
    bucket-key) re='^[a-zA-Z0-9][-_a-zA-Z0-9]*(/[-_a-zA-Z0-9][-_.a-zA-Z0-9]*)*$' ;;
    token) re='^SWMTKN-(1|2-[01])-[0-9a-z]{50}-[0-9a-z]{25}$' ;;
    node-id) re='^[a-z0-9]{25}$' ;;
    queue-url) re='^https://[-a-z0-9.]+(:[0-9]+)?/[0-9]{12}/[-_a-zA-Z0-9]{1,80}$' ;;
    auto-scaling-group) re='^[-_.a-zA-Z0-9]{1,255}$' ;;
    hook) re='^[-_/a-zA-Z0-9]{1,255}$' ;;
    lifecycle-token | request-id) re='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' ;;
    availability) re='^(active|drain)$' ;;
    *)
      log "no shape known for $kind"
      return 1
      ;;
  esac
  if [[ $value =~ $re ]]; then
    return 0
  fi
  log "refusing $kind $(printf '%q' "$value" | head -c 100): not the shape of one"
  return 1
}

# docker_info prints what the engine says about itself, as JSON.
docker_info() { docker info --format '{{json .}}'; }

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
  # No indented Python: the managers' program is embedded without its
  # lines' indentation.
  want=$(python3 -c 'import sys
p = sys.stdin.read().strip().split("-")
if len(p) == 5 and p[:2] == ["SWMTKN", "2"]: del p[2]
if len(p) != 4 or p[0] != "SWMTKN" or p[1] not in ("1", "2") or len(p[2]) != 50: sys.exit("clusterctl: malformed swarm join token")
print("%064x" % int(p[2], 36))' <"$1") || return 1
  got=$(sha256sum <"$2" | cut -d' ' -f1)
  [ "$want" = "$got" ]
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fetch copies one object of the cluster bucket to a file of the work
# directory; it says why not on failure (quietly when the object is absent).
fetch() {
  if ! aws s3api get-object --bucket "$BUCKET_NAME" --key "$1" "$work/$2" >/dev/null 2>"$work/s3.err"; then
    rm -f "$work/$2"
    if ! grep -q NoSuchKey "$work/s3.err"; then
      log "s3://$BUCKET_NAME/$1: $(tail -n 1 "$work/s3.err")"
    fi
    return 1
  fi
}

# signal reports to CloudFormation, once in the life of the node.
signal() {
  if [ -e "$state_dir/signalled" ]; then
    return 0
  fi
  if ! command -v cfn-signal >/dev/null; then
    log "cfn-signal is missing: the stack will time out"
  elif ! cfn-signal --exit-code "$1" --reason "$2" --stack "$STACK_NAME" --resource AutoScalingGroup --region "$AWS_REGION"; then
    log "cfn-signal failed"
    return 0
  fi
  touch "$state_dir/signalled"
}

# terminating says whether Auto Scaling is terminating this instance.
terminating() {
  [ "$(imds autoscaling/target-lifecycle-state 2>/dev/null)" = Terminated ]
}

# trusted_ca prints the file of the swarm CA certificate this engine
# trusts.
trusted_ca() {
  printf '%s/swarm/certificates/swarm-root-ca.crt\n' "$(docker info --format '{{.DockerRootDir}}')"
}

# fresh_status fetches the swarm's status snapshot; it fails when there is
# none younger than stale_after (managers that publish none, or are
# down).
fresh_status() {
  local time
  fetch "$status_key" status.json || return 1
  time=$(jq -r '.time // ""' "$work/status.json" 2>/dev/null) || return 1
  time=$(date -d "$time" +%s 2>/dev/null) || return 1
  [ $(($(date +%s) - time)) -le "$stale_after" ]
}

# membership prints what the fresh status snapshot says about this node:
# ready; early when it does not show the node Ready but was taken before
# the node joined; absent or other (its state) otherwise.
membership() {
  local id=$1 since=$2 state
  state=$(jq -r --arg id "$id" '[.nodes[] | select(.nodeId == $id) | .state][0] // "absent"' "$work/status.json")
  if [ "$state" = ready ]; then
    echo ready
  elif [ "$(date -d "$(jq -r .time "$work/status.json")" +%s)" -lt "$since" ]; then
    echo early
  elif [ "$state" = absent ]; then
    echo absent
  else
    echo other
  fi
}

# in_published_swarm says whether the engine is active in the swarm whose
# CA certificate the snapshot (when fresh) or the published join token
# names.
in_published_swarm() {
  local state ca digest
  state=$(swarm_state) || return 1
  [ "$state" = active ] || return 1
  ca=$(trusted_ca)
  [ -e "$ca" ] || return 1
  if [ "$1" = status ]; then
    digest=$(jq -r '.caDigest // ""' "$work/status.json")
    [ "$digest" = "$(sha256sum <"$ca" | cut -d' ' -f1)" ]
    return
  fi
  ca_matches_token "$work/worker-token" "$ca" 2>/dev/null
}

# join leaves whatever swarm the engine is in and joins the published one
# through the first manager that answers.
join() {
  local token manager
  token=$(cat "$work/worker-token")
  fetch "$join_prefix/ca.pem" ca.pem || return 1
  if ! ca_matches_token "$work/worker-token" "$work/ca.pem"; then
    log "the published CA certificate does not match the join token (published by another swarm, or being replaced)"
    return 1
  fi
  : >"$work/managers"
  if fetch "$managers_key" managers.published; then
    while read -r manager; do
      if valid manager "$manager"; then
        echo "$manager" >>"$work/managers"
      fi
    done <"$work/managers.published"
  fi
  if [ ! -s "$work/managers" ]; then
    log "no manager published in s3://$BUCKET_NAME/$managers_key yet"
    return 1
  fi
  if [ "$(swarm_state)" != inactive ]; then
    log "leaving the swarm this node was in"
    timeout 60 docker swarm leave --force >/dev/null 2>&1 || true
  fi
  while read -r manager; do
    # Bounded, with no input: the engine gives up waiting after 20 s and
    # goes on joining in the background, but a wedged engine must not stop
    # this loop.
    if timeout 90 docker swarm join --token "$token" --advertise-addr "$PRIVATE_IP" "$manager" </dev/null >/dev/null 2>"$work/join.err"; then
      log "joined the swarm at $manager as a worker of group $NODE_GROUP ($INSTANCE_TYPE)"
      date +%s >"$state_dir/joined"
      pause=$retry_min
      install -m 0644 "$work/ca.pem" "$root/etc/clusterctl/swarm-ca.pem"
      return 0
    fi
    log "joining the swarm at $manager: $(tail -n 1 "$work/join.err")"
    if [ "$(swarm_state)" = pending ]; then
      # The join goes on in the background; the next round sees how it ended.
      return 1
    fi
  done <"$work/managers"
  return 1
}

last_ready=0

# converge makes one round: it says (by its status) whether the node is
# Ready in the published swarm, and joins when it is not in it. While the
# node is in the swarm, a round reads only the status snapshot.
converge() {
  local source=token id joined seen
  if fresh_status; then
    source=status
  fi
  if [ "$source" = token ] || ! in_published_swarm status; then
    if ! fetch "$join_prefix/worker-token" worker-token; then
      log "waiting for the join material in s3://$BUCKET_NAME/$join_prefix/"
      return 1
    fi
    valid token "$(cat "$work/worker-token")" || return 1
    if ! in_published_swarm token; then
      if [ "$(swarm_state)" = pending ]; then
        log "the last join did not complete: trying again"
        timeout 60 docker swarm leave --force >/dev/null 2>&1 || true
        return 1
      fi
      join
      return 1
    fi
  fi
  id=$(docker info --format '{{.Swarm.NodeID}}')
  valid node-id "$id" || return 1
  if [ "$source" = token ]; then
    # No snapshot to go by (managers that publish none): the
    # engine's own word.
    return 0
  fi
  joined=$(cat "$state_dir/joined" 2>/dev/null || echo 0)
  seen=$(membership "$id" "$joined")
  case $seen in
    ready)
      last_ready=$(date +%s)
      return 0
      ;;
    early)
      return 1
      ;;
  esac
  if [ "$last_ready" -lt "$joined" ]; then
    last_ready=$joined
  fi
  if [ $(($(date +%s) - last_ready)) -ge "$rejoin_after" ]; then
    log "the swarm has not shown this node Ready for $rejoin_after s ($seen): joining again"
    if fetch "$join_prefix/worker-token" worker-token && valid token "$(cat "$work/worker-token")"; then
      join
    fi
  fi
  return 1
}

if ! valid cluster "$CLUSTER_NAME" || ! valid group "$NODE_GROUP" || ! valid bucket "$BUCKET_NAME" ||
  ! valid bucket-key "$managers_key" || ! valid ipv4 "$PRIVATE_IP" || ! valid stack "$STACK_NAME" ||
  ! valid region "$AWS_REGION" || ! valid instance-type "$INSTANCE_TYPE"; then
  exit 1
fi
# ship_log copies this service's log lines (its stderr) to the journal
# and, a batch every 5 s at most, to this node's stream of the cluster's
# log group, node/<instance-id>. A batch CloudWatch does not take is
# dropped: the journal has it all, and the agent never waits for it.
ship_log() {
  local line n stream=node/$INSTANCE_ID
  local -a batch=()
  aws logs create-log-stream --log-group-name "$LOG_GROUP" --log-stream-name "$stream" >/dev/null 2>&1 || true
  while true; do
    n=0
    IFS= read -r -t 5 line || n=$?
    if [ "$n" -eq 0 ]; then
      printf '%s\n' "$line"
      batch+=("$(date +%s%3N) $line")
      if [ "${#batch[@]}" -lt 50 ]; then
        continue
      fi
    fi
    if [ "${#batch[@]}" -gt 0 ]; then
      printf '%s\n' "${batch[@]}" | jq -Rn '[inputs | capture("^(?<t>[0-9]+) (?<m>.*)$") | {timestamp: (.t | tonumber), message: .m}]' >"$work/events.json" &&
        aws logs put-log-events --cli-connect-timeout 5 --cli-read-timeout 10 --log-group-name "$LOG_GROUP" --log-stream-name "$stream" \
          --log-events "file://$work/events.json" >/dev/null 2>&1
      batch=()
    fi
    if [ "$n" -ne 0 ] && [ "$n" -le 128 ]; then
      return 0 # the service ended
    fi
  done
}
if [ -n "${LOG_GROUP:-}" ] && valid instance-id "$INSTANCE_ID"; then
  exec 2> >(ship_log >&2)
fi

install -d -m 0700 "$state_dir"
if [ ! -e "$state_dir/started" ]; then
  date +%s >"$state_dir/started"
fi
started=$(cat "$state_dir/started")
if [ "$(swarm_state)" = active ] && [ ! -e "$state_dir/joined" ]; then
  date +%s >"$state_dir/joined"
fi
pause=$retry_min
quiet=
while true; do
  if terminating; then
    if [ -z "$quiet" ]; then
      log "the instance is being terminated: no longer joining the swarm"
      quiet=1
    fi
    sleep "$check_every"
    continue
  fi
  if converge; then
    signal 0 "agent ready"
    pause=$retry_min
    sleep "$check_every"
    continue
  fi
  if [ $(($(date +%s) - started)) -ge "$join_timeout" ]; then
    signal 1 "clusterctl: agent not Ready in the swarm within $join_timeout s"
  fi
  sleep "$pause"
  pause=$((pause * 2 > retry_max ? retry_max : pause * 2))
done
CLUSTERCTL_AGENT_SERVICE
chmod 0755 "$root/usr/local/lib/clusterctl/agent.new"
mv -f "$root/usr/local/lib/clusterctl/agent.new" "$root/usr/local/lib/clusterctl/agent"
cat >"$root/etc/systemd/system/clusterctl-agent.service" <<'CLUSTERCTL_UNIT'
[Unit]
Description=clusterctl agent: keeps this node in the cluster's swarm
After=docker.service
Requires=docker.service

[Service]
ExecStart=/usr/local/lib/clusterctl/agent
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
CLUSTERCTL_UNIT
chmod 0644 "$root/etc/systemd/system/clusterctl-agent.service"
systemctl daemon-reload
systemctl enable --now clusterctl-agent.service
log "the agent service of group $group ($node_type, $node_lifecycle, $node_zone) started: it joins the swarm and signals readiness"
