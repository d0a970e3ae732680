package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/clusterctl/clusterctl/internal/alarms"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/render"
	"github.com/clusterctl/clusterctl/internal/stacks"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// Health comes from what is deployed, not from stack statuses alone: a
// stack can be UPDATE_COMPLETE while its Auto Scaling group was deleted by
// hand, its node configuration is gone from the bucket, or the core's
// outputs no longer hold the join contract. Each problem found says why
// and what repairs it.

// Problem is something wrong with what is deployed and what repairs it.
// The JSON keys are a public interface.
type Problem struct {
	Reason string `json:"reason"`
	Repair string `json:"repair"`
	// Broken: the group or core cannot work (nothing launches, nothing
	// joins); otherwise it works with less than it should (degraded).
	Broken bool `json:"broken"`
}

// Description is what `describe` shows of a cluster.
type Description struct {
	Cluster    string            `json:"cluster"`
	Stack      string            `json:"stack"`
	Status     string            `json:"status"`
	Health     string            `json:"health"`
	Advice     string            `json:"advice,omitempty"`
	Problems   []Problem         `json:"problems"`
	Outputs    map[string]string `json:"outputs"`
	Parameters map[string]string `json:"parameters"`
	Groups     []GroupHealth     `json:"groups"`
	// Conflicts are stacks that carry the cluster's tags under names they
	// do not give: listed, never touched.
	Conflicts []query.Conflict `json:"conflicts"`
	// Swarm is what the swarm's status snapshot says: the managers, the
	// leader, the quorum, the snapshot's age and the last backup; null
	// when there is no snapshot to go by (a problem says why).
	Swarm *query.SwarmStatus `json:"swarm"`
	// Autoscale are the autoscaler's last decisions, oldest first, and
	// Unplaceable the pending tasks no group can hold, from the snapshot.
	Autoscale   []wire.ScalingDecision `json:"autoscale"`
	Unplaceable []wire.Unplaceable     `json:"unplaceable"`
	// Alarms are the core's CloudWatch alarms with their states (the
	// command reads them: internal/alarms).
	Alarms []alarms.Alarm `json:"alarms"`
	// Notification is the e-mail subscription of --notify EMAIL and its
	// state (the command reads it: internal/alarms); absent otherwise.
	Notification *alarms.Notification `json:"notification,omitempty"`
	// Behind counts the nodes that run an image, engine or node agent
	// other than their stacks would now (behind.go): what upgrade replaces.
	Behind []Behind `json:"behind"`
	// swarmUnknown says why Swarm is nil, for the text form.
	swarmUnknown string
	// Unread is what could not be read of some groups, shown as "?" (the
	// command says why on stderr; the JSON form has it in each group).
	Unread []query.Unread `json:"-"`
}

// GroupHealth is a group as `describe` shows it.
type GroupHealth struct {
	query.Group
	Health   string    `json:"health"`
	Advice   string    `json:"advice,omitempty"`
	Problems []Problem `json:"problems"`
	// Unread says why its health could not be checked ("": it was).
	Unread string `json:"unread,omitempty"`
}

