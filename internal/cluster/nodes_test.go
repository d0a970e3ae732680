package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/wire"
)

func TestCheckInstanceID(t *testing.T) {
	for _, tt := range []struct {
		id string
		ok bool
	}{
		{"i-0123456789abcdef0", true},
		{"i-01234567", true},
		{"i-0123456", false},
		{"i-0123456789", false},
		{"i-0123456789ABCDEF0", false},
		{"0123456789abcdef0", false},
		{"i-0123456789abcdef0 ", false},
		{"i-0123456789abcdef0;reboot", false},
		{"", false},
	} {
		err := CheckInstanceID(tt.id)
		if (err == nil) != tt.ok {
			t.Errorf("CheckInstanceID(%q) = %v, want ok %v", tt.id, err, tt.ok)
		}
		if err != nil && errs.ExitCode(err) != errs.ExitUsage {
			t.Errorf("CheckInstanceID(%q): exit %d, want 2", tt.id, errs.ExitCode(err))
		}
	}
}

// A request has EventBridge's envelope, which housekeeping reads as it
// reads the notices there; what housekeeping would drop is refused.
func TestAvailabilityRequest(t *testing.T) {
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	const caller = "arn:aws:sts::123456789012:assumed-role/ops/alice"
	for _, tt := range []struct {
		name                                   string
		id, caller, cluster, instance, availab string
		want                                   string // in the error; "" for a valid request
	}{
		{"drain", id, caller, "core", "i-0123456789abcdef0", "drain", ""},
		{"undo", id, caller, "core", "i-0123456789abcdef0", "active", ""},
		{"unknown caller", id, "", "core", "i-0123456789abcdef0", "drain", ""},
		{"pause", id, caller, "core", "i-0123456789abcdef0", "pause", "invalid availability"},
		{"empty availability", id, caller, "core", "i-0123456789abcdef0", "", "invalid availability"},
		{"instance", id, caller, "core", "i-xyz", "drain", "invalid instance id"},
		{"cluster", id, caller, "9core", "i-0123456789abcdef0", "drain", "invalid cluster name"},
		{"request id", "1", caller, "core", "i-0123456789abcdef0", "drain", "invalid request id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := availabilityRequest(tt.id, at, tt.caller, "eu-west-1", tt.cluster, tt.instance, tt.availab)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(r), &got); err != nil {
				t.Fatal(err)
			}
			account := ""
			if tt.caller != "" {
				account = "123456789012"
			}
			want := map[string]any{
				"version": "0", "id": id, "detail-type": names.RequestNodeAvailability, "source": names.RequestSource,
				"account": account, "time": "2024-05-01T10:00:00Z", "region": "eu-west-1",
				"resources": []any{"arn:aws:ec2:eu-west-1:" + account + ":instance/i-0123456789abcdef0"},
				"detail": map[string]any{
					"request-id": id, "time": "2024-05-01T10:00:00Z", "cluster": "core",
					"instance-id": "i-0123456789abcdef0", "availability": tt.availab,
				},
			}
			if tt.caller != "" {
				want["detail"].(map[string]any)["requested-by"] = tt.caller
			}
			wb, _ := json.Marshal(want)
			gb, _ := json.Marshal(got)
			if string(wb) != string(gb) {
				t.Errorf("request\n got %s\nwant %s", gb, wb)
			}
		})
	}
	if a, b := wire.NewRequestID(), wire.NewRequestID(); !wire.ValidRequestID(a) || a == b {
		t.Errorf("request ids %q, %q", a, b)
	}
}

func TestAvailabilityReached(t *testing.T) {
	n := func(availability string, tasks int) SwarmNode {
		return SwarmNode{NodeID: "n", Availability: availability, RunningTasks: tasks, State: "ready"}
	}
	for _, tt := range []struct {
		name      string
		nodes     []SwarmNode
		want      string
		set, done bool
	}{
		{"drained, no tasks", []SwarmNode{n("drain", 0)}, "drain", true, true},
		{"draining", []SwarmNode{n("drain", 2)}, "drain", true, false},
		{"active", []SwarmNode{n("active", 3)}, "drain", false, false},
		{"active again", []SwarmNode{n("active", 3)}, "active", true, true},
		{"still drained", []SwarmNode{n("drain", 0)}, "active", false, false},
		{"paused", []SwarmNode{n("pause", 0)}, "active", false, false},
		{"one of two", []SwarmNode{n("drain", 0), n("active", 0)}, "drain", false, false},
		{"both", []SwarmNode{n("drain", 0), n("drain", 0)}, "drain", true, true},
		{"no node", nil, "drain", false, false},
	} {
		if got := availabilitySet(tt.nodes, tt.want); got != tt.set {
			t.Errorf("%s: availabilitySet = %v", tt.name, got)
		}
		if got := availabilityReached(tt.nodes, tt.want); got != tt.done {
			t.Errorf("%s: availabilityReached = %v", tt.name, got)
		}
	}
}

