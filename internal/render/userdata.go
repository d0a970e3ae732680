package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// What runs on the nodes is the node agent (cmd/clusterctl-node); the user
// data of managers and agents alike is a loader (node/loader.sh.tmpl) that
// installs Docker Engine, writes the node's settings, and fetches the agent
// from the cluster bucket by the SHA-256 the stack pins (parameters
// NodeAgentAmd64 and NodeAgentArm64), checking it before it runs. A new
// agent changes the parameters, hence the launch template, so the rolling
// update replaces the nodes; an identical render changes nothing.

// Artifact is an object that must be in the cluster bucket before the stack
// is deployed.
type Artifact struct {
	Key  string // object key in the cluster bucket
	Body []byte
}

// loaderData is what loader.sh.tmpl sees.
type loaderData struct {
	N names.Set
	// What the node is, for its log lines and signals.
	What string
	// Resource is the Auto Scaling group signalled.
	Resource string
	// Bucket is the cluster bucket, as an Fn::Sub reference.
	Bucket string
	// Settings are the lines of /etc/clusterctl/node.env, KEY=value, with
	// Fn::Sub references for the stack's values; the agent checks each
	// value's shape before it uses it. A group's are an artifact instead,
	// fetched from SettingsKey and checked against SettingsSHA256: its
	// labels would not fit in the user data. The loader adds the stack, the
	// region, the bucket and the instance id.
	Settings                    string
	SettingsKey, SettingsSHA256 string
	// Unit and Command: the systemd unit that runs the agent's service.
	Unit, Command string
	// Manager: boot as a manager (join or initialise, publish, become
	// Reachable) and signal success; an agent's service signals itself.
	Manager bool
}

func loader(d loaderData) (string, error) {
	d.N = names.Template()
	s, err := script("node/*.tmpl", "loader", d)
	return stripComments(s), err
}

// settingLines joins KEY=value lines; an empty value leaves its line out.
func settingLines(kv ...string) string {
	var lines []string
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			lines = append(lines, kv[i]+"="+kv[i+1])
		}
	}
	return strings.Join(lines, "\n")
}

// controlUserData renders the managers' loader.
func controlUserData() (string, error) {
	return loader(loaderData{
		What: "manager", Resource: names.ResourceManagerGroup,
		Bucket: subRef(names.ResourceBucket), Unit: "clusterctl-housekeeping", Command: "housekeeping", Manager: true,
		// The core's stack is named after the cluster: the loader writes
		// CLUSTER_NAME from the stack's name.
		Settings: settingLines(
			"NODE_GROUP", names.GroupControl,
			"LIFECYCLE_QUEUE_URL", subRef(names.ResourceLifecycleQueue),
			// The agent derives the log group from the cluster's name.
			"LOG_DRIVER", subRef(names.ParamLogDriver),
			"ENGINE_VERSION", subRef(names.ParamEngineVersion),
			"BACKUP_KEEP", subRef(names.ParamBackupKeep),
		),
	})
}

// agentUserData renders the loader of a group's agents and their
// settings, the artifact it fetches: the group's own and the core's join
// values.
func agentUserData(data groupData, labelList string, join Join) (string, Artifact, error) {
	settings := settingLines(
		"CLUSTER_NAME", data.Cluster,
		"NODE_GROUP", data.Group,
		"NODE_LABELS", labelList,
		"MANAGERS_KEY", join.ManagersKey,
		"LOG_GROUP", join.LogGroupName,
		"LOG_DRIVER", join.LogDriver,
		"ENGINE_VERSION", join.EngineVersion,
	) + "\n"
	sum := sha256.Sum256([]byte(settings))
	hash := hex.EncodeToString(sum[:])
	art := Artifact{Key: names.NodeConfigKey(data.Group, hash), Body: []byte(settings)}
	ud, err := loader(loaderData{
		What: "agent", Resource: names.ResourceAutoScalingGroup,
		Bucket: subRef(names.OutputBucketName), Unit: "clusterctl-agent", Command: "agent",
		SettingsKey: art.Key, SettingsSHA256: hash,
	})
	return ud, art, err
}

func script(pattern, name string, data any) (string, error) {
	t, err := parse(pattern)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return "", fmt.Errorf("executing %s: %w", name, err)
	}
	return buf.String(), nil
}

// checkUserData checks a user data size against the loader's bound.
func checkUserData(n int) error {
	if n > MaxLoaderBytes {
		return fmt.Errorf("user data is %d bytes, limit %d", n, MaxLoaderBytes)
	}
	return nil
}