// Describe reads a cluster's core (outputs, parameters, status) and its
// groups, and checks what each really has.
func (s *Inspector) Describe(ctx context.Context, cluster string) (*Description, error) {
	if err := checkAnyNames(cluster, ""); err != nil {
		return nil, err
	}
	core, err := s.find.getCore(ctx, cluster)
	if err != nil {
		return nil, err
	}
	groups, conflicts, err := s.find.groupStacks(ctx, cluster)
	if err != nil {
		return nil, err
	}
	d := &Description{
		Cluster: cluster, Stack: core.Name, Status: core.Status,
		Outputs: core.Outputs, Parameters: core.Parameters, Groups: []GroupHealth{}, Conflicts: conflicts,
	}
	if !stacks.Classify(core.Status).OK() {
		d.Advice = Advice(core, Ref{Cluster: cluster}, nil)
	}
	bucket := ""
	d.swarmUnknown = fmt.Sprintf("not read while the core is %s", core.Status)
	if settled(core.Status) {
		d.Problems, bucket, err = s.coreProblems(ctx, core)
		if err != nil {
			return nil, err
		}
		d.swarmUnknown = "not read: the core has no usable bucket"
	}
	var swarm query.Swarm
	if bucket != "" {
		if swarm, err = s.status.swarmIn(ctx, cluster, bucket); err != nil {
			return nil, err
		}
		// Its problem says why the swarm is unknown.
		d.Swarm, d.swarmUnknown = swarm.Status(), "see the problem below"
		d.Problems = append(d.Problems, swarmProblems(cluster, swarm)...)
	}
	d.Health = healthOf(core.Status, true, d.Problems)
	d.Unread = query.WithLoadBalancers(ctx, s.ELB, groups)
	query.WithAutoscale(groups, map[string]query.Swarm{cluster: swarm})
	d.Autoscale, d.Unplaceable = []wire.ScalingDecision{}, []wire.Unplaceable{}
	if swarm.Snapshot != nil {
		d.Autoscale = append(d.Autoscale, swarm.Snapshot.Autoscale...)
		d.Unplaceable = append(d.Unplaceable, swarm.Snapshot.Unplaceable...)
	}
	for _, g := range groups {
		g.Ready = swarm.Ready(g.Group)
		h := GroupHealth{Group: g, Problems: []Problem{}}
		if !stacks.Classify(g.Status).OK() {
			st := &stacks.Stack{Name: g.Stack, Status: g.Status}
			h.Advice = Advice(st, Ref{Cluster: cluster, Group: g.Group}, nil)
		}
		var unread error
		if settled(g.Status) {
			h.Problems, unread = s.groupProblems(ctx, cluster, bucket, g)
		}
		h.Health = healthOf(g.Status, g.Joined, h.Problems)
		if unread != nil {
			// What could not be checked hides no other group.
			h.Health, h.Unread, h.Problems = "?", query.Reason(unread), []Problem{}
			d.Unread = append(d.Unread, query.Unread{Row: g.Stack, What: "health", Reason: h.Unread})
		}
		d.Groups = append(d.Groups, h)
	}
	d.Behind = s.behind(ctx, core, groups, swarm)
	return d, nil
}

// settled tells whether a stack is in a state whose resources can be
// checked: no operation moves them, and the stack holds them.
func settled(status string) bool {
	c := stacks.Classify(status)
	return c == stacks.Done || c == stacks.FailedUsable
}

// coreProblems checks the core's join contract and its bucket; it returns
// the bucket when it is the core's own and present ("" otherwise).
func (s *Inspector) coreProblems(ctx context.Context, core *stacks.Stack) ([]Problem, string, error) {
	problems := []Problem{}
	bucket, err := s.find.coreBucket(ctx, core)
	if err != nil && !isRefusal(err) {
		return nil, "", err
	}
	// Only a stack that owns the cluster's bucket (by the bucket's tags)
	// is told to take clusterctl's template again.
	repair := restoreCoreAdvice(core, err == nil && bucket != "")
	if _, jerr := render.JoinFromOutputs(core.Outputs); jerr != nil {
		problems = append(problems, Problem{Broken: true,
			Reason: fmt.Sprintf("%v: groups cannot join it (add-agents and update-group refuse it)", jerr),
			Repair: repair})
	}
	if err != nil {
		problems = append(problems, Problem{Broken: true, Reason: err.Error(), Repair: repair})
		return problems, "", nil
	}
	if bucket == "" {
		return problems, "", nil
	}
	_, err = s.S3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	switch code := errorCode(err); {
	case err == nil:
		return problems, bucket, nil
	case code == "NotFound" || code == "NoSuchBucket":
		problems = append(problems, Problem{Broken: true,
			Reason: fmt.Sprintf("its bucket %s is gone, and with it the join material and the node configurations: no node can join or launch", bucket),
			Repair: fmt.Sprintf("the bucket cannot be brought back in place: delete the cluster with `clusterctl delete-core %s --cascade` and create it again", core.Name)})
		return problems, "", nil
	}
	return nil, "", fmt.Errorf("looking for bucket %s: %w", bucket, err)
}

