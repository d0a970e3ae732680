package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// maxBinarySize is the most the released binary may weigh. It was 64 MB
// while the AWS clients were stored in interfaces (see internal/awsapi);
// 26.6 MB since, and 30.1 MB once the CLI read CloudWatch alarms (the
// cloudwatch client, held as function values as every other); 31.4 MB with
// tablewriter restored and the pre-flight's SNS, Secrets Manager and IAM
// clients. 30 MB is not reached without dropping a feature or a library
// the product names (kong, whose MethodByName with a computed name keeps
// every exported method of reachable types; gojq; tablewriter; the SDK's
// clients, of which S3's is kept whole by the SDK itself: 3.9 MB): see
// docs/benchmarks.md. The bound leaves half a megabyte.
const maxBinarySize = 32_000_000

// The binary under test is built as released (TestMain): stripped, it
// stays under maxBinarySize. A size assertion, not a timing one. The node
// agents `make build` embeds (about 13.6 MB gzip-compressed for both
// architectures, when internal/agentbin/dist holds them) come on top:
// what is bounded here is clusterctl's own code.
func TestBinarySize(t *testing.T) {
	parallel(t)
	fi, err := os.Stat(binary)
	if err != nil {
		t.Fatal(err)
	}
	size := fi.Size()
	agents, _ := filepath.Glob("../internal/agentbin/dist/clusterctl-node-linux-*.gz")
	for _, a := range agents {
		if fi, err := os.Stat(a); err == nil {
			size -= fi.Size()
		}
	}
	if size > maxBinarySize {
		t.Errorf("stripped binary is %.1f MB, above %.0f MB: is an AWS SDK client (or a struct holding one) stored in an interface? See internal/awsapi",
			float64(size)/1e6, float64(maxBinarySize)/1e6)
	}
}
