package wire

// SnapshotService is one service of the swarm as the status snapshot
// gives it: what the leader (internal/node) keeps of `docker service
// inspect`, in the engine's own words. Never the whole
// spec: its environment may hold secrets, and agents may read the
// snapshot.
type SnapshotService struct {
	ID        string `json:"ID"`
	Name      string `json:"Name"`
	Mode      ServiceMode
	Image     string `json:"Image"`
	Endpoint  struct{ Ports []DockerPort }
	Placement struct{ Constraints []string }
}

// ServiceMode is the engine's mode of a service: one of its fields is set.
type ServiceMode struct {
	Replicated    *struct{ Replicas *int }         `json:",omitempty"`
	Global        *struct{}                        `json:",omitempty"`
	ReplicatedJob *struct{ TotalCompletions *int } `json:",omitempty"`
	GlobalJob     *struct{}                        `json:",omitempty"`
}

// Name is replicated, global, replicated-job or global-job.
func (m ServiceMode) Name() string {
	switch {
	case m.Replicated != nil:
		return "replicated"
	case m.Global != nil:
		return "global"
	case m.ReplicatedJob != nil:
		return "replicated-job"
	case m.GlobalJob != nil:
		return "global-job"
	}
	return "unknown"
}

// Replicas is what a replicated service (or job) asks for; nil for a
// global one.
func (m ServiceMode) Replicas() *int {
	switch {
	case m.Replicated != nil:
		if m.Replicated.Replicas == nil {
			one := 1
			return &one
		}
		return m.Replicated.Replicas
	case m.ReplicatedJob != nil:
		return m.ReplicatedJob.TotalCompletions
	}
	return nil
}

// DockerPort is a port as the engine gives it.
type DockerPort struct {
	Protocol      string
	TargetPort    int
	PublishedPort int
	PublishMode   string
}

// SnapshotTask is one task of the swarm's services, in the engine's words.
type SnapshotTask struct {
	ServiceID    string
	NodeID       string // "" while no node took it
	DesiredState string
	Status       struct {
		State string
		// Message and Err are the swarm's words on the task: "pending
		// task scheduling", "no suitable node (insufficient resources on
		// 3 nodes)".
		Message string
		Err     string
	}
}