// restoreCoreAdvice says how to put the core's template, with its join
// contract, back as clusterctl deploys it: update-core renders it again
// from the settings it reads back. A stack that owns no bucket carrying
// the cluster's tags is not proven a core of clusterctl's (its tags can
// be copied): update-core would replace what it holds, so it is only
// pointed at.
func restoreCoreAdvice(core *stacks.Stack, owned bool) string {
	if !owned {
		return fmt.Sprintf("stack %s carries the tags of the core of cluster %q but owns no bucket tagged as that cluster's: it may not be clusterctl's; inspect it with `aws cloudformation describe-stack-resources --stack-name %s` before changing anything", core.Name, core.Name, core.Name)
	}
	return fmt.Sprintf("the core was changed outside clusterctl: deploy it again as clusterctl renders it with `clusterctl update-core %s`", core.Name)
}

// groupProblems checks a group's Auto Scaling group, its nodes in service
// and the node configuration its launch template fetches (in bucket, ""
// when the core's bucket is not usable), and its join.
func (s *Inspector) groupProblems(ctx context.Context, cluster, bucket string, g query.Group) ([]Problem, error) {
	ref := cmds{Ref{Cluster: cluster, Group: g.Group}}
	problems := []Problem{}
	if !g.Joined {
		// Stale: named as a problem for its repair, not a degradation.
		problems = append(problems, Problem{
			Reason: "its join parameters are not the core's current outputs (the core changed since the group was deployed)",
			Repair: fmt.Sprintf("`%s` joins it to the core as it is now", ref.update("")),
		})
	}
	asg := g.Scaling
	if asg == nil {
		return append(problems, Problem{Broken: true,
			Reason: "its Auto Scaling group is gone (deleted outside CloudFormation): it runs no nodes and launches none",
			Repair: s.recreateRepair(ctx, cluster, g.Group)}), nil
	}
	if g.Running < g.Desired {
		problems = append(problems, Problem{
			Reason: fmt.Sprintf("%d of %d nodes in service", g.Running, g.Desired),
			Repair: fmt.Sprintf("the Auto Scaling group replaces nodes on its own; if they keep failing, see why with `%s` and `clusterctl list-nodes -j %s -n %s`", ref.events(), cluster, g.Group),
		})
	}
	if g.Ready != nil && *g.Ready < g.Running {
		notReady := g.Running - *g.Ready
		verb := "are"
		if notReady == 1 {
			verb = "is"
		}
		problems = append(problems, Problem{
			Reason: fmt.Sprintf("%d of %d nodes in service %s not Ready in the swarm", notReady, g.Running, verb),
			Repair: fmt.Sprintf("`clusterctl list-nodes -j %s -n %s` shows each node's swarm state; an agent keeps trying to join on its own (its log on the node: `journalctl -u clusterctl-agent`, through Session Manager)", cluster, g.Group),
		})
	}
	if bucket == "" {
		return problems, nil
	}
	id, version := launchTemplateOf(asg)
	if id == "" {
		return problems, nil
	}
	versions, err := s.artifacts.launchTemplateVersions(ctx, id, []string{version})
	if err != nil {
		return nil, err
	}
	if len(versions) == 0 {
		return append(problems, Problem{Broken: true,
			Reason: fmt.Sprintf("its launch template %s (version %s) is gone: the group cannot launch nodes", id, version),
			Repair: s.recreateRepair(ctx, cluster, g.Group)}), nil
	}
	for _, key := range configKeys(versions[0]) {
		ok, err := s.artifacts.objectExists(ctx, bucket, key)
		if err != nil {
			return nil, err
		}
		if !ok {
			problems = append(problems, Problem{Broken: true,
				Reason: fmt.Sprintf("its node configuration s3://%s/%s is missing: every node it launches fails to start", bucket, key),
				Repair: fmt.Sprintf("`%s` uploads it again", ref.update("")),
			})
		}
	}
	return problems, nil
}

