package node

// parts are the capabilities of a manager's housekeeping, each a type
// with only the dependencies it uses, called by one line from the round
// (Round) or from the notice it handles (handleNotice). What several
// share is one small type each: the prover (which node is which
// instance), the inbox (the queue's messages kept), the join material,
// the status snapshot.
type parts struct {
	prover   *prover
	join     *joining
	inbox    *inbox
	status   *statusPublisher
	guard    *nodeGuard
	scaler   *autoscaling
	backups  *swarmBackups
	restores *restorer
	drains   *drains
	requests *requests
}

// parts builds the parts from the Manager's fields once, when first
// needed: the fields are set before. They log through log, so that a
// line said while a message is handled names it.
func (m *Manager) parts() *parts {
	if m.p != nil {
		return m.p
	}
	log, t := Logger(m.log), m.T
	demoted := func() { m.demoted = true }
	pr := &prover{Engine: m.Engine, Instances: m.Instances, Log: log}
	join := &joining{Engine: m.Engine, Bucket: m.Bucket, Network: m.Network, State: m.State, Clock: m.Clock, Log: log, Address: m.Address}
	in := &inbox{Queue: m.Queue, State: m.State, Log: log, Visibility: t.Visibility}
	scaler := &autoscaling{Cluster: m.Cluster, Groups: m.Groups, Engine: m.Engine, Bucket: m.Bucket, Clock: m.Clock, Log: log,
		T: t, prover: pr}
	backups := &swarmBackups{Cluster: m.Cluster, InstanceID: m.InstanceID, Engine: m.Engine, Bucket: m.Bucket, Objects: m.Objects,
		Backups: m.Backups, State: m.State, Clock: m.Clock, Log: log, T: t, Keep: m.BackupKeep}
	status := &statusPublisher{Cluster: m.Cluster, InstanceID: m.InstanceID, Engine: m.Engine, Bucket: m.Bucket, State: m.State,
		Clock: m.Clock, Log: log, T: t,
		prover: pr, secrets: m.Secrets, scaler: scaler, backups: backups}
	restores := &restorer{Cluster: m.Cluster, InstanceID: m.InstanceID, Address: m.Address, Engine: m.Engine, Bucket: m.Bucket,
		Backups: m.Backups, Tokens: m.Tokens, State: m.State, Clock: m.Clock, Log: log, Keep: m.BackupKeep,
		join: join, status: status, demoted: demoted}
	status.restores = restores
	m.p = &parts{
		prover: pr, join: join, inbox: in, status: status, scaler: scaler, backups: backups, restores: restores,
		guard: &nodeGuard{Cluster: m.Cluster, Engine: m.Engine, Instances: m.Instances, Facts: m.Facts, Groups: m.Groups,
			State: m.State, Clock: m.Clock, Log: log, T: t, prover: pr},
		drains: &drains{Cluster: m.Cluster, InstanceID: m.InstanceID, Engine: m.Engine, Scaling: m.Scaling, Queue: m.Queue,
			Bucket: m.Bucket, Instances: m.Instances, State: m.State, Clock: m.Clock, Log: log,
			T: t, inbox: in, prover: pr, status: status, backups: backups, demoted: demoted},
		requests: &requests{Cluster: m.Cluster, Clock: m.Clock, Log: log, MaxAge: t.RequestMaxAge,
			inbox: in, status: status, prover: pr, secrets: m.Secrets, backups: backups, restores: restores},
	}
	return m.p
}
