package spec

import "regexp"

// EngineVersionRE is the shape of a Docker Engine version the node
// agent installs as docker-<version>: numbers and dots, and a package release
// (25.0.8, 25.0.8-1.amzn2023.0.4); it reaches a node's shell, which
// checks it again.
var EngineVersionRE = regexp.MustCompile(`^[0-9]{1,3}(\.[0-9]{1,3}){1,2}(-[0-9A-Za-z._]{1,20})?$`)

func checkEngineVersion(path, v string) error {
	if !EngineVersionRE.MatchString(v) {
		return invalid(path, "invalid Docker Engine version %q: expected a version of the distribution's docker package, such as %s", v, DefaultEngineVersion)
	}
	return nil
}
