// Package render builds clusterctl's CloudFormation templates: a CoreSpec or
// GroupSpec becomes the template body, the deploy-time parameters and the
// ownership tags of one stack. It makes no AWS calls, so `render core` and
// `render group` work offline.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/clusterctl/clusterctl/internal/validate"
	"github.com/clusterctl/clusterctl/templates"
)

// ContractVersion is the version of the join contract the core template
// publishes and the group template consumes.
const ContractVersion = "1"

// Tag keys of the ownership scheme. Discovery works from these.
const (
	TagCluster = "clusterctl:cluster"
	TagRole    = "clusterctl:role"
	TagGroup   = "clusterctl:group"
	TagVersion = "clusterctl:version"
	TagLabels  = "clusterctl:labels"  // group stacks: "k=v,k=v" sorted, or NoLabels
	TagImage   = "clusterctl:image"   // group stacks: the operator's image, or ImageDefault
	TagSubnets = "clusterctl:subnets" // group stacks: SubnetsCore or SubnetsOwn
	// TagLabelPrefix prefixes one instance tag per label: clusterctl:label:<key>.
	TagLabelPrefix = "clusterctl:label:"
)

// Values of the ownership tags.
const (
	RoleCore     = "core"
	RoleAgents   = "agents"
	GroupControl = "control" // clusterctl:group of the core's control node
	NoLabels     = "-"       // CloudFormation tag values cannot be empty
	ImageDefault = "default"
	SubnetsCore  = "core"
	SubnetsOwn   = "own"
)

// Defaults applied when a spec leaves a value at zero.
const (
	DefaultCoreVolumeSize = 20 // GiB
	DefaultMaxBatch       = 1
)

// Limits that CloudFormation, EC2 and Auto Scaling enforce; checking them at
// render time turns a late deploy failure into a clear error.
const (
	MaxTemplateBytes  = 51200 // TemplateBody; larger bodies must go through S3
	MaxUserDataBytes  = 16384 // EC2 user data before base64
	MaxParameters     = 200
	MaxStackNameChars = 128
	// MaxLabels keeps instances under EC2's 50 tags: besides one tag per
	// label each carries Name, the 4 ownership tags and the 3 other group
	// stack tags CloudFormation propagates, which leaves 42; 2 stay free for
	// the operator's own stack tags.
	MaxLabels        = 40
	maxTagKeyChars   = 128
	maxTagValueChars = 256
)

// Label is one key=value of a group's metadata, as validate parses it.
type Label = validate.Label

// CoreSpec describes a core stack.
type CoreSpec struct {
	Cluster, InstanceType string
	ImageID               string   // "" = default AL2023 SSM path for the type's arch; "ami-..." = AMI id; "/..." = SSM parameter path
	KeyName               string   // "" = no key pair
	SSHCIDR               string   // "" = SSH closed
	VpcID                 string   // may be "" for offline rendering
	SubnetIDs             []string // may be nil for offline rendering
	Version               string   // clusterctl version, goes into the ownership tags
	VolumeSize            int      // root volume in GiB; 0 = DefaultCoreVolumeSize
}

// GroupSpec describes an agent-group stack.
type GroupSpec struct {
	Cluster, Group, InstanceType, ImageID string // ImageID as in CoreSpec
	Desired, Min, Max, VolumeSize         int    // VolumeSize in GiB
	Labels                                []Label
	SubnetIDs                             []string // nil = the core's subnets (Join.SubnetIds)
	SSHCIDR                               string   // "" = closed
	// MaxBatch and MinInService shape the rolling update. 0 keeps capacity:
	// MaxBatch 1 and MinInService = Desired, capped at Max-1 because
	// CloudFormation requires MinInstancesInService below MaxSize.
	MaxBatch, MinInService int
	Version                string
	Join                   Join   // zero value allowed: Parameters then carry empty join values
	KeyName                string // "" = no key pair
}

