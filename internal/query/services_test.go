package query

import (
	"encoding/json"
	"strings"
	"testing"
)

// A snapshot's services in the shape the leader writes them: the
// engine's own fields.
const servicesSnapshot = `{
  "nodes": [
    {"nodeId": "n1", "instanceId": "i-1", "role": "worker", "engineLabels": {"clusterctl.group": "r3"}},
    {"nodeId": "n2", "instanceId": "i-2", "role": "worker", "engineLabels": {"clusterctl.group": "r3"}}
  ],
  "services": [
    {"ID": "s-web", "Name": "web", "Mode": {"Replicated": {"Replicas": 3}}, "Image": "busybox:latest@sha256:abcdef0123",
     "Endpoint": {"Ports": [{"Protocol": "tcp", "TargetPort": 8080, "PublishedPort": 80, "PublishMode": "host"}]},
     "Placement": {"Constraints": ["node.labels.clusterctl.group==r3"]}},
    {"ID": "s-agent", "Name": "agent", "Mode": {"Global": {}}, "Image": "busybox", "Endpoint": {}, "Placement": {}}
  ],
  "tasks": [
    {"ServiceID": "s-web", "NodeID": "n1", "DesiredState": "running", "Status": {"State": "running", "Message": "started"}},
    {"ServiceID": "s-web", "NodeID": "n1", "DesiredState": "shutdown", "Status": {"State": "failed", "Err": "old"}},
    {"ServiceID": "s-web", "NodeID": "n2", "DesiredState": "running", "Status": {"State": "running"}},
    {"ServiceID": "s-web", "NodeID": "", "DesiredState": "running", "Status": {"State": "pending", "Message": "pending task scheduling", "Err": "no suitable node (insufficient resources on 2 nodes)"}},
    {"ServiceID": "s-agent", "NodeID": "n1", "DesiredState": "running", "Status": {"State": "running"}},
    {"ServiceID": "s-agent", "NodeID": "n2", "DesiredState": "running", "Status": {"State": "starting"}}
  ]
}`

func TestServicesOf(t *testing.T) {
	var snap Snapshot
	if err := json.Unmarshal([]byte(servicesSnapshot), &snap); err != nil {
		t.Fatal(err)
	}
	got := ServicesOf(&snap)
	if len(got) != 2 || got[0].Name != "agent" || got[1].Name != "web" {
		t.Fatalf("services %+v", got)
	}
	agent, web := got[0], got[1]
	if agent.Mode != "global" || agent.Running != 1 || agent.Desired != 2 || agent.Pending != "" || len(agent.Ports) != 0 {
		t.Errorf("agent %+v", agent)
	}
	if web.Mode != "replicated" || web.Running != 2 || web.Desired != 3 || web.Image != "busybox:latest" ||
		web.Pending != "no suitable node (insufficient resources on 2 nodes)" || len(web.Tasks) != 3 ||
		len(web.Ports) != 1 || web.Ports[0].String() != "80->8080/tcp (host)" || web.Constraints[0] != "node.labels.clusterctl.group==r3" {
		t.Errorf("web %+v", web)
	}
	if web.Tasks[1].InstanceID != "i-1" || web.Tasks[1].Group != "r3" {
		t.Errorf("web's tasks %+v", web.Tasks)
	}
	table := ServicesTable(got, false)
	if line := strings.Join(table.Rows[1], "|"); line != "web|replicated|2/3|busybox:latest|80->8080/tcp (host)|- pending, i-1 (r3) running, i-2 (r3) running|no suitable node (insufficient resources on 2 nodes)" {
		t.Errorf("row %s", line)
	}
}
