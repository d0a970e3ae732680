package cfnfake

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// ChangeSet scripts the next change set created for a stack.
type ChangeSet struct {
	Changes []Change
	// Empty makes the change set FAILED with CloudFormation's "didn't
	// contain changes" reason.
	Empty bool
	// FailReason makes it FAILED with another reason.
	FailReason string
	// Refuse makes CreateChangeSet itself answer ValidationError with this
	// message (moto answers "No updates are to be performed." so).
	Refuse string
	// ReadyAfterReads is how many DescribeChangeSet calls see it
	// CREATE_IN_PROGRESS before its final status; 0 means 1.
	ReadyAfterReads int
}

// Change is one resource change of a scripted change set.
type Change struct {
	LogicalID, Type, Action, Replacement, PhysicalID string
	Scope                                            []string
}

// NoChangesReason is CloudFormation's reason for an empty change set.
const NoChangesReason = "The submitted information didn't contain changes. Submit different information to create a change set."

// PlanChanges queues the outcome of the next change set created for stack.
// Without one, a change set is empty when template and parameters are
// unchanged, and otherwise modifies every resource of the stack in place.
func (s *Server) PlanChanges(stack string, cs ChangeSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.csScripts[stack] = append(s.csScripts[stack], cs)
}

type changeSet struct {
	id, name, stackID, stackName, clientToken string
	status, reason, execStatus                string
	changes                                   []Change
	readyAfter, reads                         int
	template                                  string
	params, tags                              []kv
	capabilities                              []string
	execToken                                 string
	deleted                                   bool
	final                                     string // status once ready
}

