// Package lease keeps two clusterctl runs from changing the same part of a
// cluster at once. A mutating command takes a lease — a small JSON object
// in the cluster bucket written with an S3 conditional write — renews it
// while it runs and releases it at the end; a second run that wants a
// conflicting lease fails fast, naming the holder, its command and when it
// started. A run that dies leaves a lease that expires; `clusterctl unlock`
// breaks one on purpose.
//
// Scopes and keys (one lease object per key):
//
//	Core()     locks/core           the core stack (update-core)
//	Cluster()  locks/core           the whole cluster (delete-core)
//	Group(g)   locks/groups/<g>     one group's stack (add-agents, update-group, remove-group)
//
// Conflicts: two leases on one key always conflict. Group(g) and Cluster()
// conflict too, so nothing runs on a group while the cluster is being
// deleted and delete-core does not start while a group is being changed;
// Group(g) and Core() do not (a group reads the core's outputs but does
// not change the core). Both sides write first and look second (the group
// lease, then the core key; the cluster lease, then every group key), and
// S3 is strongly consistent, so of two runs that race, at least one sees
// the other: never both proceed.
//
// Expiry is judged by S3's clock, not the reader's: a lease is expired when
// its object's Last-Modified is more than its TTL older than the Date of
// the response that read it. Taking over an expired lease is conditional
// on the ETag read, so of two runs taking over, one wins. A lease whose
// holder ran on this host as a process that no longer exists (killed,
// crashed) is stale at once: re-running an interrupted command on the same
// machine does not wait for the TTL. Same host means the same host name,
// boot id and PID namespace, and the process is the pid with the start
// time recorded; a lease without all of these (written by an older
// version, or on a system where they are not read) is never judged so,
// nor one of a host of that name in another boot or PID namespace (a
// container): those expire.
//
// In a versioned bucket every write is a version; a lease deletes exactly
// the versions it wrote (and, once it holds the key, the stale versions
// under it), so a released lease leaves nothing in the bucket.
package lease

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"regexp"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
)

// DefaultTTL is how long a lease lives without renewal: a run that dies
// blocks others for at most this long. Leases are renewed every TTL/3.
const DefaultTTL = 90 * time.Second

// Prefix is where leases live in the cluster bucket.
const Prefix = names.LeasePrefix + "/"

const (
	coreKey      = Prefix + "core"
	groupsPrefix = Prefix + "groups/"
)

// Kind is what a lease covers.
type Kind string

const (
	KindCore    Kind = "core"    // the core stack
	KindCluster Kind = "cluster" // the whole cluster: core and every group
	KindGroup   Kind = "group"   // one group's stack
)

// Scope names what a command changes.
type Scope struct {
	Kind  Kind
	Group string // KindGroup only
}

// Core is the scope of a command that changes the core stack only.
func Core() Scope { return Scope{Kind: KindCore} }

// Cluster is the scope of a command that changes the whole cluster
// (delete-core): it conflicts with every group's lease as well.
func Cluster() Scope { return Scope{Kind: KindCluster} }

// Group is the scope of a command that changes one group's stack.
func Group(name string) Scope { return Scope{Kind: KindGroup, Group: name} }

// Key is the lease object's key in the cluster bucket.
func (s Scope) Key() string {
	if s.Kind == KindGroup {
		return groupsPrefix + s.Group
	}
	return coreKey
}

// String names the scope within its cluster: `group "g"`, "the core",
// "the whole cluster".
func (s Scope) String() string {
	switch s.Kind {
	case KindGroup:
		return fmt.Sprintf("group %q", s.Group)
	case KindCluster:
		return "the whole cluster"
	}
	return "the core"
}

// Of names the scope with its cluster: `group "g" of cluster "c"`, `the
// core of cluster "c"`, `cluster "c"`.
func (s Scope) Of(cluster string) string {
	if s.Kind == KindCluster {
		return fmt.Sprintf("cluster %q", cluster)
	}
	return fmt.Sprintf("%s of cluster %q", s, cluster)
}

