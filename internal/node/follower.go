package node

import "context"

// follow is the round of a manager that does not lead: it carries out the
// leader's backup order when it names this manager, and heals a lost
// quorum (Recovery).
func (m *Manager) follow(ctx context.Context) {
	p := m.parts()
	if err := p.backups.followOrder(ctx); err != nil {
		m.Log("the backup ordered by the leader failed: %v", err)
	}
	if p.restores.follow(ctx) {
		return
	}
	if m.Recovery == nil {
		return
	}
	if m.Recovery.Rejoin == nil {
		m.Recovery.Rejoin = p.join.joinManagers
	}
	forced, err := m.Recovery.Round(ctx)
	if err != nil {
		m.Log("recovering the swarm's quorum: %v", err)
	}
	if forced {
		p.join.republish = true
	}
}
