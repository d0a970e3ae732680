package render

import (
	"fmt"
	"regexp"
	"strings"
)

const al2023Prefix = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-"

var familyRE = regexp.MustCompile(`^([a-z]+)([0-9]+)([a-z-]*)$`)

// DefaultImageParameter is the public SSM parameter of the region's current
// Amazon Linux 2023 AMI for the architecture of instanceType: arm64 for
// Graviton families (a1 and every family whose attributes after the
// generation contain "g": m7g, c7gn, r8g, t4g, x2gd, im4gn, is4gen, g5g...),
// x86_64 otherwise.
//
// The architecture is guessed from the name, which is all an offline
// render has; when AWS is reachable, ask EC2 (preflight.Architecture) and
// use ImageParameterFor.
func DefaultImageParameter(instanceType string) string {
	return ImageParameterFor(arch(instanceType))
}

// ImageParameterFor is the public SSM parameter of the region's current
// Amazon Linux 2023 AMI for an architecture as EC2 names it (x86_64, arm64).
func ImageParameterFor(arch string) string { return al2023Prefix + arch }

func arch(instanceType string) string {
	family, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(instanceType)), ".")
	if family == "a1" {
		return "arm64"
	}
	// family = prefix letters, generation, attributes (g4dn: g, 4, dn).
	// The prefix "g" means GPU, not Graviton, so only the attributes count.
	if m := familyRE.FindStringSubmatch(family); m != nil && strings.Contains(m[3], "g") {
		return "arm64"
	}
	return "x86_64"
}

// imageParameters turns the operator's image choice (validated by
// internal/spec) into the values of the ImageParameter and ImageId
// parameters. ImageParameter is always a valid SSM path, even when ImageId
// wins, because CloudFormation resolves it at every deploy.
func imageParameters(image, instanceType string) (param, id string, err error) {
	def := DefaultImageParameter(instanceType)
	switch {
	case image == "":
		return def, "", nil
	case strings.HasPrefix(image, "ami-"):
		return def, image, nil
	case strings.HasPrefix(image, "/"):
		return image, "", nil
	}
	return "", "", fmt.Errorf("image %q is neither an AMI id nor an SSM parameter path", image)
}
