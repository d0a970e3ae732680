// Package bootstrap holds no code: its tests execute the node scripts that
// internal/render produces (the control node's user data, an agent's user
// data and its node configuration) with bash, the real AWS CLI against a
// moto_server, an instance metadata service that insists on IMDSv2 tokens,
// and recording stand-ins for docker, systemctl, dnf and cfn-signal.
package bootstrap