// Rendered is one stack ready to deploy.
type Rendered struct {
	StackName    string            // core: Cluster; group: Cluster + "-" + Group
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

// GroupStackName is the stack name of group in cluster.
func GroupStackName(cluster, group string) string { return cluster + "-" + group }

var nameRE = regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]*$`)

// coreData is what core.json.tmpl, control-userdata.sh.tmpl and
// control.sh.tmpl see.
type coreData struct {
	Cluster, Version, ContractVersion string
	JoinPrefix, SwarmPrefix           string
	StatusKey, ManagersKey            string
	InstanceIDLabel, HookName         string
	Program                           string // the control node program, gzip and base64
	UserData                          string
}

// groupData is what workergroup.json.tmpl and agent-userdata.sh.tmpl see.
type groupData struct {
	Cluster, Group, Name, Version, ContractVersion string
	Labels                                         []Label
	LabelList                                      string // k=v,k=v or ""
	NodeKey, NodeSHA256                            string // the node configuration in the bucket
	HookName                                       string
	UserData                                       string
	Intent                                         Intent
}

// Intent is what the operator asked of a group, as opposed to the values it
// resolved to: the default image rather than its AMI, "the core's subnets"
// rather than their ids, a rolling-update setting left to its default. It
// is recorded in the group template's metadata (stack tags are not updated
// by every CloudFormation implementation), so update-group can keep what was
// not given and still follow the defaults.
type Intent struct {
	Labels       string `json:"labels"`       // k=v,k=v sorted, or NoLabels
	Image        string `json:"image"`        // the operator's --image-id, or ImageDefault
	Subnets      string `json:"subnets"`      // SubnetsCore or SubnetsOwn
	MaxBatch     int    `json:"maxBatch"`     // 0 = default
	MinInService int    `json:"minInService"` // 0 = default
}

// IntentFromTemplate reads the intent recorded in a deployed group template.
func IntentFromTemplate(body []byte) (Intent, error) {
	var t struct {
		Metadata struct {
			Clusterctl *Intent `json:"clusterctl"`
		}
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return Intent{}, fmt.Errorf("reading group template: %w", err)
	}
	if t.Metadata.Clusterctl == nil {
		return Intent{}, fmt.Errorf("reading group template: no clusterctl metadata")
	}
	return *t.Metadata.Clusterctl, nil
}

// Core renders the core stack of spec.Cluster.
func Core(spec CoreSpec) (*Rendered, error) {
	r, err := renderCore(spec)
	if err != nil {
		return nil, fmt.Errorf("rendering core template: %w", err)
	}
	return r, nil
}

func renderCore(spec CoreSpec) (*Rendered, error) {
	if err := checkName("cluster", spec.Cluster); err != nil {
		return nil, err
	}
	if err := checkStackName(spec.Cluster); err != nil {
		return nil, err
	}
	if spec.InstanceType == "" {
		return nil, fmt.Errorf("instance type is empty")
	}
	if spec.Version == "" {
		return nil, fmt.Errorf("clusterctl version is empty")
	}
	if err := checkSSHCIDR(spec.SSHCIDR); err != nil {
		return nil, err
	}
	imageParam, imageID, err := imageParameters(spec.ImageID, spec.InstanceType)
	if err != nil {
		return nil, err
	}
	volume := spec.VolumeSize
	if volume == 0 {
		volume = DefaultCoreVolumeSize
	}
	if err := checkVolumeSize(volume); err != nil {
		return nil, err
	}

	data := coreData{Cluster: spec.Cluster, Version: spec.Version, ContractVersion: ContractVersion, JoinPrefix: JoinPrefix,
		SwarmPrefix: SwarmPrefix, StatusKey: StatusKey, ManagersKey: ManagersKey, InstanceIDLabel: EngineLabelInstanceID,
		HookName: LifecycleHookName(spec.Cluster)}
	data.UserData, err = controlUserData(data)
	if err != nil {
		return nil, err
	}
	body, err := execute("core/*.tmpl", "core.json.tmpl", data)
	if err != nil {
		return nil, err
	}
	r := &Rendered{
		StackName: spec.Cluster,
		Template:  body,
		Parameters: map[string]string{
			"InstanceType":   spec.InstanceType,
			"VolumeSize":     strconv.Itoa(volume),
			"ImageParameter": imageParam,
			"ImageId":        imageID,
			"KeyName":        spec.KeyName,
			"SshCidr":        spec.SSHCIDR,
			"VpcId":          spec.VpcID,
			"SubnetIds":      strings.Join(spec.SubnetIDs, ","),
		},
		Tags: map[string]string{
			TagCluster: spec.Cluster,
			TagRole:    RoleCore,
			TagGroup:   GroupControl,
			TagVersion: spec.Version,
		},
		Capabilities: []string{"CAPABILITY_IAM"},
	}
	if err := check(r); err != nil {
		return nil, err
	}
	return r, nil
}

// Group renders the stack of one agent group.
func Group(spec GroupSpec) (*Rendered, error) {
	r, err := renderGroup(spec)
	if err != nil {
		return nil, fmt.Errorf("rendering group template: %w", err)
	}
	return r, nil
}

func renderGroup(spec GroupSpec) (*Rendered, error) {
	if err := checkName("cluster", spec.Cluster); err != nil {
		return nil, err
	}
	if err := checkName("group", spec.Group); err != nil {
		return nil, err
	}
	name := GroupStackName(spec.Cluster, spec.Group)
	if err := checkStackName(name); err != nil {
		return nil, err
	}
	if spec.InstanceType == "" {
		return nil, fmt.Errorf("instance type is empty")
	}
	if spec.Version == "" {
		return nil, fmt.Errorf("clusterctl version is empty")
	}
	if err := checkSSHCIDR(spec.SSHCIDR); err != nil {
		return nil, err
	}
	if err := checkVolumeSize(spec.VolumeSize); err != nil {
		return nil, err
	}
	maxBatch, minInService, err := groupSizes(spec)
	if err != nil {
		return nil, err
	}
	if j := spec.Join; j.ClusterName != "" && j.ClusterName != spec.Cluster {
		return nil, fmt.Errorf("core outputs belong to cluster %q, not %q", j.ClusterName, spec.Cluster)
	}
	if v := spec.Join.ContractVersion; v != "" && v != ContractVersion {
		return nil, fmt.Errorf("core has join contract version %s, this clusterctl needs %s", v, ContractVersion)
	}
	labelList, err := labelTags(spec.Labels)
	if err != nil {
		return nil, err
	}
	imageParam, imageID, err := imageParameters(spec.ImageID, spec.InstanceType)
	if err != nil {
		return nil, err
	}

	subnets, subnetsTag := spec.Join.SubnetIds, SubnetsCore
	if len(spec.SubnetIDs) > 0 {
		subnets, subnetsTag = spec.SubnetIDs, SubnetsOwn
	}
	imageTag := spec.ImageID
	if imageTag == "" {
		imageTag = ImageDefault
	}
	labelsTag := labelList
	if labelsTag == "" {
		labelsTag = NoLabels
	}
	data := groupData{
		Cluster: spec.Cluster, Group: spec.Group, Name: name, Version: spec.Version,
		ContractVersion: ContractVersion, Labels: spec.Labels, LabelList: labelList,
		Intent:   Intent{Labels: labelsTag, Image: imageTag, Subnets: subnetsTag, MaxBatch: spec.MaxBatch, MinInService: spec.MinInService},
		HookName: LifecycleHookName(spec.Cluster),
	}
	engine, err := daemonJSON(spec.Group, spec.InstanceType, spec.Labels)
	if err != nil {
		return nil, err
	}
	node, hash, err := agentNode(nodeData{
		Cluster: spec.Cluster, Group: spec.Group, Bucket: spec.Join.BucketName, ControlIP: spec.Join.ControlPrivateIp,
		ContractVersion: ContractVersion, InstanceType: spec.InstanceType, ImageParameter: imageParam, ImageID: imageID,
		LabelList: labelList, DaemonJSON: engine, SwarmPrefix: SwarmPrefix, StatusKey: StatusKey, ManagersKey: ManagersKey,
	})
	if err != nil {
		return nil, err
	}
	data.NodeKey, data.NodeSHA256 = node.Key, hash
	data.UserData, err = agentUserData(data)
	if err != nil {
		return nil, err
	}
	body, err := execute("workergroup/*.tmpl", "workergroup.json.tmpl", data)
	if err != nil {
		return nil, err
	}
	params := spec.Join.Outputs()
	for k, v := range map[string]string{
		"SubnetIds":             strings.Join(subnets, ","),
		"InstanceType":          spec.InstanceType,
		"DesiredCapacity":       strconv.Itoa(spec.Desired),
		"MinSize":               strconv.Itoa(spec.Min),
		"MaxSize":               strconv.Itoa(spec.Max),
		"VolumeSize":            strconv.Itoa(spec.VolumeSize),
		"ImageParameter":        imageParam,
		"ImageId":               imageID,
		"KeyName":               spec.KeyName,
		"SshCidr":               spec.SSHCIDR,
		"MaxBatchSize":          strconv.Itoa(maxBatch),
		"MinInstancesInService": strconv.Itoa(minInService),
	} {
		params[k] = v
	}
	r := &Rendered{
		StackName:  name,
		Template:   body,
		Parameters: params,
		Tags: map[string]string{
			TagCluster: spec.Cluster,
			TagRole:    RoleAgents,
			TagGroup:   spec.Group,
			TagVersion: spec.Version,
			TagLabels:  labelsTag,
			TagImage:   imageTag,
			TagSubnets: subnetsTag,
		},
		Capabilities: []string{},
		Artifacts:    []Artifact{node},
	}
	if err := check(r); err != nil {
		return nil, err
	}
	return r, nil
}

// groupSizes checks the counts and fills in the rolling-update defaults.
func groupSizes(spec GroupSpec) (maxBatch, minInService int, err error) {
	if spec.Min < 0 || spec.Desired < spec.Min || spec.Max < spec.Desired {
		return 0, 0, fmt.Errorf("sizes min %d, desired %d, max %d: want 0 <= min <= desired <= max", spec.Min, spec.Desired, spec.Max)
	}
	maxBatch = spec.MaxBatch
	if maxBatch == 0 {
		maxBatch = DefaultMaxBatch
	}
	if maxBatch < 0 {
		return 0, 0, fmt.Errorf("rolling update batch size %d is negative", maxBatch)
	}
	minInService = spec.MinInService
	switch {
	case minInService < 0:
		return 0, 0, fmt.Errorf("rolling update minimum in service %d is negative", minInService)
	case minInService == 0:
		// Keep every node in service while replacing, as far as
		// CloudFormation allows (MinInstancesInService < MaxSize).
		minInService = max(0, min(spec.Desired, spec.Max-1))
	case minInService >= spec.Max:
		return 0, 0, fmt.Errorf("rolling update minimum in service %d must be below max size %d", minInService, spec.Max)
	}
	return maxBatch, minInService, nil
}

// labelTags checks the labels against the tag limits and returns them as
// the sorted k=v,k=v list ("" for none).
func labelTags(labels []Label) (string, error) {
	if len(labels) > MaxLabels {
		return "", fmt.Errorf("%d labels, limit %d (EC2 allows 50 tags per instance)", len(labels), MaxLabels)
	}
	pairs := make([]string, 0, len(labels))
	for i, l := range labels {
		if l.Key == "" || l.Value == "" {
			return "", fmt.Errorf("label %q=%q: key and value must not be empty", l.Key, l.Value)
		}
		if i > 0 && labels[i-1].Key >= l.Key {
			return "", fmt.Errorf("labels not sorted by unique key at %q", l.Key)
		}
		if strings.HasPrefix(l.Key, reservedLabel) {
			return "", fmt.Errorf("label key %q: the prefix %s is reserved for the labels clusterctl sets", l.Key, reservedLabel)
		}
		if n := len(TagLabelPrefix + l.Key); n > maxTagKeyChars {
			return "", fmt.Errorf("label key %q makes a %d-character tag key, limit %d", l.Key, n, maxTagKeyChars)
		}
		if n := len(l.Value); n > maxTagValueChars {
			return "", fmt.Errorf("label %q has a %d-character value, limit %d", l.Key, n, maxTagValueChars)
		}
		pairs = append(pairs, l.Key+"="+l.Value)
	}
	list := strings.Join(pairs, ",")
	if len(list) > maxTagValueChars {
		return "", fmt.Errorf("labels take %d characters in tag %s, limit %d", len(list), TagLabels, maxTagValueChars)
	}
	return list, nil
}

func checkName(what, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%s name %q: want a letter then letters, digits or '-'", what, name)
	}
	return nil
}

func checkSSHCIDR(cidr string) error {
	if cidr == "" {
		return nil
	}
	ip, _, err := net.ParseCIDR(cidr)
	if err != nil || ip.To4() == nil {
		return fmt.Errorf("SSH CIDR %q: want an IPv4 CIDR such as 203.0.113.0/24", cidr)
	}
	return nil
}

func checkVolumeSize(gib int) error {
	if gib < 8 || gib > 16384 {
		return fmt.Errorf("volume size %d GiB: want 8 to 16384", gib)
	}
	return nil
}

// execute renders the JSON template name from the files matching pattern and
// returns it re-indented, after checking that it is valid JSON.
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
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimSpace(buf.Bytes()), "", "  "); err != nil {
		return nil, fmt.Errorf("indenting %s: %w", name, err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// parse loads the templates matching pattern, with the shell functions the
// node scripts share. They are parsed on every call rather than cached in a
// package variable: it costs well under a millisecond and keeps the package
// free of global state.
func parse(pattern string) (*template.Template, error) {
	t, err := template.New("").Option("missingkey=error").Funcs(template.FuncMap{
		"json": jsonString,
		"sub":  subLiteral,
		"sh":   shellQuote,
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

// subLiteral escapes text that goes literally into an Fn::Sub string, where
// "${" would otherwise start a substitution.
func subLiteral(s string) string { return strings.ReplaceAll(s, "${", "${!") }
