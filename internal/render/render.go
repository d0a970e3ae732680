// Package render builds clusterctl's CloudFormation templates: the spec of
// a core or a group (internal/spec) becomes the template body, the
// deploy-time parameters and the ownership tags of one stack; and a
// deployed stack is read back into the spec (Read*). It makes no AWS
// calls, so `render core` and `render group` work offline.
//
// The spec is validated before it gets here (spec.Complete); render checks
// only what rendering decides: the template, user data and parameter
// limits, and that the join contract fits.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/templates"
)

// ContractVersion is the version of the join contract the core template
// publishes and the group template consumes. Version 1 pinned the core's
// one control node (ControlPrivateIp); version 2 has managers in an Auto
// Scaling group, found through the bucket (ManagersKey).
const ContractVersion = "2"

// ManagersContract is the first join contract whose core runs its
// managers in an Auto Scaling group.
const ManagersContract = "2"

// Limits that CloudFormation and EC2 enforce on what is rendered; checking
// them here turns a late deploy failure into a clear error.
const (
	MaxTemplateBytes = 51200 // TemplateBody; larger bodies must go through S3
	// MaxLoaderBytes bounds the loader (the user data of every node) well
	// within EC2's limit: what a node does belongs in the node agent.
	MaxLoaderBytes = 4096
	MaxParameters  = 200
)

// Rendered is one stack ready to deploy.
type Rendered struct {
	StackName    string            // core: the cluster; group: <cluster>-<group>
	Template     []byte            // deterministic, indented JSON with trailing newline
	Parameters   map[string]string // one entry for every parameter the template declares
	Tags         map[string]string // stack tags
	Capabilities []string          // core: CAPABILITY_IAM; group: none
	// Artifacts must be uploaded to the cluster bucket (server-side
	// encrypted) before the stack is created or updated: a group's node
	// configuration, which its user data fetches and verifies. Rendered
	// offline too, then for an empty bucket name.
	Artifacts []Artifact
}

// coreData is what core.json.tmpl and the managers' loader
// (node/loader.sh.tmpl) see.
type coreData struct {
	N                                 names.Set
	Cluster, Version, ContractVersion string
	HookName                          string // the termination lifecycle hook of the managers
	LogGroup                          string // the cluster's log group
	Metadata                          metadata
	UserData                          string
	Tags                              []label // the operator's, sorted by key
	Secrets                           secretsData

	// What each role may write: the managers' metrics namespace and the
	// nodes' (names.SwarmMetricNamespace, NodeMetricNamespace), and the
	// prefixes of the log streams of each role (names.LogStreamPrefix).
	SwarmMetrics, NodeMetrics, ManagerStreams, AgentStreams string

	Dashboard dashboardData // with the alarms
	// EngineVersionPattern is the shape of the engine version parameter
	// (spec.EngineVersionRE).
	EngineVersionPattern string
}

// groupData is what workergroup.json.tmpl and the agents' loader
// (node/loader.sh.tmpl) see.
type groupData struct {
	N                                              names.Set
	Cluster, Group, Name, Version, ContractVersion string
	Labels                                         []label // sorted by key
	Tags                                           []label // the operator's, sorted by key
	HookName                                       string
	UserData                                       string
	Metadata                                       metadata
	// A mixed group (several instance types, or spot) has a mixed
	// instances policy with one override per type; a spot group the spot
	// parameters and capacity rebalancing too.
	Mixed, Spot     bool
	InstanceTypes   []string
	SpotAllocations []string
	// InstanceTypesTag is the types as names.TagInstanceTypes says them;
	// Autoscale the scale-down delay of an autoscaled group (its
	// names.TagAutoscale), "" for a group of a fixed count.
	InstanceTypesTag, Autoscale string
	loadBalancerData
}

type label struct{ Key, Value string }

// tagList is the operator's tags in key order, for the templates.
func tagList(t spec.Tags) []label {
	var out []label
	for _, k := range t.Keys() {
		out = append(out, label{k, t[k]})
	}
	return out
}

// withTags adds the operator's tags to a stack's own; spec refuses keys
// of clusterctl's, so none is overwritten.
func withTags(own map[string]string, t spec.Tags) map[string]string {
	for k, v := range t {
		own[k] = v
	}
	return own
}

// Build is what a render takes of the clusterctl that runs it: its version
// and the node agents it pins.
type Build struct {
	Version string
	// Agents maps an architecture (amd64, arm64) to the SHA-256 (hex) of
	// the node agent binary for linux on it.
	Agents map[string]string
}

