package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// DeclaredSecret is one secret of the core's declaration: the swarm
// secret's name, its source (a Secrets Manager ARN or ssm:/path) and the
// field of a JSON value it takes ("": the whole value).
type DeclaredSecret struct {
	Name string `json:"name"`
	From string `json:"from"`
	Key  string `json:"key,omitempty"`
}

// SecretSources is what the sync needs of AWS.
type SecretSources interface {
	// Declared is the core's declaration.
	Declared(ctx context.Context) ([]DeclaredSecret, error)
	// Version is the source's current version id, read without its value.
	Version(ctx context.Context, from string) (string, error)
	// Read is the source's current value and the version id it is of.
	Read(ctx context.Context, from string) (value []byte, version string, err error)
}

// SwarmSecret is a secret of the swarm (never its value, which the
// engine does not give back).
type SwarmSecret struct {
	ID, Name string
	Labels   map[string]string
}

// SecretMount is a service's reference to a swarm secret.
type SecretMount struct {
	Service, ServiceName string
	SecretID, SecretName string
}

// SwarmSecrets is what the sync needs of the engine.
type SwarmSecrets interface {
	Secrets(ctx context.Context) ([]SwarmSecret, error)
	// Mounts are the secret references of every service.
	Mounts(ctx context.Context) ([]SecretMount, error)
	CreateSecret(ctx context.Context, name string, value []byte, labels map[string]string) (id string, err error)
	RemoveSecret(ctx context.Context, id string) error
	// Repoint updates service so that its references to the secrets in
	// old mount the secret to instead, keeping each reference's target
	// file, owner and mode; the service's own update policy applies.
	Repoint(ctx context.Context, service string, old []string, to SwarmSecret) error
}

// SecretsSync keeps the swarm's secrets in step with their sources in
// AWS, as the leader's housekeeping: each of its rounds (at most every
// Every) and at once when asked (Request).
type SecretsSync struct {
	Sources SecretSources
	Engine  SwarmSecrets
	Clock   Clock
	Log     Logger
	Every   time.Duration

	next   time.Time
	status map[string]wire.SecretStatus
	order  []string
}

// Request makes the next Sync run whatever the time.
func (s *SecretsSync) Request() { s.next = time.Time{} }

// Status is the declared secrets as last synced, in declared order.
func (s *SecretsSync) Status() []wire.SecretStatus {
	if s == nil {
		return nil
	}
	var out []wire.SecretStatus
	for _, n := range s.order {
		out = append(out, s.status[n])
	}
	return out
}

// Sync brings the swarm in step with the declared sources when it is
// due. A source that cannot be read leaves its swarm secret as it is; the
// problem is in its status.
func (s *SecretsSync) Sync(ctx context.Context) error {
	if s == nil || s.Sources == nil {
		return nil
	}
	now := s.Clock.Now()
	if now.Before(s.next) {
		return nil
	}
	// A failure waits for the next read too, rather than every round.
	s.next = now.Add(s.Every)
	declared, err := s.Sources.Declared(ctx)
	if err != nil {
		return fmt.Errorf("reading the declared secrets: %w", err)
	}
	all, err := s.Engine.Secrets(ctx)
	if err != nil {
		return fmt.Errorf("listing the swarm's secrets: %w", err)
	}
	mounts, err := s.Engine.Mounts(ctx)
	if err != nil {
		return fmt.Errorf("listing the services' secrets: %w", err)
	}
	old := s.status
	s.status, s.order = map[string]wire.SecretStatus{}, nil
	for _, d := range declared {
		st := wire.SecretStatus{Name: d.Name, Source: d.From, Key: d.Key}
		if p, ok := old[d.Name]; ok && p.Source == d.From && p.Key == d.Key {
			st.LastSync = p.LastSync
		}
		st = s.one(ctx, d, st, all, mounts)
		s.status[d.Name], s.order = st, append(s.order, d.Name)
	}
	// After a rotation the mounts changed: read them again for pruning.
	if mounts, err = s.Engine.Mounts(ctx); err != nil {
		return fmt.Errorf("listing the services' secrets: %w", err)
	}
	if all, err = s.Engine.Secrets(ctx); err != nil {
		return fmt.Errorf("listing the swarm's secrets: %w", err)
	}
	s.prune(ctx, declared, all, mounts)
	return nil
}