// recreateRepair is recreateAdvice with the group's settings as deployed,
// when they can be read.
func (s *Inspector) recreateRepair(ctx context.Context, cluster, group string) string {
	if og, err := s.observer.ObserveGroup(ctx, cluster, group); err == nil {
		return recreateAdvice(cluster, og.Spec)
	}
	ref := cmds{Ref{Cluster: cluster, Group: group}}
	return fmt.Sprintf("Re-create it: `%s`, then `clusterctl add-agents %s` with its settings.", ref.remove("--yes"), ref.sel())
}

// launchTemplateOf is the launch template and version an Auto Scaling
// group launches from, directly or through its mixed instances policy.
func launchTemplateOf(g *asgtypes.AutoScalingGroup) (id, version string) {
	spec := g.LaunchTemplate
	if spec == nil && g.MixedInstancesPolicy != nil && g.MixedInstancesPolicy.LaunchTemplate != nil {
		spec = g.MixedInstancesPolicy.LaunchTemplate.LaunchTemplateSpecification
	}
	if spec == nil {
		return "", ""
	}
	version = aws.ToString(spec.Version)
	if version == "" {
		version = "$Default"
	}
	return aws.ToString(spec.LaunchTemplateId), version
}

// healthOf is a one-word verdict on a stack status, its join and the
// problems found in what it holds: "broken" when one of them stops it
// from working, else "degraded" when it works with less.
func healthOf(status string, joined bool, problems []Problem) string {
	h := Health(status, joined)
	if h != "healthy" && h != "stale" && h != "degraded" {
		return h
	}
	for _, p := range problems {
		if p.Broken {
			return "broken"
		}
	}
	if h == "healthy" && len(problems) > 0 {
		return "degraded"
	}
	return h
}

// Health is a one-word verdict on a stack status; a group that is not
// joined to the core's current outputs is "stale" even when its stack is
// fine.
func Health(status string, joined bool) string {
	switch c := stacks.Classify(status); c {
	case stacks.Done:
		if !joined {
			return "stale"
		}
		return "healthy"
	case stacks.InProgress:
		return "busy"
	case stacks.FailedUsable:
		return "degraded"
	case stacks.FailedDead:
		return "dead"
	case stacks.Stuck:
		return "stuck"
	}
	return "unknown"
}

// WriteDescription prints a description for a terminal.
func WriteDescription(w io.Writer, d *Description) error {
	fmt.Fprintf(w, "Cluster:  %s\nStack:    %s\nStatus:   %s (%s)\n", d.Cluster, d.Stack, d.Status, d.Health)
	if d.Advice != "" {
		fmt.Fprintf(w, "Advice:   %s\n", d.Advice)
	}
	writeSwarmHead(w, d)
	writeProblems(w, "", d.Problems)
	if err := writeManagers(w, d.Swarm); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nOutputs:")
	if err := query.WriteTable(w, query.KVTable(d.Outputs, "OUTPUT", "VALUE")); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nParameters:")
	if err := query.WriteTable(w, query.KVTable(d.Parameters, "PARAMETER", "VALUE")); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nGroups:")
	if len(d.Groups) == 0 {
		fmt.Fprintln(w, "(none)")
	} else {
		t := query.Table{Header: []string{"GROUP", "STATUS", "HEALTH", "TYPE", "DESIRED", "RUNNING", "READY", "JOINED", "AUTOSCALE"}}
		for _, g := range d.Groups {
			joined := "yes"
			if !g.Joined {
				joined = "no"
			}
			t.Rows = append(t.Rows, []string{g.Group.Group, g.Status, g.Health, g.InstanceType, fmt.Sprint(g.Desired), fmt.Sprint(g.Running), query.ReadyText(g.Ready), joined, g.AutoscaleText()})
		}
		if err := query.WriteTable(w, t); err != nil {
			return err
		}
		for _, g := range d.Groups {
			if g.Advice != "" {
				fmt.Fprintf(w, "%s: %s\n", g.Group.Group, g.Advice)
			}
			writeProblems(w, g.Group.Group+": ", g.Problems)
		}
		writeLoadBalancers(w, d.Groups)
	}
	writeAutoscale(w, d)
	writeBehind(w, d.Behind, d.Cluster)
	if len(d.Conflicts) > 0 {
		fmt.Fprintln(w, "\nConflicts:")
		for _, c := range d.Conflicts {
			fmt.Fprintln(w, c)
		}
	}
	return nil
}

