#!/bin/bash
# clusterctl agent: loads the node agent, pinned by SHA-256.
set -euo pipefail
read -r stack region bucket amd64 arm64 <<'CLUSTERCTL_STACK' || true
prod-c5-agents eu-west-1  aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
CLUSTERCTL_STACK
[[ $stack =~ ^[a-zA-Z][-a-zA-Z0-9]{0,127}$ && $region =~ ^[a-z]{2}(-[a-z]+)+-[0-9]+$ ]] || exit 1
root=${CLUSTERCTL_ROOT:-}
env=$root/etc/clusterctl/node.env
imds_url=${CLUSTERCTL_IMDS_URL:-http://169.254.169.254}
agent=$root/usr/local/bin/clusterctl-node
export PATH=$PATH:/opt/aws/bin
log() { printf 'clusterctl: %s\n' "$*" >&2; }
retry() {
  for _ in 1 2 3 4 5; do
    if "$@"; then return 0; fi
    sleep 5
  done
  log "gave up after 5 attempts: $1 $2"
  return 1
}
tok=$(curl -sSf --retry 5 --retry-connrefused -m 5 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 21600' "$imds_url/latest/api/token")
imds() { curl -sSf --retry 5 --retry-connrefused -m 5 -H "X-aws-ec2-metadata-token: $tok" "$imds_url/latest/meta-data/$1"; }
sig() { cfn-signal --exit-code "$1" --reason "$2" --stack "$stack" --resource AutoScalingGroup --region "$region" || log "cfn-signal failed"; }
fail() {
  trap - EXIT
  log "$1"
  sig 1 "clusterctl: $1"
  exit 1
}
step=starting
trap '[ $? -eq 0 ] || fail "failed while $step"' EXIT
[[ $bucket =~ ^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$ ]] || fail "refusing bucket ${bucket::80}"
url=https://$bucket.s3.$region.amazonaws.com
[ -z "${AWS_ENDPOINT_URL:-}" ] || url=$AWS_ENDPOINT_URL/$bucket
f() { sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p" <<<"$c"; }
get() {
  local n=0
  until c=$(imds "iam/security-credentials/$(imds iam/security-credentials/)") &&
    curl -fsS --max-time 300 --aws-sigv4 "aws:amz:$region:s3" --user "$(f AccessKeyId):$(f SecretAccessKey)" \
      -H "x-amz-security-token: $(f Token)" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -o "$2.get" "$url/$1"; do
    n=$((n + 1))
    [ "$n" -lt "${CLUSTERCTL_FETCH_ATTEMPTS:-90}" ] || fail "no s3://$bucket/$1"
    sleep 5
  done
  case $1 in *.gz) gunzip -c "$2.get" >"$2.new" || true ;; *) mv "$2.get" "$2.new" ;; esac
  rm -f "$2.get"
  sha256sum --check --status <<<"$3  $2.new" || fail "s3://$bucket/$1 is not SHA-256 $3: refusing it"
  mv -f "$2.new" "$2"
}
install -d -m 0755 "$root/etc/clusterctl" "$root/usr/local/bin"

step="writing the node settings"
get 'join/groups/c5-agents/node-1c4c4420a7912bc35ac10e3d01e9e54d01f2272027981eb0855a421d7ca09ace.env' "$env" 1c4c4420a7912bc35ac10e3d01e9e54d01f2272027981eb0855a421d7ca09ace
printf '%s\n' "STACK_NAME=$stack" "AWS_REGION=$region" "BUCKET_NAME=$bucket" "INSTANCE_ID=$(imds instance-id)" >>"$env"

step="installing Docker"
retry dnf install -y iptables-nft aws-cfn-bootstrap >/dev/null

step="fetching the node agent"
case $(uname -m) in
  x86_64) arch=amd64 sha=$amd64 ;;
  aarch64) arch=arm64 sha=$arm64 ;;
  *) fail "no node agent for $(uname -m)" ;;
esac
[[ $sha =~ ^[0-9a-f]{64}$ ]] || fail "refusing node agent hash ${sha::80}"
get "join/agent/clusterctl-node-linux-$arch-$sha.gz" "$agent" "$sha"
chmod 0755 "$agent"

step="setting up the node"
"$agent" setup
systemctl enable --now docker

step="starting the node agent"
u=$root/etc/systemd/system/clusterctl-agent.service
install -d -m 0755 "${u%/*}"
printf '%s\n' '[Unit]' 'After=docker.service' '[Service]' "ExecStart=$agent agent" 'Restart=always' 'RestartSec=5' \
  '[Install]' 'WantedBy=multi-user.target' >"$u"
systemctl daemon-reload
systemctl enable --now clusterctl-agent
trap - EXIT
log "node agent started"