var groupRE = regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]*$`)

func (s Scope) validate() error {
	switch s.Kind {
	case KindCore, KindCluster:
		return nil
	case KindGroup:
		if groupRE.MatchString(s.Group) {
			return nil
		}
		return fmt.Errorf("invalid group name %q for a lease", s.Group)
	}
	return fmt.Errorf("unknown lease kind %q", s.Kind)
}

// Record is the lease object's content: who holds it, for what, since when.
type Record struct {
	ID     string `json:"id"`   // names the lease for unlock --id
	Kind   Kind   `json:"kind"` // core, cluster or group
	Group  string `json:"group,omitempty"`
	Holder string `json:"holder"` // user@host (pid N)
	Host   string `json:"host,omitempty"`
	PID    int    `json:"pid,omitempty"`
	// BootID, PIDNamespace and ProcessStart identify the holding process
	// beyond host and pid (see Process); absent from the leases of older
	// versions, which then only expire.
	BootID       string    `json:"bootId,omitempty"`
	PIDNamespace string    `json:"pidNamespace,omitempty"`
	ProcessStart uint64    `json:"processStart,omitempty"`
	Command      string    `json:"command"` // the command line, e.g. "update-group -n g -j core"
	RunID        string    `json:"runId"`   // the run's id (its ClientRequestTokens carry it)
	Caller       string    `json:"caller"`  // the AWS principal (STS caller ARN)
	Started      time.Time `json:"started"`
	Renewed      time.Time `json:"renewed"`
	// Expires is Renewed + TTL by the holder's clock, for people to read;
	// expiry itself is judged by S3's clock (see the package comment).
	Expires    time.Time `json:"expires"`
	TTLSeconds int       `json:"ttlSeconds"`
}

// Scope is the scope the record covers.
func (r Record) Scope() Scope { return Scope{Kind: r.Kind, Group: r.Group} }

func (r Record) ttl() time.Duration {
	if r.TTLSeconds <= 0 {
		return DefaultTTL
	}
	return time.Duration(r.TTLSeconds) * time.Second
}

// describe is "\"update-group -n g\" (alice@host (pid 1), arn:...) since 10:00:00 UTC (lease ab12)".
func (r Record) describe() string {
	who := r.Holder
	if r.Caller != "" {
		who += ", " + r.Caller
	}
	cmd := r.Command
	if cmd == "" {
		cmd = "an unknown command"
	} else {
		cmd = "`" + cmd + "`"
	}
	return fmt.Sprintf("%s (%s) since %s (lease %s)", cmd, who, r.Started.UTC().Format(time.DateTime+" UTC"), r.ID)
}

// Clock is the time source of renewals; tests inject one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Options say who takes leases.
type Options struct {
	Cluster string // the cluster's name, for messages
	Holder  string // default DefaultHolder()
	// Host, PID, BootID, PIDNamespace and ProcessStart identify the
	// holding process, so that a run on the same host can tell that it is
	// gone (default: this host and process; with PID given, the others
	// are taken as given).
	Host         string
	PID          int
	BootID       string
	PIDNamespace string
	ProcessStart uint64
	Command      string // the command line being run
	RunID        string
	Caller       string        // the AWS principal, from CallerARN
	TTL          time.Duration // default DefaultTTL; whole seconds
	Clock        Clock         // default the real clock
}

// Process identifies a process beyond its host name and pid: a pid names a
// process only within one PID namespace (a container has its own, under a
// host name that may be the host's) of one boot of the kernel, and only
// until it is reused.
type Process struct {
	PID          int
	BootID       string // /proc/sys/kernel/random/boot_id
	PIDNamespace string // the PID namespace, as its /proc/self/ns/pid link reads: pid:[inode]
	Start        uint64 // the process's start time, in clock ticks since boot
}

// DefaultHolder names this process: user@host (pid N).
func DefaultHolder() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	return fmt.Sprintf("%s@%s (pid %d)", name, hostname(), os.Getpid())
}

func hostname() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "unknown-host"
	}
	return host
}

func newID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// ErrHeld: the lease is held by another run.
var ErrHeld = errors.New("lease held by another run")

// HeldError says who holds the lease that stands in the way.
type HeldError struct {
	Cluster string
	Wanted  Scope  // what this run wanted
	Holder  Record // the lease in the way (its scope may differ: cluster vs group)
}

func (e *HeldError) Error() string {
	held := e.Holder.Scope()
	var b strings.Builder
	if held.Key() == e.Wanted.Key() {
		fmt.Fprintf(&b, "%s is locked by %s", e.Wanted.Of(e.Cluster), e.Holder.describe())
	} else {
		fmt.Fprintf(&b, "cannot lock %s: %s is locked by %s", e.Wanted.Of(e.Cluster), held, e.Holder.describe())
	}
	fmt.Fprintf(&b, "; wait for it to finish, or break the lease with: clusterctl unlock %s", e.Cluster)
	if held.Kind == KindGroup {
		fmt.Fprintf(&b, " --group %s", held.Group)
	}
	fmt.Fprintf(&b, " --id %s", e.Holder.ID)
	return b.String()
}

func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// ErrLost: a lease this run held was broken or taken over, or could not
// be renewed before it expired.
var ErrLost = errors.New("lease lost")

// LostError says which lease was lost and why.
type LostError struct {
	Cluster string
	Scope   Scope
	ID      string
	Reason  string
}

func (e *LostError) Error() string {
	return fmt.Sprintf("lost the lease on %s (lease %s): %s; stopped", e.Scope.Of(e.Cluster), e.ID, e.Reason)
}

func (e *LostError) Is(target error) bool { return target == ErrLost }

// ErrNotHeld: Break found no lease with that ID.
var ErrNotHeld = errors.New("no such lease")
