// Package templates holds the CloudFormation templates of clusterctl as Go
// text/template files, embedded in the binary. internal/render executes them;
// nothing else belongs here.
//
//   - core/core.json.tmpl: the core stack (bucket, security groups, IAM,
//     the managers' launch template and Auto Scaling group) and its
//     join-contract outputs.
//   - workergroup/workergroup.json.tmpl: one agent group (launch template and
//     Auto Scaling group).
//   - node/loader.sh.tmpl: the user data of managers and agents alike, a
//     loader of at most 4 KiB: writes the node's settings, installs Docker,
//     fetches the node agent (cmd/clusterctl-node) from the cluster bucket,
//     checks its SHA-256 against the stack's parameter and runs it; and
//     those parameters (NodeAgentAmd64, NodeAgentArm64), which both stacks
//     declare.
//   - node/common.sh.tmpl: the loader's shell functions (log, retry, imds).
//   - network/network.json.tmpl: a network (VPC, public and private
//     subnets, NAT or VPC endpoints) that cores join by its outputs.
//
// Every name shared with code or other templates (tags and their values,
// parameters, outputs, logical ids named elsewhere, bucket keys, engine
// labels) comes from internal/names as {{.N.<Name>}}, never a literal; in
// an Fn::Sub string a reference is written {{ref .N.<Name>}}.
//
// The loader is rendered first and then placed, JSON-escaped, inside
// Fn::Base64/Fn::Sub in the JSON templates, so it may reference stack
// parameters and pseudo parameters as ${Name}; a literal shell expansion
// must be written $name or ${!name}.
package templates

import "embed"

// FS holds core/, workergroup/, node/ and network/.
//
//go:embed core workergroup node network
var FS embed.FS
