package render

import (
	"bytes"
	"fmt"
)

// User data is generated here and nowhere else: a *.sh.tmpl file is
// rendered with Go templating, checked against the EC2 limit, and handed to
// the JSON template, which embeds it as {"Fn::Base64": {"Fn::Sub": ...}} so
// the script can use stack parameters as ${Name}. The real node bootstrap
// will replace the scripts here and add a hash of the node configuration, so
// that any change to it changes the launch template and rolls the nodes.

// controlUserData renders the control node's user data.
//
// Placeholder: it installs aws-cfn-bootstrap and signals ControlInstance;
// the Docker Swarm bootstrap comes later.
func controlUserData(data coreData) (string, error) {
	return userData("core/*.tmpl", "control-userdata.sh.tmpl", data)
}

// agentUserData renders the user data of a group's nodes.
//
// Placeholder: it installs aws-cfn-bootstrap and signals AutoScalingGroup;
// the Docker Swarm bootstrap comes later.
func agentUserData(data groupData) (string, error) {
	return userData("workergroup/*.tmpl", "agent-userdata.sh.tmpl", data)
}

func userData(pattern, name string, data any) (string, error) {
	t, err := parse(pattern)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return "", fmt.Errorf("executing %s: %w", name, err)
	}
	if err := checkUserData(buf.Len()); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// checkUserData checks the rendered script's size. Fn::Sub adds the
// parameter values at deploy time; they are short identifiers.
func checkUserData(n int) error {
	if n > MaxUserDataBytes {
		return fmt.Errorf("user data is %d bytes, limit %d", n, MaxUserDataBytes)
	}
	return nil
}
