package render

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// What runs on the nodes (Docker Engine in swarm mode) is generated here and
// nowhere else.
//
// The control node's script is its user data, inline: the bucket it
// publishes to is created by the same stack. An agent's user data is a short
// loader; the node configuration proper (script and every setting: labels,
// image, instance type, the core's join values) is an Artifact that
// clusterctl uploads to the cluster bucket before it deploys the group. The
// user data names the artifact's SHA-256, so any change to the node
// configuration changes the launch template and the rolling update replaces
// the nodes, and an identical render changes nothing.

// Artifact is an object that must be in the cluster bucket before the stack
// is deployed.
type Artifact struct {
	Key  string // object key in the cluster bucket
	Body []byte
}

// nodeData is what agent-node.sh.tmpl sees: everything an agent is
// configured with.
type nodeData struct {
	Cluster, Group, Bucket, ManagersKey, ContractVersion string
	InstanceTypes, ImageParameter, ImageID               string // the types comma-separated
	LabelList                                            string // k=v,k=v or ""
	// LogGroup and LogDriver are the core's (both empty for a core
	// without a log group: the engine keeps its own logs).
	LogGroup, LogDriver string
	LogOpts             string // logOpts(LogGroup), "" without a log group
	// EngineLabels are the engine labels the group gives every node, each
	// a JSON string; the node adds what it really is (instance type,
	// lifecycle, zone, instance id) from its instance metadata.
	EngineLabels []string
	AgentService string // the agent service program
	N            names.Set
}

// controlUserData renders the control node's user data, with the control
// node program in it compressed: user data is limited to 16 KiB.
func controlUserData(data coreData) (string, error) {
	prog, err := controlProgram(data)
	if err != nil {
		return "", err
	}
	if data.Program, err = gzipBase64(compact(prog)); err != nil {
		return "", err
	}
	ud, err := script("core/*.tmpl", "control-userdata.sh.tmpl", data)
	return stripComments(ud), err
}

// controlProgram renders the control node program (boot steps and
// housekeeping).
func controlProgram(data coreData) (string, error) {
	return script("core/*.tmpl", "control.sh.tmpl", data)
}

// stripComments drops the comment lines of a shell program but its first
// paragraph (up to an empty comment line: what the program is) and
// shellcheck directives: the program is embedded in the user data, whose
// size is limited, and its source (templates/) has them all. The programs
// have no here-documents but of base64 text (no line of which starts with
// #), and a comment line inside a multi-line string can only be a jq
// comment.
func stripComments(prog string) string {
	lines := strings.Split(prog, "\n")
	out := make([]string, 0, len(lines))
	header := true
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if header && (!strings.HasPrefix(t, "#") || t == "#") {
			header = false
		}
		if !header && strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "# shellcheck ") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// compact is the program as embedded: comment lines stripped (see
// stripComments) and every line's indentation too, which only readers need
// and which costs a few hundred bytes compressed. It is sound for these
// programs: no here-documents, no line continued without a space before its
// backslash, no indented Python, and whitespace at the start of a line
// inside a multi-line string otherwise only in jq programs, which ignore it
// (TestControlProgramEmbedded checks each).
// The comment after a setting's value goes too (name=word # what it is:
// the word has no space, so the # starts a comment), and the reason after
// a shellcheck directive (shellcheck reads the rest).
func compact(prog string) string {
	lines := strings.Split(stripComments(prog), "\n")
	for i, l := range lines {
		lines[i] = settingComment.ReplaceAllString(strings.TrimLeft(l, " \t"), "$1")
	}
	return strings.Join(lines, "\n")
}

// settingComment is a setting followed by a comment.
var settingComment = regexp.MustCompile(`^([a-z_]+=[^ \t]+|# shellcheck [^ \t]+)[ \t]+#.*$`)

// gzipBase64 compresses s deterministically (no name, no time) and
// encodes it in base64 lines of 76 characters.
func gzipBase64(s string) (string, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return "", err
	}
	if _, err := zw.Write([]byte(s)); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	// One line: base64 -d reads any length, and every line break would
	// count against the user data's limit.
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// agentUserData renders the loader that fetches, verifies and runs a
// group's node configuration.
func agentUserData(data groupData) (string, error) {
	return script("workergroup/*.tmpl", "agent-userdata.sh.tmpl", data)
}

