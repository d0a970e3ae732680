// Package bootstrap holds no code: its tests execute the node scripts that
// internal/render produces (the managers' user data and program, an
// agent's user data and its node configuration) on real Docker Engines,
// one network namespace each (internal/enginetest), with the real AWS CLI
// against a moto_server, an instance metadata service that insists on
// IMDSv2 tokens, and stand-ins only for dnf, systemctl and cfn-signal.
package bootstrap
