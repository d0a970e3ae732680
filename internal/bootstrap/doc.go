// Package bootstrap holds no code: its tests boot nodes through the user
// data internal/render produces (the loader of managers and agents, which
// fetches the node agent the tests build from the cluster bucket, checks
// it and runs it) on real Docker Engines, one network namespace each
// (internal/enginetest), against a moto_server, with an instance metadata
// service that insists on IMDSv2 tokens, and stand-ins only for dnf,
// systemctl and cfn-signal.
package bootstrap
