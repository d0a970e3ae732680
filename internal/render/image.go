package render

import (
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/internal/spec"
)

const al2023Prefix = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-"

// DefaultImageParameter is the public SSM parameter of the region's current
// Amazon Linux 2023 AMI for the architecture of instanceType as its family
// tells it (spec.Architecture), which is all an offline render has; when
// AWS is reachable, ask EC2 (preflight.Architectures) and use
// ImageParameterFor.
func DefaultImageParameter(instanceType string) string {
	return ImageParameterFor(spec.Architecture(instanceType))
}

// ImageParameterFor is the public SSM parameter of the region's current
// Amazon Linux 2023 AMI for an architecture as EC2 names it (x86_64, arm64).
func ImageParameterFor(arch string) string {
	return al2023Prefix + arch
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
