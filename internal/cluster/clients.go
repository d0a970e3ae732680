package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/iostreams"
	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/preflight"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/remote"
)

// Clients are the AWS clients and settings of one run. A command builds
// from them the capability it runs (NewCore, NewGroups, NewNodes, ...),
// which keeps only the clients it uses; Clients have no behaviour.
type Clients struct {
	Stacks StackManager
	CFN    query.CFNAPI // inventory reads stacks itself, in one call
	EC2    EC2API
	ASG    ASGAPI
	S3     S3API
	SSM    SSMAPI
	// ACM checks a load balancer's certificate; ELB reads a group's load
	// balancer (its listeners and the health of its targets).
	ACM     preflight.ACMAPI
	ELB     query.ELBAPI
	STS     lease.STSAPI // who the run acts as, for its leases; nil: not recorded
	IAM     IAMAPI       // the caller's role, for the operators
	SQS     SQSAPI       // requests to the managers
	CWLogs  LogsAPI      // the cluster's log group
	Region  string       // of the clients, for the requests' envelope
	IO      *iostreams.IO
	Version string
	// Agents are the node agents this clusterctl pins and uploads, loaded
	// on first call (see internal/agentbin).
	Agents func(context.Context) (agentbin.Set, error)

	// RunCommand runs docker commands on the managers (Run Command).
	RunCommand remote.SSMAPI

	// Run says which run of which command this is, for the leases it takes.
	Run Run
	// Now is the clock a swarm status snapshot's age is measured by; nil:
	// the system's.
	Now func() time.Time
	// Sources checks what a core's settings point at: the topic its
	// alarms notify, its secrets' sources.
	Sources preflight.Sources

	shared *shared
}

// shared is what the capabilities built from one Clients share within the
// run: the notes already said, and who the run acts as (asked of STS once).
type shared struct {
	say    *Say
	leases *Leases
}

func (c *Clients) run() *shared {
	if c.shared == nil {
		say := &Say{IO: c.IO, said: &sync.Map{}}
		if c.Stacks != nil {
			say.Stacks = c.Stacks
		}
		c.shared = &shared{say: say}
		c.shared.leases = &Leases{find: newFinder(c), say: say, STS: c.STS, IAM: c.IAM, S3: c.S3, Stacks: c.Stacks, Run: c.Run, callerARN: &callerOnce{}}
	}
	return c.shared
}

func newFinder(c *Clients) *Finder {
	return &Finder{Stacks: c.Stacks, CFN: c.CFN, ASG: c.ASG, S3: c.S3, Region: c.Region}
}

// NewFinder finds clusters and their groups.
func NewFinder(c *Clients) *Finder { return newFinder(c) }

func newStatus(c *Clients) *Status {
	return &Status{find: newFinder(c), S3: c.S3, Now: c.Now}
}

func newArtifacts(c *Clients) *Artifacts {
	return &Artifacts{find: newFinder(c), say: c.run().say, status: newStatus(c),
		Agents: c.Agents, CFN: c.CFN, EC2: c.EC2, S3: c.S3, Stacks: c.Stacks, Version: c.Version}
}

// NewObserver reads what is deployed as a spec.
func NewObserver(c *Clients) *Observer {
	return &Observer{find: newFinder(c), ASG: c.ASG, Stacks: c.Stacks}
}

// NewRequests sends requests to the managers: backup, restore, secrets.
func NewRequests(c *Clients) *Requests {
	r := c.run()
	return &Requests{find: newFinder(c), leases: r.leases, observer: NewObserver(c), say: r.say, status: newStatus(c), Region: c.Region, SQS: c.SQS}
}

func newPlans(c *Clients) *Plans {
	r := c.run()
	return &Plans{artifacts: newArtifacts(c), leases: r.leases, requests: NewRequests(c), say: r.say,
		ACM: c.ACM, EC2: c.EC2, SSM: c.SSM, Sources: c.Sources, Stacks: c.Stacks}
}

// NewCore runs the core's lifecycle: create, update, delete.
func NewCore(c *Clients) *Core {
	r := c.run()
	return &Core{artifacts: newArtifacts(c), find: newFinder(c), leases: r.leases, observer: NewObserver(c), plans: newPlans(c), requests: NewRequests(c), say: r.say,
		CWLogs: c.CWLogs, EC2: c.EC2, S3: c.S3, SSM: c.SSM, Sources: c.Sources, Stacks: c.Stacks, Version: c.Version}
}

// NewGroups runs the agent groups' lifecycle: add, update, remove.
func NewGroups(c *Clients) *Groups {
	r := c.run()
	return &Groups{artifacts: newArtifacts(c), find: newFinder(c), leases: r.leases, observer: NewObserver(c), plans: newPlans(c), say: r.say,
		EC2: c.EC2, Stacks: c.Stacks}
}

// NewNodes drains, replaces and reaches the nodes.
func NewNodes(c *Clients) *Nodes {
	r := c.run()
	return &Nodes{find: newFinder(c), leases: r.leases, say: r.say, status: newStatus(c),
		ASG: c.ASG, EC2: c.EC2, Region: c.Region, Run: c.Run, RunCommand: c.RunCommand, S3: c.S3, SQS: c.SQS, Stacks: c.Stacks}
}

// NewInspector describes, lists and follows clusters.
func NewInspector(c *Clients) *Inspector {
	return &Inspector{artifacts: newArtifacts(c), find: newFinder(c), observer: NewObserver(c), status: newStatus(c),
		ASG: c.ASG, CFN: c.CFN, CWLogs: c.CWLogs, EC2: c.EC2, ELB: c.ELB, S3: c.S3, SSM: c.SSM, Stacks: c.Stacks}
}

// NewApplier plans and applies a cluster file.
func NewApplier(c *Clients) *Applier {
	r := c.run()
	return &Applier{artifacts: newArtifacts(c), core: NewCore(c), find: newFinder(c), groups: NewGroups(c), observer: NewObserver(c), plans: newPlans(c), say: r.say,
		IO: c.IO, Stacks: c.Stacks}
}

// NewUpgrader runs upgrade: the core's and the groups' updates, the
// backup before them and the validation after each.
func NewUpgrader(c *Clients) *Upgrader {
	r := c.run()
	return &Upgrader{artifacts: newArtifacts(c), changeSets: NewChangeSetRoller(c),
		find: newFinder(c), leases: r.leases, requests: NewRequests(c), status: newStatus(c), say: r.say,
		ASG: c.ASG, SSM: c.SSM, Stacks: c.Stacks, Now: c.Now}
}

// NewChangeSetRoller updates the stacks of an upgrade as update-core and
// update-group do: what an Upgrader without a Roller uses, for a roller
// that adds to it.
func NewChangeSetRoller(c *Clients) StackRoller {
	return changeSetRoller{core: NewCore(c), groups: NewGroups(c)}
}
