package render

import (
	"encoding/json"
	"os/exec"
	"reflect"
	"testing"

	"github.com/clusterctl/clusterctl/internal/node"
)

// The Go node agent's engine log settings are the shell nodes': the
// format the scripts fill with printf, filled here the same way, says what
// node.DaemonJSON writes.
func TestAgentLogSettingsAreTheScripts(t *testing.T) {
	for _, endpoint := range []string{"", "http://10.0.0.1:5000"} {
		arg := ""
		if endpoint != "" {
			arg = `"awslogs-endpoint":"` + endpoint + `",`
		}
		out, err := exec.Command("bash", "-c", `printf '{"labels":[]'; printf "$1" "$2" "$3" "$4"; printf '}'`, "-",
			logOpts("/clusterctl/core"), "eu-west-1", arg, "i-0123456789abcdef0").Output()
		if err != nil {
			t.Fatal(err)
		}
		var shell, agent map[string]any
		if err := json.Unmarshal(out, &shell); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		b := node.DaemonJSON([]string{}, &node.EngineLogs{Group: "/clusterctl/core", Region: "eu-west-1", InstanceID: "i-0123456789abcdef0", Endpoint: endpoint})
		if err := json.Unmarshal(b, &agent); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(shell, agent) {
			t.Errorf("endpoint %q: the agent's\n%s\nthe scripts'\n%s", endpoint, b, out)
		}
	}
}
