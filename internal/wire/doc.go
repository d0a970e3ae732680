// Package wire holds every contract the clusterctl CLI and the node agent
// both speak, so that each is written once: the swarm's status snapshot
// the leader publishes and inventory reads, the envelope of the events and
// requests on the core's queue, the conditional writes of S3 by which
// exactly one writer wins (the swarm's initialisation marker, leases).
// The names themselves (bucket keys, the node agent's among them, engine
// labels, tags) are internal/names', which both binaries import too.
//
// What is here is deployed: a node runs the agent its launch template
// pinned, possibly older or newer than the CLI reading what it wrote. A
// change of a format is a new version of it, never an edit.
package wire
