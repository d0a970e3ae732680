// Package templates holds the CloudFormation templates of clusterctl as Go
// text/template files, embedded in the binary. internal/render executes them;
// nothing else belongs here.
//
//   - core/core.json.tmpl: the core stack (bucket, security groups, IAM,
//     control node) and its join-contract outputs.
//   - core/control-userdata.sh.tmpl: the control node's user data, which
//     initialises the Docker swarm and publishes its join material.
//   - workergroup/workergroup.json.tmpl: one agent group (launch template and
//     Auto Scaling group).
//   - workergroup/agent-userdata.sh.tmpl: the agents' user data, a loader
//     that fetches, verifies and runs the node configuration.
//   - workergroup/agent-node.sh.tmpl: the node configuration, uploaded to the
//     cluster bucket: installs Docker, sets the engine labels, joins the swarm.
//   - node/common.sh.tmpl: shell functions the scripts share.
//
// Every name shared with code or other templates (tags and their values,
// parameters, outputs, logical ids named elsewhere, bucket keys, engine
// labels) comes from internal/names as {{.N.<Name>}}, never a literal; in
// an Fn::Sub string a reference is written {{ref .N.<Name>}}.
//
// The user-data scripts are rendered first and then placed, JSON-escaped,
// inside Fn::Base64/Fn::Sub in the JSON templates, so they may reference
// stack parameters and pseudo parameters as ${Name}; a literal shell
// expansion must be written $name or ${!name}. The node configuration is no
// Fn::Sub string and takes its values from Go templating alone.
package templates

import "embed"

// FS holds core/, workergroup/ and node/.
//
//go:embed core workergroup node
var FS embed.FS