// Replacing a node is refused when the swarm would lose its quorum or
// nothing would drain it; the only manager's replacement is a risk the
// operator confirms.
func TestCheckReplace(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	fresh, stale := now.Add(-20*time.Second), now.Add(-5*time.Minute)
	backup := now.Add(-7 * time.Minute)
	mgr := func(instance, status string) SwarmNode {
		return SwarmNode{NodeID: "n" + instance, InstanceID: instance, Role: "manager", State: "ready", ManagerStatus: status}
	}
	worker := SwarmNode{NodeID: "nw", InstanceID: "i-w", Role: "worker", State: "ready"}
	status := func(at time.Time, nodes ...SwarmNode) *swarmStatus {
		return &swarmStatus{query.Snapshot{Cluster: "core", Nodes: nodes, Time: at}}
	}
	agent := &clusterNode{Cluster: "core", Group: "web", InstanceID: "i-w"}
	manager := func(id string) *clusterNode {
		return &clusterNode{Cluster: "core", Group: names.GroupControl, InstanceID: id}
	}
	for _, tt := range []struct {
		name string
		st   *swarmStatus
		node *clusterNode
		risk string // in the risk to confirm; "" for none
		err  string // in the error; "" for none
		exit int
	}{
		{"agent", status(fresh, mgr("i-a", "leader"), worker), agent, "", "", 0},
		{"agent, no status", nil, agent, "", "no swarm status", 1},
		{"agent, stale status", status(stale, mgr("i-a", "leader"), worker), agent, "", "5m old", 1},
		{"one of three", status(fresh, mgr("i-a", "leader"), mgr("i-b", "reachable"), mgr("i-c", "reachable")), manager("i-b"), "", "", 0},
		{"the leader of three", status(fresh, mgr("i-a", "leader"), mgr("i-b", "reachable"), mgr("i-c", "reachable")), manager("i-a"), "", "", 0},
		{"another unreachable", status(fresh, mgr("i-a", "leader"), mgr("i-b", "unreachable"), mgr("i-c", "reachable")), manager("i-c"), "",
			"would keep 1 reachable managers of 2, fewer than the 2 its quorum needs (unreachable: i-b); replace the unreachable first", 2},
		{"the unreachable one", status(fresh, mgr("i-a", "leader"), mgr("i-b", "unreachable"), mgr("i-c", "reachable")), manager("i-b"), "", "", 0},
		{"five, one unreachable", status(fresh, mgr("i-a", "leader"), mgr("i-b", "reachable"), mgr("i-c", "reachable"), mgr("i-d", "reachable"), mgr("i-e", "unreachable")), manager("i-a"), "", "", 0},
		{"five, two unreachable", status(fresh, mgr("i-a", "leader"), mgr("i-b", "reachable"), mgr("i-c", "reachable"), mgr("i-d", "unreachable"), mgr("i-e", "unreachable")), manager("i-a"), "",
			"would keep 2 reachable managers of 4, fewer than the 3 its quorum needs (unreachable: i-d, i-e)", 2},
		{"a manager that never joined", status(fresh, mgr("i-a", "leader"), mgr("i-b", "reachable"), mgr("i-c", "reachable")), manager("i-x"), "", "", 0},
		{"three, stale status", status(stale, mgr("i-a", "leader"), mgr("i-b", "reachable"), mgr("i-c", "reachable")), manager("i-b"), "", "quorum cannot be told", 2},
		{"the only manager", status(fresh, mgr("i-a", "leader"), worker), manager("i-a"), "the control plane is down until its replacement restores the swarm from the backup it takes as it leaves", "", 0},
		{"the only manager, dead", &swarmStatus{query.Snapshot{Nodes: []SwarmNode{mgr("i-a", "leader")}, LastBackup: &backup, Time: stale}}, manager("i-a"),
			"i-a is the only manager (the swarm status of cluster \"core\" is 5m old: no manager leads the swarm or its housekeeping is stopped): the control plane is down until its replacement restores the swarm from the last backup, of 7m ago; services keep running on the agents", "", 0},
		{"the only manager, dead, no backup", status(stale, mgr("i-a", "leader")), manager("i-a"), "there is no backup, so services, secrets and networks are lost", "", 0},
		{"manager, no status", nil, manager("i-a"), "", "no swarm status", 1},
		// Only running instances of the managers' group count: a snapshot
		// naming others is not trusted for the decision.
		{"the only real manager, a stranger reachable", status(fresh, mgr("i-a", "leader"), mgr("i-stranger", "reachable")), manager("i-a"),
			"i-a is the only manager", "", 0},
		{"strangers make the quorum", status(fresh, mgr("i-a", "leader"), mgr("i-b", "unreachable"), mgr("i-c", "reachable"), mgr("i-s1", "reachable"), mgr("i-s2", "reachable")), manager("i-a"), "",
			"would keep 1 reachable managers of 2, fewer than the 2 its quorum needs (unreachable: i-b)", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			running := map[string]bool{"i-a": true, "i-b": true, "i-c": true, "i-d": true, "i-e": true, "i-w": true}
			risk, err := checkReplace(tt.st, tt.node, running, now)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want %q", err, tt.err)
			case err != nil && errs.ExitCode(err) != tt.exit:
				t.Errorf("exit %d, want %d", errs.ExitCode(err), tt.exit)
			case err != nil && tt.exit == 1 && !errors.Is(err, ErrRefused):
				t.Errorf("%v is not a refusal", err)
			}
			if (tt.risk == "") != (risk == "") || !strings.Contains(risk, tt.risk) {
				t.Errorf("risk %q, want %q", risk, tt.risk)
			}
		})
	}
}