// version is the number of a declared secret's swarm secret: NAME is 1,
// NAME.vN is N; 0 when name is none of name's.
func version(declared, name string) int {
	if name == declared {
		return 1
	}
	rest, ok := strings.CutPrefix(name, declared+".v")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 2 || strconv.Itoa(n) != rest {
		return 0
	}
	return n
}

func versionName(declared string, n int) string {
	if n <= 1 {
		return declared
	}
	return fmt.Sprintf("%s.v%d", declared, n)
}

// one syncs one declared secret.
func (s *SecretsSync) one(ctx context.Context, d DeclaredSecret, st wire.SecretStatus, all []SwarmSecret, mounts []SecretMount) wire.SecretStatus {
	// Its swarm secrets: the latest one clusterctl made holds what was
	// last synced; every one of the name (a secret made by hand too) is
	// rolled onto a new version.
	var current *SwarmSecret
	highest := 0
	var versions []string // ids
	for i, x := range all {
		n := version(d.Name, x.Name)
		if n == 0 {
			continue
		}
		versions = append(versions, x.ID)
		highest = max(highest, n)
		if x.Labels[names.SecretLabelManaged] == d.Name && (current == nil || n > version(d.Name, current.Name)) {
			current = &all[i]
		}
	}
	st.Services = usersOf(versions, mounts)
	if current != nil {
		st.SwarmSecret, st.SwarmVersion = current.Name, current.Labels[names.SecretLabelVersion]
	}
	v, err := s.Sources.Version(ctx, d.From)
	if err != nil {
		st.Problem = "reading the source: " + err.Error()
		s.Log("secret %s: %s unreadable, the swarm keeps %s: %v", d.Name, d.From, orNone(st.SwarmSecret), err)
		return st
	}
	st.AWSVersion = v
	if current != nil && current.Labels[names.SecretLabelSource] == d.From && current.Labels[names.SecretLabelKey] == d.Key && st.SwarmVersion == v {
		// In step; services still on an older version are rolled over.
		if err := s.roll(ctx, d, *current, versions, mounts); err != nil {
			st.Problem = err.Error()
			return st
		}
		t := s.Clock.Now()
		st.LastSync = &t
		return st
	}
	value, v, err := s.Sources.Read(ctx, d.From)
	if err != nil {
		st.Problem = "reading the source: " + err.Error()
		s.Log("secret %s: %s unreadable, the swarm keeps %s: %v", d.Name, d.From, orNone(st.SwarmSecret), err)
		return st
	}
	st.AWSVersion = v
	if d.Key != "" {
		if value, err = field(value, d.Key); err != nil {
			st.Problem = err.Error()
			s.Log("secret %s: %s version %s: %v; the swarm keeps %s", d.Name, d.From, v, err, orNone(st.SwarmSecret))
			return st
		}
	}
	next := SwarmSecret{Name: versionName(d.Name, highest+1), Labels: map[string]string{
		names.SecretLabelManaged: d.Name, names.SecretLabelSource: d.From, names.SecretLabelVersion: v,
	}}
	if d.Key != "" {
		next.Labels[names.SecretLabelKey] = d.Key
	}
	next.ID, err = s.Engine.CreateSecret(ctx, next.Name, value, next.Labels)
	clear(value) // held for the create call only
	if err != nil {
		st.Problem = "creating swarm secret " + next.Name + ": " + err.Error()
		s.Log("secret %s: creating swarm secret %s failed: %v", d.Name, next.Name, err)
		return st
	}
	s.Log("secret %s: created swarm secret %s from %s version %s", d.Name, next.Name, d.From, v)
	st.SwarmSecret, st.SwarmVersion = next.Name, v
	if err := s.roll(ctx, d, next, versions, mounts); err != nil {
		st.Problem = err.Error()
		return st
	}
	t := s.Clock.Now()
	st.LastSync = &t
	return st
}