// maxSubValue bounds the length of what CloudFormation substitutes for
// ${name} in the user data: pseudo parameters, the bucket's name and the
// queue's URL by their documented limits (the control node's user data is
// close to the limit: every byte of a generous bound is one the program
// cannot have), anything else (identifiers, IPs) by a generous 256.
func maxSubValue(name string) int {
	switch name {
	case "AWS::StackName":
		return spec.MaxStackName
	case "AWS::AccountId":
		return 12
	case "AWS::Region", "AWS::Partition", "AWS::URLSuffix":
		return 32
	case names.ResourceBucket, names.OutputBucketName:
		return 63 // S3 bucket names
	case names.OutputClusterName:
		return spec.MaxStackName
	case names.OutputContractVersion:
		return 4 // its AllowedPattern
	case names.ParamNodeAgentAmd64, names.ParamNodeAgentArm64:
		return 64 // a SHA-256 in hex
	case names.ParamLogDriver:
		return max(len(names.LogDriverAWSLogs), len(names.LogDriverNone))
	case names.ParamBackupKeep:
		return 3 // its MaxValue
	case names.ParamEngineVersion:
		return 32 // spec.EngineVersionRE's longest
	case names.ResourceLifecycleQueue:
		// https://sqs.<region>.<URL suffix>/<account>/<name of up to 80>
		return len("https://sqs.") + 32 + 1 + 32 + 1 + 12 + 1 + 80
	}
	return 256
}

// longestSub resolves an Fn::Sub string with the longest value each name
// can take (maxSubValue); known tells the names Fn::Sub can resolve.
func longestSub(s string, known func(name string) bool) (string, error) {
	return ResolveSub(s, func(name string) (string, bool) {
		return strings.Repeat("x", maxSubValue(name)), known(name)
	})
}

// ResolveSub does to s what CloudFormation's Fn::Sub does: ${!x} becomes
// ${x}, and ${name} becomes value(name), an error when value does not know
// it (CloudFormation rejects the template then).
func ResolveSub(s string, value func(name string) (string, bool)) (string, error) {
	var out strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			out.WriteString(s)
			return out.String(), nil
		}
		out.WriteString(s[:i])
		s = s[i+2:]
		if strings.HasPrefix(s, "!") {
			out.WriteString("${")
			s = s[1:]
			continue
		}
		j := strings.Index(s, "}")
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ in Fn::Sub string")
		}
		name := s[:j]
		v, ok := value(name)
		if !ok {
			return "", fmt.Errorf("${%s} is neither a parameter nor a resource of the template (write a shell expansion as $name or ${!name})", name)
		}
		out.WriteString(v)
		s = s[j+1:]
	}
}

// checkTemplateUserData checks the user data of every launch template in a
// rendered template: each ${name} must be something Fn::Sub can resolve,
// and the result must fit the EC2 limit with the longest values the names
// can take.
func checkTemplateUserData(doc templateDoc) error {
	pseudo := map[string]bool{"AWS::AccountId": true, "AWS::NotificationARNs": true, "AWS::Partition": true,
		"AWS::Region": true, "AWS::StackId": true, "AWS::StackName": true, "AWS::URLSuffix": true}
	known := func(name string) bool {
		res, _, attr := strings.Cut(name, ".")
		_, isParam := doc.Parameters[name]
		_, isRes := doc.Resources[res]
		return pseudo[name] || (!attr && isParam) || isRes
	}
	for _, id := range slices.Sorted(maps.Keys(doc.Resources)) {
		var r struct {
			Type       string
			Properties struct {
				LaunchTemplateData struct {
					UserData struct {
						Base64 struct {
							Sub *string `json:"Fn::Sub"`
						} `json:"Fn::Base64"`
					}
				}
			}
		}
		if err := json.Unmarshal(doc.Resources[id], &r); err != nil {
			return fmt.Errorf("reading resource %s: %w", id, err)
		}
		sub := r.Properties.LaunchTemplateData.UserData.Base64.Sub
		if r.Type != "AWS::EC2::LaunchTemplate" || sub == nil {
			continue
		}
		bound, err := longestSub(*sub, known)
		if err != nil {
			return fmt.Errorf("user data of %s: %w", id, err)
		}
		if err := checkUserData(len(bound)); err != nil {
			return fmt.Errorf("user data of %s with the longest stack values: %w", id, err)
		}
	}
	return nil
}

// stripComments drops the comment lines of a script but its first
// paragraph (up to an empty comment line: what the script is): user data
// is small, and the source in templates/ keeps them all.
func stripComments(prog string) string {
	lines := strings.Split(prog, "\n")
	out := make([]string, 0, len(lines))
	header := true
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if header && (!strings.HasPrefix(t, "#") || t == "#") {
			header = false
		}
		if !header && strings.HasPrefix(t, "#") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