var changeSetNameRE = regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]*$`)

func members(form url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		k := prefix + ".member." + strconv.Itoa(i)
		if !form.Has(k) {
			return out
		}
		out = append(out, form.Get(k))
	}
}

// pairs reads a list of structures such as Parameters.member.N.ParameterKey.
func pairs(form url.Values, prefix, key, val string) []kv {
	var out []kv
	for i := 1; ; i++ {
		p := prefix + ".member." + strconv.Itoa(i) + "."
		if !form.Has(p + key) {
			return out
		}
		out = append(out, kv{form.Get(p + key), form.Get(p + val)})
	}
}

// params resolves UsePreviousValue against the stack's current values.
func params(form url.Values, prev []kv) []kv {
	var out []kv
	for i := 1; ; i++ {
		p := "Parameters.member." + strconv.Itoa(i) + "."
		if !form.Has(p + "ParameterKey") {
			return out
		}
		k := form.Get(p + "ParameterKey")
		v := form.Get(p + "ParameterValue")
		if form.Get(p+"UsePreviousValue") == "true" {
			for _, pv := range prev {
				if pv.k == k {
					v = pv.v
				}
			}
		}
		out = append(out, kv{k, v})
	}
}

func pageSize(n int) int {
	if n <= 0 {
		return 100
	}
	return n
}

var updatable = []string{"CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_COMPLETE", "IMPORT_ROLLBACK_COMPLETE", "UPDATE_FAILED"}

func (s *Server) handle(action string, form url.Values) (string, *apiError) {
	var x xw
	var err *apiError
	switch action {
	case "CreateStack":
		err = s.createStack(&x, form)
	case "DescribeStacks":
		err = s.describeStacks(&x, form)
	case "DescribeStackEvents":
		err = s.describeStackEvents(&x, form)
	case "ListStackResources":
		err = s.listStackResources(&x, form)
	case "DescribeStackResource":
		err = s.describeStackResource(&x, form)
	case "ListStacks":
		err = s.listStacks(&x, form)
	case "DeleteStack":
		err = s.deleteStack(form)
	case "CreateChangeSet":
		err = s.createChangeSet(&x, form)
	case "DescribeChangeSet":
		err = s.describeChangeSet(&x, form)
	case "ExecuteChangeSet":
		err = s.executeChangeSet(form)
	case "DeleteChangeSet":
		err = s.deleteChangeSet(form)
	case "GetTemplate":
		err = s.getTemplate(&x, form)
	case "ContinueUpdateRollback":
		err = s.continueUpdateRollback(form)
	default:
		err = &apiError{400, "InvalidAction", "action " + action + " is not implemented by cfnfake"}
	}
	return x.b.String(), err
}

func (s *Server) createStack(x *xw, form url.Values) *apiError {
	name := form.Get("StackName")
	body := form.Get("TemplateBody")
	switch {
	case name == "":
		return validation("1 validation error detected: Value null at 'stackName' failed to satisfy constraint: Member must not be null")
	case body == "":
		return validation("Either Template URL or Template Body must be specified.")
	case len(body) > 51200:
		return validation("1 validation error detected: Value at 'templateBody' failed to satisfy constraint: Member must have length less than or equal to 51200")
	case s.live(name) != nil:
		return &apiError{400, "AlreadyExistsException", fmt.Sprintf("Stack [%s] already exists", name)}
	}
	now := s.Clock.Now()
	st := &stack{
		name: name, status: "CREATE_IN_PROGRESS", created: now, updated: now, template: body,
		params: params(form, nil), tags: pairs(form, "Tags", "Key", "Value"),
		capabilities: members(form, "Capabilities"), disableRollback: form.Get("DisableRollback") == "true",
	}
	st.id = s.stackID(name)
	s.stacks = append(s.stacks, st)
	s.start(st, Create, form.Get("ClientRequestToken"))
	x.leaf("StackId", st.id)
	return nil
}

func writeStack(x *xw, st *stack) {
	x.leaf("StackId", st.id)
	x.leaf("StackName", st.name)
	x.leaf("StackStatus", st.status)
	x.opt("StackStatusReason", st.reason)
	x.time("CreationTime", st.created)
	if !st.updated.Equal(st.created) {
		x.time("LastUpdatedTime", st.updated)
	}
	x.leaf("DisableRollback", strconv.FormatBool(st.disableRollback))
	x.list("Parameters", len(st.params), func(i int) {
		x.leaf("ParameterKey", st.params[i].k)
		x.leaf("ParameterValue", st.params[i].v)
	})
	x.list("Outputs", len(st.outputs), func(i int) {
		x.leaf("OutputKey", st.outputs[i].k)
		x.leaf("OutputValue", st.outputs[i].v)
	})
	x.list("Tags", len(st.tags), func(i int) {
		x.leaf("Key", st.tags[i].k)
		x.leaf("Value", st.tags[i].v)
	})
	x.list("Capabilities", len(st.capabilities), func(i int) { x.b.WriteString(st.capabilities[i]) })
}

func (s *Server) describeStacks(x *xw, form url.Values) *apiError {
	if name := form.Get("StackName"); name != "" {
		st := s.find(name)
		if st == nil {
			return validation("Stack with id %s does not exist", name)
		}
		s.read(st)
		x.list("Stacks", 1, func(int) { writeStack(x, st) })
		return nil
	}
	var all []*stack
	for _, st := range s.stacks {
		if !st.deleted {
			all = append(all, st)
		}
	}
	from, _ := strconv.Atoi(form.Get("NextToken"))
	to := min(len(all), from+pageSize(s.StackPageSize))
	page := all[min(from, len(all)):to]
	x.list("Stacks", len(page), func(i int) { writeStack(x, page[i]) })
	if to < len(all) {
		x.leaf("NextToken", strconv.Itoa(to))
	}
	return nil
}

func (s *Server) describeStackEvents(x *xw, form url.Values) *apiError {
	name := form.Get("StackName")
	st := s.find(name)
	if st == nil {
		return validation("Stack [%s] does not exist", name)
	}
	s.read(st)
	// Newest first; the token is the ID of the last event returned, so
	// events written between pages do not shift the next page.
	i := len(st.events) - 1
	if tok := form.Get("NextToken"); tok != "" {
		for i >= 0 && st.events[i].id != tok {
			i--
		}
		i--
	}
	var page []event
	for ; i >= 0 && len(page) < pageSize(s.EventPageSize); i-- {
		page = append(page, st.events[i])
	}
	x.list("StackEvents", len(page), func(j int) {
		e := page[j]
		x.leaf("EventId", e.id)
		x.leaf("StackId", st.id)
		x.leaf("StackName", st.name)
		x.leaf("LogicalResourceId", e.logical)
		x.opt("PhysicalResourceId", e.physical)
		x.leaf("ResourceType", e.typ)
		x.time("Timestamp", e.at)
		x.leaf("ResourceStatus", e.status)
		x.opt("ResourceStatusReason", e.reason)
		x.opt("ClientRequestToken", e.token)
	})
	if i >= 0 && len(page) > 0 {
		x.leaf("NextToken", page[len(page)-1].id)
	}
	return nil
}

func (s *Server) listStackResources(x *xw, form url.Values) *apiError {
	name := form.Get("StackName")
	st := s.find(name)
	if st == nil {
		return validation("Stack with id %s does not exist", name)
	}
	from, _ := strconv.Atoi(form.Get("NextToken"))
	to := min(len(st.resources), from+pageSize(s.ResourcePageSize))
	page := st.resources[min(from, len(st.resources)):to]
	x.list("StackResourceSummaries", len(page), func(i int) { writeResource(x, page[i]) })
	if to < len(st.resources) {
		x.leaf("NextToken", strconv.Itoa(to))
	}
	return nil
}

func (s *Server) describeStackResource(x *xw, form url.Values) *apiError {
	name, logical := form.Get("StackName"), form.Get("LogicalResourceId")
	st := s.find(name)
	if st == nil {
		return validation("Stack '%s' does not exist", name)
	}
	r := st.res(logical)
	if r == nil {
		return validation("Resource %s does not exist for stack %s", logical, name)
	}
	x.open("StackResourceDetail")
	x.leaf("StackName", st.name)
	x.leaf("StackId", st.id)
	writeResource(x, r)
	x.close("StackResourceDetail")
	return nil
}

// writeResource writes the fields a resource summary and detail share.
func writeResource(x *xw, r *resource) {
	x.leaf("LogicalResourceId", r.logical)
	x.opt("PhysicalResourceId", r.physical)
	x.leaf("ResourceType", r.typ)
	x.time("LastUpdatedTimestamp", r.updated)
	x.leaf("ResourceStatus", r.status)
	x.opt("ResourceStatusReason", r.reason)
}

// listStacks lists stack summaries, deleted stacks included (as
// CloudFormation keeps them for 90 days), oldest first, filtered by
// StackStatusFilter when given.
func (s *Server) listStacks(x *xw, form url.Values) *apiError {
	filter := members(form, "StackStatusFilter")
	var all []*stack
	for _, st := range s.stacks {
		if len(filter) == 0 || slices.Contains(filter, st.status) {
			all = append(all, st)
		}
	}
	from, _ := strconv.Atoi(form.Get("NextToken"))
	to := min(len(all), from+pageSize(s.StackPageSize))
	page := all[min(from, len(all)):to]
	x.list("StackSummaries", len(page), func(i int) {
		st := page[i]
		x.leaf("StackId", st.id)
		x.leaf("StackName", st.name)
		x.time("CreationTime", st.created)
		if !st.updated.Equal(st.created) {
			x.time("LastUpdatedTime", st.updated)
		}
		if st.deleted {
			x.time("DeletionTime", st.deletedAt)
		}
		x.leaf("StackStatus", st.status)
		x.opt("StackStatusReason", st.reason)
	})
	if to < len(all) {
		x.leaf("NextToken", strconv.Itoa(to))
	}
	return nil
}

func (s *Server) deleteStack(form url.Values) *apiError {
	st := s.find(form.Get("StackName"))
	if st == nil || st.deleted || st.status == "DELETE_IN_PROGRESS" {
		return nil // deleting what is gone, or going, succeeds
	}
	retain := members(form, "RetainResources")
	if len(retain) > 0 && st.status != "DELETE_FAILED" {
		return validation("Invalid operation on stack [%s]. RetainResources can only be specified when the stack is in the DELETE_FAILED state", st.id)
	}
	if st.run != nil {
		return validation("Stack [%s] cannot be deleted while in status %s", st.name, st.status)
	}
	st.retain = retain
	s.start(st, Delete, form.Get("ClientRequestToken"))
	return nil
}

func deleteScript(st *stack, retain []string) []Step {
	var evs []Ev
	for _, r := range st.resources {
		switch {
		case r.status == "DELETE_COMPLETE" || r.status == "DELETE_SKIPPED":
		case slices.Contains(retain, r.logical):
			evs = append(evs, Ev{r.logical, r.typ, "DELETE_SKIPPED", ""})
		default:
			evs = append(evs, Ev{r.logical, r.typ, "DELETE_COMPLETE", ""})
		}
	}
	return []Step{
		{Status: "DELETE_IN_PROGRESS", Reason: "User Initiated"},
		{At: time.Second, Events: evs},
		{At: 2 * time.Second, Status: "DELETE_COMPLETE"},
	}
}

func (s *Server) changeSet(form url.Values) *changeSet {
	name, stackName := form.Get("ChangeSetName"), form.Get("StackName")
	for _, cs := range s.changeSets {
		if cs.deleted {
			continue
		}
		if cs.id == name || cs.name == name && (stackName == cs.stackName || stackName == cs.stackID) {
			return cs
		}
	}
	return nil
}

func csNotFound(name string) *apiError {
	return &apiError{404, "ChangeSetNotFound", fmt.Sprintf("ChangeSet [%s] does not exist", name)}
}

func (s *Server) createChangeSet(x *xw, form url.Values) *apiError {
	name, csName := form.Get("StackName"), form.Get("ChangeSetName")
	if form.Get("ChangeSetType") != "" && form.Get("ChangeSetType") != "UPDATE" {
		return validation("cfnfake implements UPDATE change sets only")
	}
	if !changeSetNameRE.MatchString(csName) || len(csName) > 128 {
		return validation("1 validation error detected: Value '%s' at 'changeSetName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z][-a-zA-Z0-9]*", csName)
	}
	st := s.live(name)
	if st == nil {
		return validation("Stack [%s] does not exist", name)
	}
	if tok := form.Get("ClientToken"); tok != "" {
		for _, cs := range s.changeSets {
			if cs.clientToken == tok && cs.stackID == st.id {
				x.leaf("Id", cs.id)
				x.leaf("StackId", st.id)
				return nil // a retry of a call that took effect
			}
		}
	}
	if !slices.Contains(updatable, st.status) {
		return validation("Stack:%s is in %s state and can not be updated.", st.id, st.status)
	}
	for _, cs := range s.changeSets {
		if !cs.deleted && cs.stackID == st.id && cs.name == csName {
			return &apiError{400, "AlreadyExistsException", "ChangeSet " + csName + " already exists"}
		}
	}
	template := form.Get("TemplateBody")
	if form.Get("UsePreviousTemplate") == "true" {
		template = st.template
	}
	if len(template) > 51200 {
		return validation("1 validation error detected: Value at 'templateBody' failed to satisfy constraint: Member must have length less than or equal to 51200")
	}
	script := ChangeSet{}
	if q := s.csScripts[st.name]; len(q) > 0 {
		script, s.csScripts[st.name] = q[0], q[1:]
	} else if template == st.template && sameParams(params(form, st.params), st.params) {
		script.Empty = true
	} else {
		for _, r := range st.resources {
			script.Changes = append(script.Changes, Change{LogicalID: r.logical, Type: r.typ, Action: "Modify", Replacement: "False", PhysicalID: r.physical, Scope: []string{"Properties"}})
		}
	}
	if script.Refuse != "" {
		return validation("%s", script.Refuse)
	}
	s.seq++
	cs := &changeSet{
		id:   fmt.Sprintf("arn:aws:cloudformation:us-east-1:123456789012:changeSet/%s/%08x-0000-4000-8000-%012x", csName, s.seq, s.seq),
		name: csName, stackID: st.id, stackName: st.name, clientToken: form.Get("ClientToken"),
		status: "CREATE_PENDING", execStatus: "UNAVAILABLE", changes: script.Changes,
		readyAfter: max(script.ReadyAfterReads, 1), template: template,
		params: params(form, st.params), tags: pairs(form, "Tags", "Key", "Value"),
		capabilities: members(form, "Capabilities"), final: "CREATE_COMPLETE",
	}
	switch {
	case script.Empty:
		cs.final, cs.reason = "FAILED", NoChangesReason
	case script.FailReason != "":
		cs.final, cs.reason = "FAILED", script.FailReason
	}
	s.changeSets = append(s.changeSets, cs)
	x.leaf("Id", cs.id)
	x.leaf("StackId", st.id)
	return nil
}

func (s *Server) describeChangeSet(x *xw, form url.Values) *apiError {
	cs := s.changeSet(form)
	if cs == nil {
		return csNotFound(form.Get("ChangeSetName"))
	}
	if cs.status == "CREATE_PENDING" || cs.status == "CREATE_IN_PROGRESS" {
		cs.reads++
		if cs.reads > cs.readyAfter {
			cs.status = cs.final
			if cs.final == "CREATE_COMPLETE" {
				cs.execStatus = "AVAILABLE"
			}
		} else {
			cs.status = "CREATE_IN_PROGRESS"
		}
	}
	from, _ := strconv.Atoi(form.Get("NextToken"))
	changes := cs.changes
	if cs.status != "CREATE_COMPLETE" {
		changes = nil
	}
	to := min(len(changes), from+pageSize(s.ChangePageSize))
	page := changes[min(from, len(changes)):to]
	x.leaf("ChangeSetId", cs.id)
	x.leaf("ChangeSetName", cs.name)
	x.leaf("StackId", cs.stackID)
	x.leaf("StackName", cs.stackName)
	x.leaf("Status", cs.status)
	x.opt("StatusReason", cs.reason)
	x.leaf("ExecutionStatus", cs.execStatus)
	x.list("Changes", len(page), func(i int) {
		c := page[i]
		x.leaf("Type", "Resource")
		x.open("ResourceChange")
		x.leaf("Action", c.Action)
		x.leaf("LogicalResourceId", c.LogicalID)
		x.opt("PhysicalResourceId", c.PhysicalID)
		x.leaf("ResourceType", c.Type)
		x.opt("Replacement", c.Replacement)
		x.list("Scope", len(c.Scope), func(j int) { x.b.WriteString(c.Scope[j]) })
		x.close("ResourceChange")
	})
	if to < len(changes) {
		x.leaf("NextToken", strconv.Itoa(to))
	}
	return nil
}

func (s *Server) executeChangeSet(form url.Values) *apiError {
	cs := s.changeSet(form)
	if cs == nil {
		return csNotFound(form.Get("ChangeSetName"))
	}
	tok := form.Get("ClientRequestToken")
	if cs.execToken != "" && cs.execToken == tok {
		return nil // a retry of a call that took effect
	}
	if cs.status != "CREATE_COMPLETE" || cs.execStatus != "AVAILABLE" {
		return &apiError{400, "InvalidChangeSetStatus", fmt.Sprintf("ChangeSet [%s] cannot be executed in its current status of [%s]", cs.id, cs.status)}
	}
	st := s.live(cs.stackID)
	if st == nil {
		return validation("Stack [%s] does not exist", cs.stackName)
	}
	if !slices.Contains(updatable, st.status) {
		return validation("Stack:%s is in %s state and can not be updated.", st.id, st.status)
	}
	cs.execStatus, cs.execToken = "EXECUTE_IN_PROGRESS", tok
	st.template, st.params, st.updated = cs.template, cs.params, s.Clock.Now()
	if len(cs.tags) > 0 {
		st.tags = cs.tags
	}
	st.disableRollback = form.Get("DisableRollback") == "true"
	s.start(st, Update, tok)
	return nil
}

func (s *Server) deleteChangeSet(form url.Values) *apiError {
	cs := s.changeSet(form)
	if cs == nil {
		return csNotFound(form.Get("ChangeSetName"))
	}
	if cs.execStatus == "EXECUTE_IN_PROGRESS" {
		return &apiError{400, "InvalidChangeSetStatus", "Cannot delete ChangeSet in status EXECUTE_IN_PROGRESS"}
	}
	cs.deleted = true
	return nil
}

func (s *Server) getTemplate(x *xw, form url.Values) *apiError {
	name := form.Get("StackName")
	st := s.find(name)
	if st == nil {
		return validation("Stack with id %s does not exist", name)
	}
	x.leaf("TemplateBody", st.template)
	x.list("StagesAvailable", 2, func(i int) { x.b.WriteString([]string{"Original", "Processed"}[i]) })
	return nil
}

func (s *Server) continueUpdateRollback(form url.Values) *apiError {
	name := form.Get("StackName")
	st := s.live(name)
	if st == nil {
		return validation("Stack [%s] does not exist", name)
	}
	tok := form.Get("ClientRequestToken")
	if st.run != nil && st.run.action == ContinueRollback && st.run.token == tok {
		return nil // a retry of a call that took effect
	}
	if st.status != "UPDATE_ROLLBACK_FAILED" {
		return validation("Stack %s is in %s state and can not continue update rollback.", st.id, st.status)
	}
	s.start(st, ContinueRollback, tok)
	return nil
}

func sameParams(a, b []kv) bool {
	m := map[string]string{}
	for _, p := range a {
		m[p.k] = p.v
	}
	if len(m) != len(b) {
		return false
	}
	for _, p := range b {
		if v, ok := m[p.k]; !ok || v != p.v {
			return false
		}
	}
	return true
}