// statusS3 serves the status snapshot, stored at modified; only GetObject
// is called.
type statusS3 struct {
	S3API
	body string // "": no snapshot
}

func (s statusS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if aws.ToString(in.Key) != names.StatusKey {
		return nil, fmt.Errorf("unexpected key %s", aws.ToString(in.Key))
	}
	if s.body == "" {
		return nil, &s3types.NoSuchKey{}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(strings.NewReader(s.body))}, nil
}

// The snapshot is judged as inventory judges it (its time, the cluster it
// names); a stale or missing one is refused, as nothing would act on a
// request.
func TestCurrentStatus(t *testing.T) {
	snapshot := func(at time.Time) string {
		return `{"version":1,"cluster":"core","time":"` + at.UTC().Format(time.RFC3339) + `","nodes":[{"nodeId":"n1","instanceId":"i-01234567","role":"worker","state":"ready","availability":"active","managerStatus":"","runningTasks":2}]}`
	}
	n := &clusterNode{Cluster: "core", InstanceID: "i-01234567"}
	for _, tt := range []struct {
		name string
		s3   statusS3
		want string // in the error; "" for none
	}{
		{"fresh", statusS3{body: snapshot(time.Now().Add(-30 * time.Second))}, ""},
		{"none", statusS3{}, `cluster "core" has no swarm status in its bucket`},
		{"stale", statusS3{body: snapshot(time.Now().Add(-5 * time.Minute))}, `the swarm status of cluster "core" is 5m`},
		{"dated ahead", statusS3{body: snapshot(time.Now().Add(5 * time.Minute))}, `the swarm status of cluster "core" is`},
		{"another cluster's", statusS3{body: strings.Replace(snapshot(time.Now()), `"core"`, `"other"`, 1)}, `is the status of cluster "other"`},
		{"not a snapshot", statusS3{body: "<html>"}, "is not a status snapshot"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &Clients{S3: tt.s3}
			st, err := newStatus(s).currentStatus(t.Context(), n, "bucket")
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := st.nodesOf("i-01234567", ""); len(got) != 1 || got[0].RunningTasks != 2 || got[0].Availability != "active" {
					t.Errorf("nodes of the instance: %+v", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
