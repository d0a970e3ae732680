package node

import "context"

// follow is the round of a manager that does not lead: it carries out the
// leader's backup order when it names this manager, and heals a lost
// quorum (Recovery).
func (m *Manager) follow(ctx context.Context) {
	if err := m.followBackupOrder(ctx); err != nil {
		m.Log("the backup ordered by the leader failed: %v", err)
	}
	if m.followRestore(ctx) {
		return
	}
	if m.Recovery == nil {
		return
	}
	if m.Recovery.Rejoin == nil {
		m.Recovery.Rejoin = m.joinManagers
	}
	forced, err := m.Recovery.Round(ctx)
	if err != nil {
		m.Log("recovering the swarm's quorum: %v", err)
	}
	if forced {
		m.republish = true
	}
}