// agentParameters sets the parameters that pin the node agents.
func (b Build) agentParameters(params map[string]string) error {
	for arch, p := range map[string]string{"amd64": names.ParamNodeAgentAmd64, "arm64": names.ParamNodeAgentArm64} {
		h := b.Agents[arch]
		if !sha256Hex.MatchString(h) {
			return fmt.Errorf("no node agent pinned for linux/%s", arch)
		}
		params[p] = h
	}
	return nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Core renders the core stack of cluster from its spec.
func Core(cluster string, core spec.Core, b Build) (*Rendered, error) {
	r, err := renderCore(cluster, core, b)
	if err != nil {
		return nil, fmt.Errorf("rendering core template: %w", err)
	}
	return r, nil
}

func renderCore(cluster string, core spec.Core, b Build) (*Rendered, error) {
	version := b.Version
	if version == "" {
		return nil, fmt.Errorf("clusterctl version is empty")
	}
	core.Default()
	imageParam, imageID, err := imageParameters(core.ImageID, core.InstanceType)
	if err != nil {
		return nil, err
	}
	meta, err := intentOf(&core)
	if err != nil {
		return nil, err
	}
	data := coreData{N: names.Template(), Cluster: cluster, Version: version, ContractVersion: ContractVersion,
		HookName: names.LifecycleHook(cluster), Metadata: meta, Tags: tagList(core.Tags), LogGroup: names.LogGroup(cluster),
		SwarmMetrics: names.SwarmMetricNamespace(cluster), NodeMetrics: names.NodeMetricNamespace(cluster),
		ManagerStreams: names.LogStreamPrefix(true), AgentStreams: names.LogStreamPrefix(false),
		EngineVersionPattern: spec.EngineVersionRE.String()}
	data.UserData, err = controlUserData()
	if err != nil {
		return nil, err
	}
	if data.Secrets, err = secretsOf(cluster, core.Secrets); err != nil {
		return nil, err
	}
	if data.Dashboard, err = dashboardOf(cluster); err != nil {
		return nil, err
	}
	body, err := execute("core/*.tmpl", "core.json.tmpl", data)
	if err != nil {
		return nil, err
	}
	params := spec.Parameters(core)
	params[names.ParamImageParameter] = imageParam
	params[names.ParamImageID] = imageID
	notifyParameters(params, core.Notify)
	if err := b.agentParameters(params); err != nil {
		return nil, err
	}
	r := &Rendered{
		StackName:  cluster,
		Template:   body,
		Parameters: params,
		Tags: withTags(map[string]string{
			names.TagCluster: cluster,
			names.TagRole:    names.RoleCore,
			names.TagGroup:   names.GroupControl,
			names.TagVersion: version,
		}, core.Tags),
		Capabilities: []string{"CAPABILITY_IAM"},
	}
	if core.Network != "" {
		// How delete-network finds the cores that use a network.
		r.Tags[names.TagNetwork] = core.Network
	}
	if err := check(r); err != nil {
		return nil, err
	}
	return r, nil
}

// notifyParameters make where the alarms notify the parameter of its kind:
// an e-mail address or a topic's ARN (spec checked which it is).
func notifyParameters(params map[string]string, notify string) {
	params[names.ParamNotifyEmail], params[names.ParamNotifyTopic] = "", ""
	if strings.HasPrefix(notify, "arn:") {
		params[names.ParamNotifyTopic] = notify
	} else {
		params[names.ParamNotifyEmail] = notify
	}
}

// Group renders the stack of group g of cluster, joined to the core's
// outputs in join (the zero Join renders offline: empty join parameters).
func Group(cluster string, g spec.Group, join Join, b Build) (*Rendered, error) {
	r, err := renderGroup(cluster, g, join, b)
	if err != nil {
		return nil, fmt.Errorf("rendering group template: %w", err)
	}
	return r, nil
}

func renderGroup(cluster string, g spec.Group, join Join, b Build) (*Rendered, error) {
	version := b.Version
	if version == "" {
		return nil, fmt.Errorf("clusterctl version is empty")
	}
	if join.ClusterName != "" && join.ClusterName != cluster {
		return nil, fmt.Errorf("core outputs belong to cluster %q, not %q", join.ClusterName, cluster)
	}
	if v := join.ContractVersion; v != "" && v != ContractVersion {
		return nil, &ContractError{Core: v, Want: ContractVersion}
	}
	g.Default()
	name := names.GroupStack(cluster, g.Name)
	imageParam, imageID, err := imageParameters(g.ImageID, g.InstanceType.First())
	if err != nil {
		return nil, err
	}
	meta, err := intentOf(&g)
	if err != nil {
		return nil, err
	}
	if join.LogGroupName != "" {
		meta.Logs = &NodeLogs{Group: join.LogGroupName, Driver: join.LogDriver}
	}
	meta.EngineVersion = join.EngineVersion
	subnets, subnetsTag := join.SubnetIds, names.SubnetsCore
	if len(g.SubnetIDs) > 0 {
		subnets, subnetsTag = g.SubnetIDs, names.SubnetsOwn
	}
	imageTag := g.ImageID
	if imageTag == "" {
		imageTag = names.ImageDefault
	}
	labelList := g.Labels.String()
	labelsTag := labelList
	if labelsTag == "" {
		labelsTag = names.NoLabels
	}
	var labels []label
	for _, k := range g.Labels.Keys() {
		labels = append(labels, label{k, g.Labels[k]})
	}
	data := groupData{
		N:       names.Template(),
		Cluster: cluster, Group: g.Name, Name: name, Version: version,
		ContractVersion: ContractVersion, Labels: labels, Tags: tagList(g.Tags), Metadata: meta,
		HookName: names.LifecycleHook(cluster),
		Mixed:    g.Mixed(), Spot: g.Spot, InstanceTypes: g.InstanceType, SpotAllocations: spec.SpotAllocations(),
		InstanceTypesTag: g.InstanceType.String(),
		loadBalancerData: loadBalancerOf(g, join.VpcCidr),
	}
	if g.Autoscale.Enabled {
		data.Autoscale = spec.Duration(g.Autoscale.IdleFor()).String()
	}
	var settings Artifact
	data.UserData, settings, err = agentUserData(data, labelList, join)
	if err != nil {
		return nil, err
	}
	body, err := execute("workergroup/*.tmpl", "workergroup.json.tmpl", data)
	if err != nil {
		return nil, err
	}
	params := join.Outputs()
	for k, v := range spec.Parameters(g) {
		params[k] = v
	}
	if !g.Spot {
		// Every node on-demand: the template has no purchase mix to take.
		for _, k := range []string{names.ParamOnDemandBaseCapacity, names.ParamOnDemandPercentage, names.ParamSpotAllocationStrategy} {
			delete(params, k)
		}
	}
	loadBalancerParameters(params, g, data.loadBalancerData, LoadBalancerSubnets(g, join))
	params[names.ParamSubnetIDs] = strings.Join(subnets, ",")
	params[names.ParamImageParameter] = imageParam
	params[names.ParamImageID] = imageID
	params[names.ParamMaxBatchSize] = strconv.Itoa(g.MaxBatchSize())
	params[names.ParamMinInstancesInService] = strconv.Itoa(g.MinInstancesInService())
	if err := b.agentParameters(params); err != nil {
		return nil, err
	}
	r := &Rendered{
		StackName:  name,
		Template:   body,
		Parameters: params,
		Tags: withTags(map[string]string{
			names.TagCluster: cluster,
			names.TagRole:    names.RoleAgents,
			names.TagGroup:   g.Name,
			names.TagVersion: version,
			names.TagLabels:  labelsTag,
			names.TagImage:   imageTag,
			names.TagSubnets: subnetsTag,
		}, g.Tags),
		Capabilities: []string{},
		Artifacts:    []Artifact{settings},
	}
	if err := check(r); err != nil {
		if g.Published() && len(r.Template) > MaxTemplateBytes {
			return nil, fmt.Errorf("%w: %d published ports are more than one group's template holds (each adds a listener, a target group and security group rules)", err, len(g.Publish))
		}
		return nil, err
	}
	return r, nil
}

// execute renders the JSON template name from the files matching pattern and
// returns it compacted, after checking that it is valid JSON.
func execute(pattern, name string, data any) ([]byte, error) {
	t, err := parse(pattern)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, fmt.Errorf("executing %s: %w", name, err)
	}
	if !json.Valid(buf.Bytes()) {
		var v any
		err := json.Unmarshal(buf.Bytes(), &v) // for the position of the error
		return nil, fmt.Errorf("%s renders invalid JSON: %w", name, err)
	}
	// Compact: CloudFormation counts every byte of the body against its
	// 51,200-byte limit, and indentation alone was a third of the core's.
	var out bytes.Buffer
	if err := json.Compact(&out, bytes.TrimSpace(buf.Bytes())); err != nil {
		return nil, fmt.Errorf("compacting %s: %w", name, err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// parse loads the templates matching pattern, with the loader and its
// shell functions (node/). They are parsed on every call rather than cached in a
// package variable: it costs well under a millisecond and keeps the package
// free of global state.
func parse(pattern string) (*template.Template, error) {
	t, err := template.New("").Option("missingkey=error").Funcs(template.FuncMap{
		"json":  jsonString,
		"ref":   subRef,
		"upper": strings.ToUpper,
		"list":  func(v ...any) []any { return v },
		"add":   func(a, b int) int { return a + b },
	}).ParseFS(templates.FS, pattern, "node/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("parsing templates %s: %w", pattern, err)
	}
	return t, nil
}

// jsonString encodes v as a JSON literal without HTML escaping, so shell
// text such as "2>&1" stays readable in the rendered template.
func jsonString(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// subRef is the Fn::Sub reference to a parameter or resource: ${name}.
func subRef(name string) string { return "${" + name + "}" }