// agentNode renders a group's node configuration, with the agent service
// program in it, and its bucket key.
func agentNode(data nodeData) (Artifact, string, error) {
	svc, err := script("workergroup/*.tmpl", "agent-service.sh.tmpl", data)
	if err != nil {
		return Artifact{}, "", err
	}
	data.AgentService = strings.TrimSuffix(svc, "\n")
	s, err := script("workergroup/*.tmpl", "agent-node.sh.tmpl", data)
	if err != nil {
		return Artifact{}, "", err
	}
	sum := sha256.Sum256([]byte(s))
	hash := hex.EncodeToString(sum[:])
	return Artifact{Key: names.NodeConfigKey(data.Group, hash), Body: []byte(s)}, hash, nil
}

// logOpts is the format (for printf, in the node scripts) of the
// daemon.json settings that ship every container's output to log group:
// the region, the endpoint's setting (tests only) and the instance id go
// in. A swarm task logs to stream service/<service>/<task>@<instance>, so
// that a service's tasks are found by prefix and each line says where it
// ran, as docker service logs does; any other container to
// container/<name>@<instance> (the awslogs driver names the stream by its
// tag, a template of the container). Non-blocking with a bounded buffer:
// a CloudWatch outage never blocks a container, and docker logs reads the
// engine's own copy (dual logging) all the same.
func logOpts(group string) string {
	if group == "" {
		return ""
	}
	// The format's \\\" is printf's \" is JSON's ".
	tag := `{{with index .ContainerLabels \\\"com.docker.swarm.service.name\\\"}}` + names.LogStreamService + "{{.}}{{else}}" +
		strings.TrimSuffix(names.LogStreamContainer, "/") + "{{end}}/{{.Name}}@%s"
	return `,"log-driver":"awslogs","log-opts":{"awslogs-group":"` + group + `","awslogs-region":"%s",%s` +
		`"mode":"non-blocking","max-buffer-size":"4m","tag":"` + tag + `"}`
}

// engineLabels are the engine labels every node of a group gets, as JSON
// strings for its daemon.json: the group's labels and clusterctl.group, so
// services can be constrained to them (engine.labels.clusterctl.group==...).
// What differs from node to node in a mixed group (the instance type, spot
// or on-demand, the zone) the node adds itself.
func engineLabels(group string, labels []label) ([]string, error) {
	out := make([]string, 0, len(labels)+1)
	for _, l := range append(slices.Clone(labels), label{names.EngineLabelGroup, group}) {
		s, err := jsonString(l.Key + "=" + l.Value)
		if err != nil {
			return nil, fmt.Errorf("encoding engine label %s: %w", l.Key, err)
		}
		out = append(out, s)
	}
	return out, nil
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

// shellQuote quotes s as one word for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// checkUserData checks a user data size against the EC2 limit.
func checkUserData(n int) error {
	if n > MaxUserDataBytes {
		return fmt.Errorf("user data is %d bytes, limit %d", n, MaxUserDataBytes)
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
	case names.ResourceBucket:
		return 63 // S3 bucket names
	case names.ParamLogDriver:
		return max(len(names.LogDriverAWSLogs), len(names.LogDriverNone))
	case names.ResourceLifecycleQueue:
		// https://sqs.<region>.<URL suffix>/<account>/<name of up to 80>
		return len("https://sqs.") + 32 + 1 + 32 + 1 + 12 + 1 + 80
	}
	return 256
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
		bound, err := ResolveSub(*sub, func(name string) (string, bool) {
			return strings.Repeat("x", maxSubValue(name)), known(name)
		})
		if err != nil {
			return fmt.Errorf("user data of %s: %w", id, err)
		}
		if err := checkUserData(len(bound)); err != nil {
			return fmt.Errorf("user data of %s with the longest stack values: %w", id, err)
		}
	}
	return nil
}
