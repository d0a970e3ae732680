package node

import "context"

// follow is the round of a manager that does not lead: it carries out the
// leader's backup order when it names this manager.
func (m *Manager) follow(ctx context.Context) {
	if err := m.followBackupOrder(ctx); err != nil {
		m.Log("the backup ordered by the leader failed: %v", err)
	}
}
