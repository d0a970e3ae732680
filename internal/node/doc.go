// Package node is the node agent's logic (cmd/clusterctl-node): what a
// manager does to become one and what the swarm's leader does to keep the
// cluster (housekeeping), and what an agent does to stay in the swarm.
// Every decision is made here against small interfaces of the Docker
// Engine and of AWS (ports.go) and a clock, so that each is tested in
// process against fakes; internal/node/dockerx and internal/node/awsn
// connect them to the real ones.
//
// What a decision needs to survive a restart (a notice being handled, since
// when a node is Down, the last backup) is kept in files under a state
// directory, as one JSON file each, written atomically.
package node
