// Package templates holds the CloudFormation templates of clusterctl as Go
// text/template files, embedded in the binary. internal/render executes them;
// nothing else belongs here.
//
//   - core/core.json.tmpl: the core stack (bucket, security groups, IAM,
//     control node) and its join-contract outputs.
//   - core/control-userdata.sh.tmpl: the control node's user data.
//   - workergroup/workergroup.json.tmpl: one agent group (launch template and
//     Auto Scaling group).
//   - workergroup/agent-userdata.sh.tmpl: the agents' user data.
//
// The user-data scripts are rendered first and then placed, JSON-escaped,
// inside Fn::Base64/Fn::Sub in the JSON templates, so they may reference
// stack parameters and pseudo parameters as ${Name}; a literal shell
// expansion must be written $name or ${!name}.
package templates

import "embed"

// FS holds core/ and workergroup/.
//
//go:embed core workergroup
var FS embed.FS
