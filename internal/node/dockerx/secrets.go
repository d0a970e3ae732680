package dockerx

import (
	"context"
	"fmt"
	"slices"

	"github.com/docker/docker/api/types/swarm"

	"github.com/clusterctl/clusterctl/internal/node"
)

// Secrets lists the swarm's secrets (the engine never gives a value back).
func (e *Engine) Secrets(ctx context.Context) ([]node.SwarmSecret, error) {
	l, err := e.c.SecretList(ctx, swarm.SecretListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]node.SwarmSecret, 0, len(l))
	for _, s := range l {
		out = append(out, node.SwarmSecret{ID: s.ID, Name: s.Spec.Name, Labels: s.Spec.Labels})
	}
	return out, nil
}

// Mounts are the secret references of every service.
func (e *Engine) Mounts(ctx context.Context) ([]node.SecretMount, error) {
	l, err := e.c.ServiceList(ctx, swarm.ServiceListOptions{})
	if err != nil {
		return nil, err
	}
	var out []node.SecretMount
	for _, s := range l {
		c := s.Spec.TaskTemplate.ContainerSpec
		if c == nil {
			continue
		}
		for _, r := range c.Secrets {
			if r != nil {
				out = append(out, node.SecretMount{Service: s.ID, ServiceName: s.Spec.Name, SecretID: r.SecretID, SecretName: r.SecretName})
			}
		}
	}
	return out, nil
}

// CreateSecret creates a swarm secret.
func (e *Engine) CreateSecret(ctx context.Context, name string, value []byte, labels map[string]string) (string, error) {
	r, err := e.c.SecretCreate(ctx, swarm.SecretSpec{Annotations: swarm.Annotations{Name: name, Labels: labels}, Data: value})
	if err != nil {
		return "", err
	}
	return r.ID, nil
}

// RemoveSecret removes a swarm secret; the engine refuses one a service
// uses.
func (e *Engine) RemoveSecret(ctx context.Context, id string) error {
	return e.c.SecretRemove(ctx, id)
}

// Repoint updates the service's references to the secrets old onto to,
// keeping each reference's target file, owner and mode. The update goes
// through the service's own update policy, as docker service update
// --secret-rm/--secret-add would; the image is not resolved again.
func (e *Engine) Repoint(ctx context.Context, service string, old []string, to node.SwarmSecret) error {
	s, _, err := e.c.ServiceInspectWithRaw(ctx, service, swarm.ServiceInspectOptions{})
	if err != nil {
		return err
	}
	c := s.Spec.TaskTemplate.ContainerSpec
	if c == nil {
		return fmt.Errorf("service %s mounts no secret", s.Spec.Name)
	}
	changed := false
	for _, r := range c.Secrets {
		if r != nil && slices.Contains(old, r.SecretID) {
			r.SecretID, r.SecretName = to.ID, to.Name
			changed = true
		}
	}
	if !changed {
		return nil
	}
	_, err = e.c.ServiceUpdate(ctx, s.ID, s.Version, s.Spec, swarm.ServiceUpdateOptions{})
	return err
}