// writeAutoscale lists the autoscaler's last decisions and the tasks it
// found no group for, as the snapshot keeps them.
func writeAutoscale(w io.Writer, d *Description) {
	if len(d.Autoscale) > 0 {
		fmt.Fprintln(w, "\nAutoscaling:")
		for _, a := range d.Autoscale {
			fmt.Fprintf(w, "%s  %s\n", a.Time.UTC().Format(time.RFC3339), query.Printable(a.String()))
		}
	}
	if len(d.Unplaceable) > 0 {
		fmt.Fprintln(w, "\nUnplaceable tasks (no group can hold them; not scaled for):")
		for _, u := range d.Unplaceable {
			// The swarm's words, as a table's cells.
			fmt.Fprintf(w, "%s: %s: %s\n", query.Printable(u.Service), query.Plural(u.Tasks, "task"), query.Printable(u.Reason))
		}
	}
}

// writeSwarmHead says what the status snapshot says of the swarm as a
// whole: its age, the quorum, the leader and the backup.
func writeSwarmHead(w io.Writer, d *Description) {
	st := d.Swarm
	if st == nil {
		fmt.Fprintf(w, "Swarm:    unknown (%s)\n", d.swarmUnknown)
		return
	}
	age := query.FormatAge(time.Duration(st.AgeSeconds * float64(time.Second)))
	switch {
	case st.Stale && st.AgeSeconds < 0:
		fmt.Fprintf(w, "Swarm:    snapshot dated %s ahead, STALE: below is what it says\n", age)
	case st.Stale:
		fmt.Fprintf(w, "Swarm:    snapshot %s old, STALE (over %s): below is the swarm as it was then\n", age, query.FormatAge(query.StaleAfter))
	default:
		fmt.Fprintf(w, "Swarm:    snapshot %s old\n", age)
	}
	leader := st.Leader
	if leader == "" {
		leader = "none"
	}
	fmt.Fprintf(w, "Quorum:   %s\nLeader:   %s\nBackup:   %s\n", st.Quorum, leader, st.Backup.Text(len(st.Managers)))
}

// writeManagers lists the swarm's managers.
func writeManagers(w io.Writer, st *query.SwarmStatus) error {
	if st == nil {
		return nil
	}
	fmt.Fprintln(w, "\nManagers:")
	return query.WriteTable(w, st.ManagersTable())
}

func writeProblems(w io.Writer, prefix string, problems []Problem) {
	for _, p := range problems {
		fmt.Fprintf(w, "%sProblem: %s\n%s  Repair: %s\n", prefix, p.Reason, strings.Repeat(" ", len(prefix)), p.Repair)
	}
}

// isRefusal tells whether err refuses on what was met (exit 1) rather
// than failing to find out.
func isRefusal(err error) bool {
	var r *refusal
	return errors.As(err, &r)
}