// roll repoints every service that mounts an older version of the secret
// onto to, one service after the other.
func (s *SecretsSync) roll(ctx context.Context, d DeclaredSecret, to SwarmSecret, versions []string, mounts []SecretMount) error {
	byService := map[string][]string{}
	svcNames := map[string]string{}
	for _, m := range mounts {
		if m.SecretID != to.ID && slices.Contains(versions, m.SecretID) {
			byService[m.Service] = append(byService[m.Service], m.SecretID)
			svcNames[m.Service] = m.ServiceName
		}
	}
	services := make([]string, 0, len(byService))
	for id := range byService {
		services = append(services, id)
	}
	sort.Slice(services, func(i, j int) bool { return svcNames[services[i]] < svcNames[services[j]] })
	var failed []string
	for _, id := range services {
		if err := s.Engine.Repoint(ctx, id, byService[id], to); err != nil {
			s.Log("secret %s: rolling service %s onto %s failed: %v", d.Name, svcNames[id], to.Name, err)
			failed = append(failed, svcNames[id])
			continue
		}
		s.Log("secret %s: rolling service %s onto %s", d.Name, svcNames[id], to.Name)
	}
	if len(failed) > 0 {
		return fmt.Errorf("rolling services onto %s failed: %s", to.Name, strings.Join(failed, ", "))
	}
	return nil
}

// prune removes the secrets clusterctl made that no service mounts and
// that are not the latest of a declared secret: older versions, and those
// of a secret no longer declared. A secret made by hand is never removed.
func (s *SecretsSync) prune(ctx context.Context, declared []DeclaredSecret, all []SwarmSecret, mounts []SecretMount) {
	used := map[string]bool{}
	for _, m := range mounts {
		used[m.SecretID] = true
	}
	for _, x := range all {
		owner := x.Labels[names.SecretLabelManaged]
		if owner == "" || used[x.ID] || version(owner, x.Name) == 0 {
			continue
		}
		if st, ok := s.status[owner]; ok && st.SwarmSecret == x.Name {
			continue
		}
		if err := s.Engine.RemoveSecret(ctx, x.ID); err != nil {
			s.Log("secret %s: removing unused swarm secret %s failed: %v", owner, x.Name, err)
			continue
		}
		if slices.ContainsFunc(declared, func(d DeclaredSecret) bool { return d.Name == owner }) {
			s.Log("secret %s: removed swarm secret %s, which no service uses", owner, x.Name)
		} else {
			s.Log("secret %s: removed swarm secret %s, no longer declared and unused", owner, x.Name)
		}
	}
}

// usersOf are the names of the services mounting one of the secrets.
func usersOf(ids []string, mounts []SecretMount) []string {
	var out []string
	for _, m := range mounts {
		if slices.Contains(ids, m.SecretID) && !slices.Contains(out, m.ServiceName) {
			out = append(out, m.ServiceName)
		}
	}
	sort.Strings(out)
	return out
}

func orNone(name string) string {
	if name == "" {
		return "no secret"
	}
	return name
}

// ErrNoKey is a JSON key the source's value lacks.
var ErrNoKey = errors.New("no such key")

// field is the field key of a JSON object value: a string as it is, any
// other JSON value as its JSON text. The error never quotes the value.
func field(value []byte, key string) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(value, &obj); err != nil {
		return nil, fmt.Errorf("key %q: the value is not a JSON object", key)
	}
	raw, ok := obj[key]
	if !ok {
		return nil, fmt.Errorf("key %q: %w in the JSON value", key, ErrNoKey)
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return []byte(str), nil
	}
	return []byte(raw), nil
}
