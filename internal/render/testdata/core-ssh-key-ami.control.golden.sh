#!/bin/bash
# clusterctl control node program of cluster prod. The user data
# installs it as /usr/local/lib/clusterctl/control and runs its boot steps:
# shellcheck disable=SC2153
set -uo pipefail

root=${CLUSTERCTL_ROOT:-}
imds_url=${CLUSTERCTL_IMDS_URL:-http://169.254.169.254}
prefix=join/swarm
status_key=status/swarm.json
managers_key=join/swarm/managers
init_key=control/swarm-init
manager_token_key=control/manager-token
aliases_key=control/manager-aliases
backup_key=control/swarm-backup.tar.gz
changed_key=control/managers-changed
instance_label=clusterctl.instance-id
swarm_port=2377
state_dir=$root/var/lib/clusterctl/housekeeping
poll_wait=${CLUSTERCTL_POLL_WAIT:-10}
idle=${CLUSTERCTL_IDLE:-10}
status_every=${CLUSTERCTL_STATUS_INTERVAL:-15}
watch_every=${CLUSTERCTL_WATCH_INTERVAL:-2}
watch_for=${CLUSTERCTL_WATCH_FOR:-120}
dead_every=${CLUSTERCTL_DEAD_NODE_INTERVAL:-30}
dead_grace=${CLUSTERCTL_DEAD_NODE_GRACE:-300}
drain_timeout=${CLUSTERCTL_DRAIN_TIMEOUT:-600}
drain_poll=${CLUSTERCTL_DRAIN_POLL:-2}
heartbeat_every=${CLUSTERCTL_HEARTBEAT_INTERVAL:-60}
visibility=${CLUSTERCTL_NOTICE_VISIBILITY:-300}
join_timeout=${CLUSTERCTL_MANAGER_JOIN_TIMEOUT:-540}
join_pause=${CLUSTERCTL_MANAGER_JOIN_PAUSE:-5}
backup_every=${CLUSTERCTL_BACKUP_INTERVAL:-900}
backup_spacing=${CLUSTERCTL_BACKUP_SPACING:-30}
request_max_age=${CLUSTERCTL_REQUEST_MAX_AGE:-600}

log() { printf 'clusterctl: %s\n' "$*" >&2; }

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

imds() {
local token
token=$(curl -sSf --retry 5 --retry-connrefused --max-time 5 -X PUT \
-H 'X-aws-ec2-metadata-token-ttl-seconds: 300' "$imds_url/latest/api/token")
curl -sSf --retry 5 --retry-connrefused --max-time 5 \
-H "X-aws-ec2-metadata-token: $token" "$imds_url/latest/meta-data/$1"
}

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

docker_info() { docker info --format '{{json .}}'; }

swarm_state() { docker info --format '{{.Swarm.LocalNodeState}}'; }

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

ca_matches_token() {
local want got
want=$(python3 -c 'import sys
p = sys.stdin.read().strip().split("-")
if len(p) == 5 and p[:2] == ["SWMTKN", "2"]: del p[2]
if len(p) != 4 or p[0] != "SWMTKN" or p[1] not in ("1", "2") or len(p[2]) != 50: sys.exit("clusterctl: malformed swarm join token")
print("%064x" % int(p[2], 36))' <"$1") || return 1
got=$(sha256sum <"$2" | cut -d' ' -f1)
[ "$want" = "$got" ]
}

put() {
aws s3api put-object --bucket "$BUCKET_NAME" --key "$1" --body "$2" \
--server-side-encryption AES256 --content-type "$3" ${4:+--metadata "$4"} >/dev/null
}

leader() {
docker node inspect self 2>/dev/null | jq -e '.[0].ManagerStatus.Leader == true' >/dev/null
}

nodes() {
local ids
ids=$(docker node ls -q) || return 1
# shellcheck disable=SC2086
docker node inspect $ids
}

tasks() {
local ids
ids=$(docker "$@" -q --no-trunc) || return 1
if [ -z "$ids" ]; then
echo '[]'
return 0
fi
# shellcheck disable=SC2086
docker inspect --type task $ids
}

services() {
local ids
ids=$(docker service ls -q) || return 1
if [ -z "$ids" ]; then
echo '[]' | tee "$2" >"$1"
return 0
fi
# shellcheck disable=SC2086
docker service inspect $ids >"$1" && tasks service ps $ids >"$2"
}

publish_join_material() {
local force=${1:-} dir sum line self
dir=$(mktemp -d) || return 1
if ! docker swarm join-token -q worker >"$dir/worker-token" || ! docker swarm ca >"$dir/ca.pem" ||
! docker swarm join-token -q manager >"$dir/manager-token" ||
! nodes >"$dir/nodes.json" || ! self=$(docker info --format '{{.Swarm.NodeID}}'); then
rm -rf "$dir"
return 1
fi
jq -r --arg self "$self" --arg me "$CONTROL_PRIVATE_IP" --arg port "$swarm_port" '
.[] | select(.Spec.Role == "manager" and .ManagerStatus.Reachability == "reachable")
| (if .ID == $self then $me elif (.Status.Addr // "0.0.0.0") != "0.0.0.0" then .Status.Addr
else (.ManagerStatus.Addr | sub(":[0-9]+$"; "")) end) + ":" + $port' "$dir/nodes.json" | sort >"$dir/managers"
jq -r --arg self "$self" --arg me "$CONTROL_PRIVATE_IP" '
.[] | select(.Spec.Role == "manager" and .ManagerStatus != null)
| (.ManagerStatus.Addr | sub(":[0-9]+$"; "")) as $known
| (if .ID == $self then $me else (.Status.Addr // "0.0.0.0") end) as $real
| select($real != "0.0.0.0" and $known != $real) | $known + " " + $real' "$dir/nodes.json" | sort >"$dir/aliases"
while read -r line; do
if ! valid manager "$line"; then
rm -rf "$dir"
return 1
fi
done <"$dir/managers"
if ! valid token "$(cat "$dir/worker-token")" || ! valid token "$(cat "$dir/manager-token")" ||
! ca_matches_token "$dir/worker-token" "$dir/ca.pem"; then
log "the swarm's CA certificate does not match the digest in its join token"
rm -rf "$dir"
return 1
fi
while read -r line; do
if ! valid ipv4 "${line% *}" || ! valid ipv4 "${line#* }"; then
rm -rf "$dir"
return 1
fi
done <"$dir/aliases"
sum=$(cat "$dir/worker-token" "$dir/manager-token" "$dir/ca.pem" "$dir/managers" "$dir/aliases" | sha256sum | cut -d' ' -f1)
if [ "$force" != force ] && [ "$(cat "$state_dir/published" 2>/dev/null)" = "$sum" ]; then
rm -rf "$dir"
return 0
fi
if put "$prefix/ca.pem" "$dir/ca.pem" application/x-pem-file &&
put "$manager_token_key" "$dir/manager-token" text/plain &&
put "$aliases_key" "$dir/aliases" text/plain &&
put "$managers_key" "$dir/managers" text/plain &&
put "$prefix/worker-token" "$dir/worker-token" text/plain; then
install -d -m 0700 "$state_dir"
echo "$sum" >"$state_dir/published"
log "published the join material ($(wc -l <"$dir/managers") managers)"
rm -rf "$dir"
return 0
fi
rm -rf "$dir"
return 1
}

next_status=0
watch_until=0

publish_status() {
local now dir digest backup
now=$(date +%s)
if [ "$now" -lt "$next_status" ]; then
return 0
fi
dir=$(mktemp -d) || return 1
if ! nodes >"$dir/nodes.json" || ! services "$dir/services.json" "$dir/tasks.json" ||
! digest=$(docker swarm ca | sha256sum | cut -d' ' -f1); then
rm -rf "$dir"
return 1
fi
backup=
if [ -s "$state_dir/backup" ]; then
backup=$(date -u -d "@$(cat "$state_dir/backup")" +%Y-%m-%dT%H:%M:%SZ) || backup=
fi
jq -n --slurpfile nodes "$dir/nodes.json" --slurpfile tasks "$dir/tasks.json" --slurpfile services "$dir/services.json" \
--arg cluster "$CLUSTER_NAME" --arg time "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
--arg publisher "$INSTANCE_ID" --arg ilabel "$instance_label" --arg digest "$digest" --arg backup "$backup" '
($tasks[0] | unique_by(.ID) | map(select(.Status.State == "running") | .NodeID)
| group_by(.) | map({key: .[0], value: length}) | from_entries) as $running
| {
version: 1,
cluster: $cluster,
time: $time,
publisher: $publisher,
caDigest: $digest,
lastBackup: (if $backup == "" then null else $backup end),
nodes: [$nodes[0][] | {
nodeId: .ID,
instanceId: (.Description.Engine.Labels[$ilabel] // ""),
hostname: .Description.Hostname,
address: (if (.Status.Addr // "0.0.0.0") == "0.0.0.0" and .ManagerStatus != null
then (.ManagerStatus.Addr | sub(":[0-9]+$"; "")) else .Status.Addr end),
role: .Spec.Role,
state: .Status.State,
availability: .Spec.Availability,
managerStatus: (if .ManagerStatus == null then ""
elif .ManagerStatus.Leader then "leader"
else .ManagerStatus.Reachability end),
engineLabels: (.Description.Engine.Labels // {}),
engineVersion: .Description.Engine.EngineVersion,
runningTasks: ($running[.ID] // 0)
}] | sort_by(.nodeId),
services: [$services[0][] | {ID, Endpoint} + (.Spec | {Name, Mode} + (.TaskTemplate | {Image: .ContainerSpec.Image, Placement}))],
tasks: [$tasks[0][] | {ServiceID, NodeID, DesiredState, Status}]
}' >"$dir/status.json" &&
put "$status_key" "$dir/status.json" application/json
local rc=$?
rm -rf "$dir"
if [ "$rc" -eq 0 ]; then
next_status=$((now + status_every))
[ "$now" -ge "$watch_until" ] || next_status=$((now + watch_every))
fi
return "$rc"
}

manager_count() {
local ids
ids=$(docker node ls --filter role=manager -q) || return 1
wc -w <<<"$ids"
}

members() {
nodes | jq -r '.[] | .ID + " " + .Spec.Role' | sort | sha256sum | cut -d' ' -f1
}

managers_known=
note_managers() {
local f since=0
f=$(mktemp) || return 1
if [ -z "$managers_known" ]; then
if aws s3api get-object --bucket "$BUCKET_NAME" --key "$changed_key" "$f" >/dev/null 2>"$f.err"; then
managers_known=$(cat "$f")
elif ! grep -q NoSuchKey "$f.err"; then
rm -f "$f" "$f.err"
return 1
fi
fi
if [ "${managers_known%% *}" != "$1" ]; then
[ -z "$managers_known" ] || since=$(date +%s)
echo "$1 $since" >"$f" && put "$changed_key" "$f" text/plain && managers_known="$1 $since"
fi
local rc=$?
rm -f "$f" "$f.err"
return "$rc"
}

back_up() {
local force=${1:-} now count current last dir data pid rc
now=$(date +%s)
count=$(manager_count) || return 1
note_managers "$count" || return 1
if [ "$count" -gt 1 ]; then
if aws s3api head-object --bucket "$BUCKET_NAME" --key "$backup_key" >/dev/null 2>"$state_dir/head.err"; then
aws s3api delete-object --bucket "$BUCKET_NAME" --key "$backup_key" >/dev/null || return 1
log "removed the backup of the swarm state: $count managers keep it"
elif ! grep -q '404\|Not Found' "$state_dir/head.err"; then
return 1
fi
rm -f "$state_dir/backup" "$state_dir/backup-members"
return 0
fi
current=$(members) || return 1
last=$(cat "$state_dir/backup" 2>/dev/null || echo 0)
if [ "$force" != force ] && [ "$now" -lt $((last + backup_every)) ] &&
{ [ "$(cat "$state_dir/backup-members" 2>/dev/null)" = "$current" ] || [ "$now" -lt $((last + backup_spacing)) ]; }; then
return 0
fi
data=$(docker info --format '{{.DockerRootDir}}') || return 1
pid=$(cat "$root/var/run/docker.pid" 2>/dev/null)
if ! [[ $pid =~ ^[0-9]+$ ]] || ! kill -0 "$pid" 2>/dev/null; then
log "no engine process to pause for the backup"
return 1
fi
dir=$(mktemp -d) || return 1
trap 'kill -CONT "$pid"; exit 143' TERM INT
kill -STOP "$pid" || { trap - TERM INT; rm -rf "$dir"; return 1; }
tar -czf "$dir/swarm.tar.gz" -C "$data" swarm
rc=$?
kill -CONT "$pid"
trap - TERM INT
if [ "$rc" -eq 0 ] && put "$backup_key" "$dir/swarm.tar.gz" application/gzip "taken=$now"; then
install -d -m 0700 "$state_dir"
echo "$now" >"$state_dir/backup"
echo "$current" >"$state_dir/backup-members"
log "backed the swarm state up to s3://$BUCKET_NAME/$backup_key"
else
log "backing the swarm state up failed"
rc=1
fi
rm -rf "$dir"
return "$rc"
}

remove_node() {
local id=$1 role=$2
if [ "$role" = manager ] && ! docker node demote "$id" >/dev/null; then
return 1
fi
docker node rm --force "$id" >/dev/null
}

next_dead=0

clean_dead_nodes() {
local now dir id since role instance state f
now=$(date +%s)
if [ "$now" -lt "$next_dead" ]; then
return 0
fi
next_dead=$((now + dead_every))
dir=$(mktemp -d) || return 1
install -d -m 0700 "$state_dir/down"
if ! nodes >"$dir/nodes.json"; then
rm -rf "$dir"
return 1
fi
jq -r '.[] | select(.Status.State == "down") | .ID' "$dir/nodes.json" >"$dir/down"
for f in "$state_dir/down"/*; do
if [ -e "$f" ] && ! grep -qxF "$(basename "$f")" "$dir/down"; then
rm -f "$f"
fi
done
: >"$dir/due"
while read -r id; do
valid node-id "$id" || continue
if [ ! -e "$state_dir/down/$id" ]; then
echo "$now" >"$state_dir/down/$id"
fi
since=$(cat "$state_dir/down/$id")
if [ $((now - since)) -ge "$dead_grace" ]; then
echo "$id" >>"$dir/due"
fi
done <"$dir/down"
jq -r --rawfile due "$dir/due" --arg ilabel "$instance_label" '
($due | split("\n") | map(select(. != ""))) as $due
| . as $all
| .[] | .ID as $id | select(any($due[]; . == $id))
| (.Description.Engine.Labels[$ilabel] // "") as $i
| [.ID, .Spec.Role, $i,
(if $i != "" and ($all | any(.ID != $id and .Status.State == "ready"
and .Description.Engine.Labels[$ilabel] == $i)) then "replaced" else "-" end)]
| @tsv' "$dir/nodes.json" >"$dir/candidates"
local -a ask=()
while IFS=$'\t' read -r id role instance state; do
if [ -n "$instance" ] && [ "$state" != replaced ] && valid instance-id "$instance"; then
ask+=("$instance")
fi
done <"$dir/candidates"
: >"$dir/instances"
if [ ${#ask[@]} -gt 0 ] && ! aws ec2 describe-instances --filters "Name=instance-id,Values=$(IFS=,; echo "${ask[*]}")" \
--query 'Reservations[].Instances[].[InstanceId,State.Name]' --output text >"$dir/instances"; then
rm -rf "$dir"
return 1
fi
while IFS=$'\t' read -r id role instance state; do
if [ "$state" != replaced ]; then
[ -n "$instance" ] || continue
state=$(awk -v i="$instance" '$1 == i {print $2}' "$dir/instances")
case $state in
"" | terminated | shutting-down) ;;
*) continue ;;
esac
state=${state:-gone}
fi
if remove_node "$id" "$role"; then
rm -f "$state_dir/down/$id"
log "removed Down node $id of instance ${instance:-?} ($state)"
fi
done <"$dir/candidates"
rm -rf "$dir"
}

notice_value() { jq -r --arg k "$2" '.body | fromjson | .detail[$k] // ""' "$1"; }

heartbeat() {
local f t
for f in "$state_dir/notices"/*.json; do
[ -e "$f" ] || continue
t=$(notice_value "$f" LifecycleActionToken)
if valid lifecycle-token "$t" 2>/dev/null && ! aws autoscaling record-lifecycle-action-heartbeat \
--auto-scaling-group-name "$(notice_value "$f" AutoScalingGroupName)" --lifecycle-hook-name "$(notice_value "$f" LifecycleHookName)" \
--lifecycle-action-token "$t" --instance-id "$(notice_value "$f" EC2InstanceId)" >/dev/null; then
log "heartbeat of the lifecycle action of $(notice_value "$f" EC2InstanceId) failed"
fi
aws sqs change-message-visibility --queue-url "$LIFECYCLE_QUEUE_URL" \
--receipt-handle "$(jq -r .receipt "$f")" --visibility-timeout "$visibility" >/dev/null 2>&1 || true
done
}

complete_action() {
local out
if out=$(aws autoscaling complete-lifecycle-action --auto-scaling-group-name "$group" \
--lifecycle-hook-name "$hook" --lifecycle-action-token "$token" --instance-id "$instance" \
--lifecycle-action-result CONTINUE 2>&1); then
log "completed the lifecycle action of $instance"
return 0
fi
if [[ $out == *"No active Lifecycle Action"* ]]; then
log "the lifecycle action of $instance has already ended"
return 0
fi
log "completing the lifecycle action of $instance: $out"
return 1
}

forget_notice() {
local file=$1
aws sqs delete-message --queue-url "$LIFECYCLE_QUEUE_URL" --receipt-handle "$(jq -r .receipt "$file")" >/dev/null 2>&1 ||
log "the notice was handled but is no longer on the queue"
rm -f "$file"
}

drained() {
local file=$1 gone id service
gone=$(jq -c .nodes "$file")
for id in $(jq -r '.nodes[]' "$file"); do
if [ "$(docker node inspect "$id" 2>/dev/null | jq -r '.[0].Status.State')" = ready ] &&
[ "$(tasks node ps "$id" | jq '[.[] | select(.Status.State | IN("new", "allocated", "pending",
"assigned", "accepted", "preparing", "ready", "starting", "running"))] | length')" != 0 ]; then
return 1
fi
done
for service in $(jq -r '.services[]' "$file"); do
local replicas
replicas=$(docker service inspect "$service" 2>/dev/null | jq -r '.[0].Spec.Mode.Replicated.Replicas // empty') || continue
[ -n "$replicas" ] || continue
if ! tasks service ps "$service" --filter desired-state=running | jq -e --argjson gone "$gone" --argjson want "$replicas" '
([.[] | select(.Status.State == "running" and (.NodeID | IN($gone[]) | not))] | length) as $running
| [.[] | select(.Status.State != "running")] as $waiting
| $running >= $want or ($waiting | length > 0 and all(.Status.State == "pending"
and ((.Status.Err // "") | startswith("no suitable node"))))' >/dev/null; then
return 1
fi
done
return 0
}

handle_interruption() {
local file=$1 kind=$2 instance
instance=$(notice_value "$file" instance-id)
if ! valid instance-id "$instance"; then
log "ignoring a notice of $kind without an instance"
else
set_availability "$instance" drain "$kind" || return 1
fi
forget_notice "$file"
}

set_availability() {
local ids id
ids=$(nodes | jq -r --arg i "$1" --arg l "$instance_label" --arg a "$2" \
'.[] | select(.Description.Engine.Labels[$l] == $i and .Spec.Availability != $a) | .ID') || return 1
for id in $ids; do
docker node update --availability "$2" "$id" >/dev/null || return 1
log "set node $id of instance $1 to $2: $3"
done
}

handle_request() {
local file=$1 instance want request age
request=$(notice_value "$file" request-id)
instance=$(notice_value "$file" instance-id)
want=$(notice_value "$file" availability)
age=$(($(date +%s) - $(jq '.sent // 0' "$file") / 1000))
if [ "$(notice_value "$file" cluster)" != "$CLUSTER_NAME" ] || ! valid request-id "$request" ||
! valid instance-id "$instance" || ! valid availability "$want"; then
log "ignoring a node availability request of another shape or cluster"
elif [ "$age" -gt "$request_max_age" ]; then
log "dropping request $request to set instance $instance $want: made $age s ago"
else
set_availability "$instance" "$want" "request $request" || return 1
next_status=0
watch_until=$(($(date +%s) + watch_for))
publish_status || log "publishing the status snapshot failed"
fi
forget_notice "$file"
}

handle_notice() {
local file=$1 kind transition owner sent now deadline next_beat id role
kind=$(jq -r '.body | fromjson | ."detail-type" // ""' "$file")
case $kind in
"EC2 Spot Instance Interruption Warning" | "EC2 Instance Rebalance Recommendation")
handle_interruption "$file" "$kind"
return
;;
NodeAvailabilityRequest)
handle_request "$file"
return
;;
esac
transition=$(notice_value "$file" LifecycleTransition)
group=$(notice_value "$file" AutoScalingGroupName)
hook=$(notice_value "$file" LifecycleHookName)
token=$(notice_value "$file" LifecycleActionToken)
instance=$(notice_value "$file" EC2InstanceId)
if [ "$kind" != "EC2 Instance-terminate Lifecycle Action" ] || [ "$transition" != autoscaling:EC2_INSTANCE_TERMINATING ] ||
! valid auto-scaling-group "$group" || ! valid hook "$hook" || ! valid lifecycle-token "$token" || ! valid instance-id "$instance"; then
log "ignoring a notice that is not an instance termination of a lifecycle hook"
forget_notice "$file"
return 0
fi
sent=$(jq -r '.body | fromjson | .time // "now"' "$file")
sent=$(date -d "$sent" +%s 2>/dev/null) || sent=$(date +%s)
if [ $(($(date +%s) - sent)) -gt 172800 ]; then
log "giving up the termination notice of $instance: sent more than 48 hours ago"
forget_notice "$file"
return 0
fi
# shellcheck disable=SC2016
if ! owner=$(aws autoscaling describe-auto-scaling-groups --auto-scaling-group-names "$group" \
--query 'AutoScalingGroups[0].Tags[?Key==`clusterctl:cluster`].Value | [0]' --output text); then
return 1
fi
if [ "$owner" != "$CLUSTER_NAME" ]; then
log "ignoring the termination of $instance: group $group is not of cluster $CLUSTER_NAME"
forget_notice "$file"
return 0
fi

if [ "$instance" = "$INSTANCE_ID" ]; then
local self count
self=$(docker info --format '{{.Swarm.NodeID}}') || return 1
count=$(manager_count) || return 1
if [ "$count" -gt 1 ]; then
docker node demote "$self" >/dev/null || return 1
log "this manager's instance $instance is terminating: demoted it; the next leader removes it"
aws sqs change-message-visibility --queue-url "$LIFECYCLE_QUEUE_URL" \
--receipt-handle "$(jq -r .receipt "$file")" --visibility-timeout 0 >/dev/null 2>&1 || true
rm -f "$file"
return 0
fi
log "the last manager's instance $instance is terminating: backing the swarm up for its replacement"
back_up force || return 1
complete_action || return 1
forget_notice "$file"
return 0
fi
if [ "$(jq -r '.nodes == null' "$file")" = true ]; then
local nodes_of services self
self=$(docker info --format '{{.Swarm.NodeID}}') || return 1
nodes_of=$(nodes | jq -c --arg i "$instance" --arg ilabel "$instance_label" --arg self "$self" \
'[.[] | select(.Description.Engine.Labels[$ilabel] == $i and .ID != $self) | .ID]') || return 1
services='[]'
for id in $(jq -r '.[]' <<<"$nodes_of"); do
services=$(tasks node ps "$id" --filter desired-state=running | jq -c --argjson s "$services" \
'$s + [.[].ServiceID] | unique') || return 1
done
if ! jq --argjson n "$nodes_of" --argjson s "$services" --arg t "$(date +%s)" \
'.nodes = $n | .services = $s | .since = ($t | tonumber)' "$file" >"$file.new"; then
return 1
fi
mv -f "$file.new" "$file"
fi
if [ "$(jq '.nodes | length' "$file")" = 0 ]; then
log "instance $instance is terminating but never joined the swarm"
complete_action || return 1
forget_notice "$file"
return 0
fi
for id in $(jq -r '.nodes[]' "$file"); do
if [ "$(docker node inspect "$id" 2>/dev/null | jq -r '.[0].Spec.Availability')" = active ]; then
docker node update --availability drain "$id" >/dev/null || return 1
log "draining node $id of instance $instance"
fi
done
deadline=$(($(jq .since "$file") + drain_timeout))
next_beat=0
until drained "$file"; do
now=$(date +%s)
if [ "$now" -ge "$deadline" ]; then
log "instance $instance: its tasks did not all move within $drain_timeout s; removing it anyway"
break
fi
if [ "$now" -ge "$next_beat" ]; then
receive_notices 0 || true
heartbeat
next_beat=$((now + heartbeat_every))
fi
publish_status || log "publishing the status snapshot failed"
sleep "$drain_poll"
done
for id in $(jq -r '.nodes[]' "$file"); do
role=$(docker node inspect "$id" 2>/dev/null | jq -r '.[0].Spec.Role') || continue
if [ -z "$role" ] || [ "$role" = null ]; then
continue
fi
remove_node "$id" "$role" || return 1
log "removed node $id of instance $instance from the swarm"
done
complete_action || return 1
forget_notice "$file"
}

receive_notices() {
local out i file
out=$(aws sqs receive-message --queue-url "$LIFECYCLE_QUEUE_URL" --max-number-of-messages 10 \
--wait-time-seconds "$1" --visibility-timeout "$visibility" --attribute-names SentTimestamp --output json) || return 1
install -d -m 0700 "$state_dir/notices"
for i in $(jq '.Messages // [] | keys[]' <<<"$out"); do
file="$state_dir/notices/$(jq -r --argjson i "$i" '.Messages[$i].MessageId | gsub("[^-a-zA-Z0-9]"; "")' <<<"$out").json"
if [ -e "$file" ]; then
jq --arg r "$(jq -r --argjson i "$i" '.Messages[$i].ReceiptHandle' <<<"$out")" '.receipt = $r' "$file" >"$file.new" &&
mv -f "$file.new" "$file" || return 1
else
jq --argjson i "$i" '.Messages[$i] | {id: .MessageId, receipt: .ReceiptHandle, body: .Body,
sent: ((.Attributes.SentTimestamp // "0") | tonumber)}' <<<"$out" >"$file" || return 1
fi
done
}

resume_engine() {
local pid
pid=$(cat "$root/var/run/docker.pid" 2>/dev/null) || return 0
if [[ $pid =~ ^[0-9]+$ ]]; then
kill -CONT "$pid" 2>/dev/null || true
fi
}

housekeeping() {
local f wait
install -d -m 0700 "$state_dir" "$state_dir/notices"
resume_engine
log "housekeeping of cluster $CLUSTER_NAME started"
while true; do
apply_aliases || log "applying the managers' addresses failed"
if ! leader; then
managers_known=''
sleep "$idle"
continue
fi
publish_join_material || log "publishing the join material failed"
publish_status || log "publishing the status snapshot failed"
clean_dead_nodes || log "the dead-node check failed"
back_up || log "the backup of the swarm state failed"
for f in "$state_dir/notices"/*.json; do
if [ -e "$f" ]; then
handle_notice "$f" || log "handling the notice in $f failed; trying again"
fi
done
wait=$poll_wait
[ "$(date +%s)" -ge "$watch_until" ] || wait=$watch_every
receive_notices "$wait" || { log "receiving notices failed"; sleep "$idle"; }
done
}

install_node() {
local ip instance_id instance_type stack=${CLUSTERCTL_STACK_NAME-} region=${CLUSTERCTL_STACK_REGION-}
local bucket=${CLUSTERCTL_BUCKET-} queue=${CLUSTERCTL_QUEUE-} log_driver=${CLUSTERCTL_LOG_DRIVER-}
if ! valid stack "$stack" || ! valid region "$region" || ! valid bucket "$bucket" || ! valid queue-url "$queue"; then
return 1
fi
if ! ip=$(imds local-ipv4) || ! instance_id=$(imds instance-id) || ! instance_type=$(imds instance-type); then
return 1
fi
if ! valid ipv4 "$ip" || ! valid instance-id "$instance_id" || ! valid instance-type "$instance_type"; then
return 1
fi
retry dnf install -y docker jq iptables-nft >/dev/null || return 1
install -d -m 0755 "$root/etc/docker" "$root/etc/clusterctl" "$root/etc/systemd/system" || return 1
{
printf '{\n  "labels": ["clusterctl.group=control", "clusterctl.instance-type=%s", "%s=%s"]' \
"$instance_type" "$instance_label" "$instance_id" &&
{ [ "$log_driver" != awslogs ] || printf ',"log-driver":"awslogs","log-opts":{"awslogs-group":"/clusterctl/prod","awslogs-region":"%s",%s"mode":"non-blocking","max-buffer-size":"4m","tag":"{{with index .ContainerLabels \\\"com.docker.swarm.service.name\\\"}}service/{{.}}{{else}}container{{end}}/{{.Name}}@%s"}' "$region" '' "$instance_id"; } && printf '\n}\n'
} >"$root/etc/docker/daemon.json" || return 1
chmod 0644 "$root/etc/docker/daemon.json"
printf '%s=%q\n' \
CLUSTER_NAME 'prod' \
NODE_ROLE control \
NODE_GROUP control \
STACK_NAME "$stack" \
AWS_REGION "$region" \
BUCKET_NAME "$bucket" \
LIFECYCLE_QUEUE_URL "$queue" \
INSTANCE_ID "$instance_id" \
INSTANCE_TYPE "$instance_type" \
CONTROL_PRIVATE_IP "$ip" >"$root/etc/clusterctl/node.env" || return 1
chmod 0644 "$root/etc/clusterctl/node.env"
printf '%s\n' '[Unit]' \
"Description=clusterctl housekeeping: drains terminating nodes, removes dead ones, publishes the swarm's state" \
'After=docker.service' 'Requires=docker.service' '' '[Service]' \
'ExecStart=/usr/local/lib/clusterctl/control housekeeping' 'Restart=always' 'RestartSec=5' '' \
'[Install]' 'WantedBy=multi-user.target' >"$root/etc/systemd/system/clusterctl-housekeeping.service" || return 1
chmod 0644 "$root/etc/systemd/system/clusterctl-housekeeping.service"
systemctl daemon-reload && systemctl enable --now docker && wait_for_docker
}

get() {
if aws s3api get-object --bucket "$BUCKET_NAME" --key "$1" "$2" >"$2.meta" 2>"$2.err"; then
return 0
fi
if ! grep -q NoSuchKey "$2.err"; then
log "s3://$BUCKET_NAME/$1: $(tail -n 1 "$2.err")"
fi
rm -f "$2"
return 1
}

claim() {
local etag=${1:-} dir
local -a cond=(--if-none-match '*')
if [ -n "$etag" ]; then
cond=(--if-match "$etag")
fi
dir=$(mktemp -d) || return 1
jq -n --arg i "$INSTANCE_ID" --arg a "$CONTROL_PRIVATE_IP" --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
'{instanceId: $i, address: $a, time: $t}' >"$dir/marker" || { rm -rf "$dir"; return 1; }
if aws s3api put-object --bucket "$BUCKET_NAME" --key "$init_key" --body "$dir/marker" --server-side-encryption AES256 \
--content-type application/json "${cond[@]}" >/dev/null 2>"$dir/err"; then
rm -rf "$dir"
return 0
fi
if ! grep -q PreconditionFailed "$dir/err"; then
log "writing s3://$BUCKET_NAME/$init_key: $(tail -n 1 "$dir/err")"
fi
rm -rf "$dir"
return 1
}

answers() {
# shellcheck disable=SC2016
timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null
}

alive() {
local out
if out=$(aws ec2 describe-instances --instance-ids "$1" --query 'Reservations[0].Instances[0].State.Name' --output text 2>&1); then
[ "$out" = pending ] || [ "$out" = running ]
return
fi
[[ $out != *InvalidInstanceID* ]]
}

stale_marker() {
local dir owner manager
dir=$(mktemp -d) || return 1
if ! get "$init_key" "$dir/marker"; then
rm -rf "$dir"
return 1
fi
owner=$(jq -r '.instanceId // ""' "$dir/marker" 2>/dev/null)
if [ "$owner" != "$INSTANCE_ID" ] && valid instance-id "$owner" 2>/dev/null; then
if get "$managers_key" "$dir/managers"; then
while read -r manager; do
if valid manager "$manager" && answers "${manager%:*}" "${manager##*:}"; then
rm -rf "$dir"
return 1
fi
done <"$dir/managers"
fi
if alive "$owner"; then
rm -rf "$dir"
return 1
fi
log "the swarm's managers are gone (the initialising instance $owner too): taking over"
fi
jq -r '.ETag' "$dir/marker.meta"
rm -rf "$dir"
}

apply_aliases() {
local dir known real rule
dir=$(mktemp -d) || return 1
if ! get "$aliases_key" "$dir/aliases"; then
rm -rf "$dir"
return 0
fi
while read -r known real; do
if ! valid ipv4 "$known" || ! valid ipv4 "$real"; then
continue
fi
iptables -t nat -S OUTPUT 2>/dev/null | grep -F -- "-d $known/32 " | grep -vF -- "--to-destination $real:$swarm_port" |
while read -r _ _ rule; do
# shellcheck disable=SC2086
iptables -t nat -D OUTPUT $rule || true
done
if ! iptables -t nat -C OUTPUT -p tcp -d "$known" --dport "$swarm_port" -j DNAT --to-destination "$real:$swarm_port" 2>/dev/null; then
iptables -t nat -A OUTPUT -p tcp -d "$known" --dport "$swarm_port" -j DNAT --to-destination "$real:$swarm_port" &&
log "the swarm knows manager $real as $known: reaching it there"
fi
done <"$dir/aliases"
rm -rf "$dir"
}

joined_later() {
local n=0
while [ "$(swarm_state)" = pending ] && [ "$n" -lt 60 ]; do
sleep 2
n=$((n + 2))
done
[ "$(swarm_state)" = active ]
}

join_managers() {
local dir manager
dir=$(mktemp -d) || return 1
if ! get "$manager_token_key" "$dir/token" || ! valid token "$(cat "$dir/token")" || ! get "$managers_key" "$dir/managers"; then
rm -rf "$dir"
return 1
fi
while read -r manager; do
if ! valid manager "$manager" || [ "$manager" = "$CONTROL_PRIVATE_IP:$swarm_port" ]; then
continue
fi
if timeout 90 docker swarm join --token "$(cat "$dir/token")" --advertise-addr "$CONTROL_PRIVATE_IP" "$manager" </dev/null >/dev/null 2>"$dir/err" ||
joined_later; then
log "joined the swarm at $manager as a manager"
rm -rf "$dir"
return 0
fi
log "joining the swarm at $manager: $(tail -n 1 "$dir/err")"
timeout 60 docker swarm leave --force </dev/null >/dev/null 2>&1 || true
done <"$dir/managers"
rm -rf "$dir"
return 1
}

restore_swarm() {
local data
if tar -tzf "$1" | grep -qv '^swarm\(/\|$\)'; then
log "refusing the backup s3://$BUCKET_NAME/$backup_key: not only a swarm directory"
return 1
fi
data=$(docker info --format '{{.DockerRootDir}}') || return 1
systemctl stop docker || return 1
rm -rf "${data:?}/swarm"
tar -xzf "$1" -C "$data" || return 1
systemctl start docker && wait_for_docker || return 1
docker swarm init --force-new-cluster --advertise-addr "$CONTROL_PRIVATE_IP" >/dev/null || return 1
systemctl restart docker && wait_for_docker || return 1
log "restored the swarm from s3://$BUCKET_NAME/$backup_key on $CONTROL_PRIVATE_IP"
}

current() {
local taken since=0
taken=$(jq -r '.Metadata.taken // 0' "$1.meta")
if get "$changed_key" "$1.m"; then
since=$(cut -d' ' -f2 "$1.m")
fi
if ! [[ $taken =~ ^[0-9]+$ && $since =~ ^[0-9]+$ ]] || [ "$taken" -lt "$since" ]; then
log "refusing the backup: older than the last change of managers"
return 1
fi
}

initialise() {
local dir rc=0
dir=$(mktemp -d) || return 1
if get "$backup_key" "$dir/swarm.tar.gz" && current "$dir/swarm.tar.gz"; then
restore_swarm "$dir/swarm.tar.gz" || rc=1
elif docker swarm init --advertise-addr "$CONTROL_PRIVATE_IP" >/dev/null; then
log "initialised the swarm on $CONTROL_PRIVATE_IP"
else
rc=1
fi
rm -rf "$dir"
return "$rc"
}

init_swarm() {
local state deadline etag
state=$(swarm_state) || return 1
if [ "$state" = active ]; then
if [ "$(docker info --format '{{.Swarm.ControlAvailable}}')" != true ]; then
log "this node is in a swarm but not one of its managers"
return 1
fi
log "already a manager of the swarm"
apply_aliases || true
return 0
fi
deadline=$((SECONDS + join_timeout))
while true; do
if [ "$(swarm_state)" = pending ]; then
timeout 60 docker swarm leave --force >/dev/null 2>&1 || true
fi
if claim; then
initialise
return
fi
apply_aliases || true
if join_managers; then
return 0
fi
if etag=$(stale_marker) && claim "$etag"; then
initialise
return
fi
if [ "$SECONDS" -ge "$deadline" ]; then
log "not a manager of the swarm within $join_timeout s"
return 1
fi
sleep "$join_pause"
done
}

retry_publish() {
local deadline=$((SECONDS + join_timeout))
until publish_join_material force; do
if [ "$SECONDS" -ge "$deadline" ]; then
return 1
fi
sleep 2
done
}

wait_reachable() {
local deadline=$((SECONDS + join_timeout)) reachability=
while true; do
reachability=$(docker node inspect self 2>/dev/null | jq -r '.[0].ManagerStatus.Reachability // ""')
if [ "$reachability" = reachable ]; then
log "a Reachable manager of the swarm"
docker node update --availability drain "$(docker info --format '{{.Swarm.NodeID}}')" >/dev/null
return
fi
if [ "$SECONDS" -ge "$deadline" ]; then
log "not a Reachable manager within $join_timeout s (${reachability:-no manager status})"
return 1
fi
sleep 1
done
}

settings() {
# shellcheck source=/dev/null
. "$root/etc/clusterctl/node.env" || return 1
export AWS_DEFAULT_REGION=$AWS_REGION
valid cluster "$CLUSTER_NAME" && valid bucket "$BUCKET_NAME" && valid region "$AWS_REGION" &&
valid queue-url "$LIFECYCLE_QUEUE_URL" && valid instance-id "$INSTANCE_ID" && valid ipv4 "$CONTROL_PRIVATE_IP"
}

case ${1:-} in
install) install_node ;;
init) settings && init_swarm ;;
ready) settings && wait_reachable ;;
publish) settings && retry_publish ;;
start) settings && systemctl enable --now clusterctl-housekeeping.service ;;
housekeeping) settings && housekeeping ;;
*)
log "usage: control install|init|publish|start|ready|housekeeping"
exit 2
;;
esac
