package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/clusterctl/clusterctl/internal/names"
)

var at = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func snapshotJSON(cluster string, version int, nodes ...SwarmNode) []byte {
	b, _ := json.Marshal(map[string]any{
		"version": version, "cluster": cluster, "time": at.Format(time.RFC3339), "publisher": "i-m1",
		"caDigest": "abc", "lastBackup": nil, "nodes": nodes,
	})
	return b
}

func TestParseSnapshot(t *testing.T) {
	worker := SwarmNode{NodeID: "n1", InstanceID: "i-1", Role: "worker", State: "ready", Availability: "active"}
	for _, tt := range []struct {
		name, body, untrusted string
	}{
		{"fresh", string(snapshotJSON("core", 1, worker)), ""},
		{"foreign cluster", string(snapshotJSON("prod", 1, worker)), `is the status of cluster "prod", not of "core"`},
		{"newer format", string(snapshotJSON("core", 2, worker)), "has format version 2; this clusterctl reads version 1"},
		{"not JSON", "<html>", "is not a status snapshot"},
		{"no time", `{"version":1,"cluster":"core","nodes":[]}`, "has no time"},
		{"node without id", string(snapshotJSON("core", 1, SwarmNode{InstanceID: "i-1"})), "lists a node without an id"},
		{"too large", strings.Repeat(" ", MaxSnapshot+1), "larger than 16 MiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := ParseSnapshot("s3://b/k", []byte(tt.body), "core")
			if tt.untrusted == "" {
				if err != nil || len(snap.Nodes) != 1 || !snap.Time.Equal(at) {
					t.Fatalf("got %+v, %v", snap, err)
				}
				return
			}
			if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "s3://b/k") || !strings.Contains(err.Error(), tt.untrusted) || snap != nil {
				t.Errorf("got %v, %v; want refused, %q", snap, err, tt.untrusted)
			}
		})
	}
}

// What the leader publishes is what the CLI reads, with the keys the
// format has always had.
func TestSnapshotMarshal(t *testing.T) {
	backup := at.Add(-90*time.Second + 300*time.Millisecond)
	s := Snapshot{Version: SnapshotVersion, Cluster: "core", Time: at.Add(400 * time.Millisecond).In(time.FixedZone("X", 3600)), Publisher: "i-m1", CADigest: "d",
		LastBackup: &backup, Nodes: []SwarmNode{{NodeID: "n1", Role: "manager", ManagerStatus: "leader", RunningTasks: 2}}}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["time"] != "2026-03-04T05:06:07Z" || raw["lastBackup"] != "2026-03-04T05:04:37Z" {
		t.Errorf("times %v, %v: want UTC to the second", raw["time"], raw["lastBackup"])
	}
	node := raw["nodes"].([]any)[0].(map[string]any)
	var keys []string
	for k := range node {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"address", "availability", "engineLabels", "engineVersion", "hostname", "instanceId", "managerStatus", "nodeId", "role", "runningTasks", "state"}
	if !slices.Equal(keys, want) || node["engineLabels"] == nil {
		t.Errorf("node keys %v (labels %v), want %v and labels {}", keys, node["engineLabels"], want)
	}
	got, err := ParseSnapshot("x", b, "core")
	if err != nil || got.Nodes[0].RunningTasks != 2 || got.Publisher != "i-m1" || !got.LastBackup.Equal(at.Add(-90*time.Second)) {
		t.Errorf("read back %+v, %v", got, err)
	}
	empty, _ := Snapshot{Version: 1, Cluster: "core", Time: at}.Marshal()
	if !strings.Contains(string(empty), `"nodes":[]`) || !strings.Contains(string(empty), `"lastBackup":null`) {
		t.Errorf("no nodes, no backup: %s", empty)
	}
}

// The autoscaler's decisions and the unplaceable tasks travel in the
// snapshot, times to the second; a snapshot without them has no such keys.
func TestSnapshotAutoscale(t *testing.T) {
	s := Snapshot{Version: SnapshotVersion, Cluster: "core", Time: at,
		Autoscale: []ScalingDecision{{Time: at.Add(300 * time.Millisecond).In(time.FixedZone("X", 3600)), Group: "web", From: 1, To: 2,
			Reason: "4 tasks of api pending: insufficient memory"}},
		Unplaceable: []Unplaceable{{Service: "big", Tasks: 2, Reason: "reserves more memory than any group's nodes offer"}}}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseSnapshot("x", b, "core")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Autoscale) != 1 || !got.Autoscale[0].Time.Equal(at) || got.Autoscale[0].To != 2 || len(got.Unplaceable) != 1 || got.Unplaceable[0].Tasks != 2 {
		t.Errorf("read back %+v, %+v", got.Autoscale, got.Unplaceable)
	}
	if s.Autoscale[0].Time.Equal(at) {
		t.Error("Marshal changed the caller's decisions")
	}
	if d := got.Autoscale[0].String(); d != "group web: desired 1 → 2: 4 tasks of api pending: insufficient memory" {
		t.Errorf("logged as %q", d)
	}
	empty, _ := Snapshot{Version: 1, Cluster: "core", Time: at}.Marshal()
	if strings.Contains(string(empty), "autoscale") || strings.Contains(string(empty), "unplaceable") {
		t.Errorf("no decisions: %s", empty)
	}
}

const (
	reqID    = "0f8fad5b-d9cb-469f-a165-70867728950e"
	instance = "i-0123456789abcdef0"
)

// A request the CLI builds is one housekeeping takes; what it would drop
// is refused at once.
func TestAvailabilityRequest(t *testing.T) {
	body, err := NewAvailabilityRequest(reqID, at, "arn:aws-cn:sts::123456789012:assumed-role/ops/alice", "cn-north-1", "core", instance, AvailabilityDrain)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ParseEvent(body)
	if err != nil {
		t.Fatal(err)
	}
	if e.Account != "123456789012" || e.Resources[0] != "arn:aws-cn:ec2:cn-north-1:123456789012:instance/"+instance || !e.Sent().Equal(at) {
		t.Errorf("envelope %+v", e)
	}
	d, err := e.AvailabilityRequest("core")
	if err != nil || d.InstanceID != instance || d.Availability != "drain" || d.RequestID != reqID {
		t.Errorf("request %+v, %v", d, err)
	}
	if _, err := e.AvailabilityRequest("prod"); err == nil || !strings.Contains(err.Error(), `for cluster "core", not "prod"`) {
		t.Errorf("another cluster's request: %v", err)
	}
	e.Source = "aws.ec2"
	if _, err := e.AvailabilityRequest("core"); err == nil {
		t.Error("a request from another source was taken")
	}
	for _, tt := range []struct{ id, instance, availability, want string }{
		{"1", instance, "drain", "invalid request id"},
		{reqID, "i-xyz", "drain", "invalid instance id"},
		{reqID, instance, "pause", "invalid availability"},
	} {
		if _, err := NewAvailabilityRequest(tt.id, at, "", "eu-west-1", "core", tt.instance, tt.availability); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v", tt, err)
		}
		// And one written by hand with these values is dropped by housekeeping.
		detail, _ := json.Marshal(AvailabilityDetail{RequestID: tt.id, Cluster: "core", InstanceID: tt.instance, Availability: tt.availability})
		e := Event{DetailType: names.RequestNodeAvailability, Source: names.RequestSource, Detail: detail}
		if _, err := e.AvailabilityRequest("core"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("taken %+v: %v", tt, err)
		}
	}
	if _, err := ParseEvent("{"); err == nil {
		t.Error("a broken body was read")
	}
}

func notice(change func(d map[string]any)) Event {
	d := map[string]any{
		"AutoScalingGroupName": "core-ManagerGroup-ABC", "LifecycleHookName": "clusterctl-drain-core",
		"LifecycleActionToken": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "LifecycleTransition": TransitionTerminating,
		"EC2InstanceId": instance,
	}
	if change != nil {
		change(d)
	}
	b, _ := json.Marshal(d)
	return Event{DetailType: DetailTerminate, Source: "aws.autoscaling", Detail: b}
}

func TestLifecycle(t *testing.T) {
	d, err := notice(nil).Lifecycle()
	if err != nil || d.EC2InstanceID != instance || d.AutoScalingGroupName != "core-ManagerGroup-ABC" {
		t.Fatalf("%+v, %v", d, err)
	}
	for name, change := range map[string]func(map[string]any){
		"launching":   func(d map[string]any) { d["LifecycleTransition"] = "autoscaling:EC2_INSTANCE_LAUNCHING" },
		"no token":    func(d map[string]any) { delete(d, "LifecycleActionToken") },
		"no group":    func(d map[string]any) { d["AutoScalingGroupName"] = "" },
		"bad hook":    func(d map[string]any) { d["LifecycleHookName"] = "a b" },
		"long group":  func(d map[string]any) { d["AutoScalingGroupName"] = strings.Repeat("g", 256) },
		"long hook":   func(d map[string]any) { d["LifecycleHookName"] = strings.Repeat("h", 256) },
		"no instance": func(d map[string]any) { d["EC2InstanceId"] = "i-zz" },
		"shape":       func(d map[string]any) { d["EC2InstanceId"] = 3 },
	} {
		if _, err := notice(change).Lifecycle(); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
	longest := notice(func(d map[string]any) {
		d["AutoScalingGroupName"], d["LifecycleHookName"] = strings.Repeat("g", 255), strings.Repeat("h", 255)
	})
	if _, err := longest.Lifecycle(); err != nil {
		t.Errorf("names of 255 characters: %v", err)
	}
	spot := Event{DetailType: DetailSpot, Detail: json.RawMessage(`{"instance-id":"` + instance + `","instance-action":"terminate"}`)}
	if _, err := spot.Lifecycle(); err == nil || spot.Interruption() != instance {
		t.Errorf("spot warning: %v, %q", err, spot.Interruption())
	}
	if (Event{Detail: json.RawMessage(`{"instance-id":"x"}`)}).Interruption() != "" {
		t.Error("an interruption of no instance")
	}
}

type fakeClaimAPI struct {
	in     *s3.PutObjectInput
	err    error
	stored []byte // the object GetObject finds; nil: none
	gets   int
}

func (f *fakeClaimAPI) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	f.gets++
	if f.stored == nil {
		return nil, &s3types.NoSuchKey{}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(f.stored)), ETag: aws.String(`"e-stored"`), VersionId: aws.String("v-stored")}, nil
}

func (f *fakeClaimAPI) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	f.in = in
	if f.err != nil {
		return nil, f.err
	}
	return &s3.PutObjectOutput{ETag: aws.String(`"e1"`), VersionId: aws.String("null")}, nil
}

func TestPutConditional(t *testing.T) {
	f := &fakeClaimAPI{}
	etag, ver, err := PutConditional(context.Background(), f, "b", "control/swarm-init", []byte("{}"), "")
	if err != nil || etag != `"e1"` || ver != "" {
		t.Fatalf("%q %q %v", etag, ver, err)
	}
	if aws.ToString(f.in.IfNoneMatch) != "*" || f.in.IfMatch != nil || f.in.ServerSideEncryption != s3types.ServerSideEncryptionAes256 {
		t.Errorf("create-only put %+v", f.in)
	}
	body, _ := io.ReadAll(f.in.Body)
	if string(body) != "{}" || aws.ToInt64(f.in.ContentLength) != 2 {
		t.Errorf("body %q", body)
	}
	if _, _, err := PutConditional(context.Background(), f, "b", "k", []byte("{}"), `"e0"`); err != nil || aws.ToString(f.in.IfMatch) != `"e0"` || f.in.IfNoneMatch != nil {
		t.Errorf("take-over put %+v, %v", f.in, err)
	}
	f.err = &smithy.GenericAPIError{Code: "PreconditionFailed"}
	if _, _, err := PutConditional(context.Background(), f, "b", "k", nil, ""); !IsPrecondition(err) {
		t.Errorf("lost race: %v", err)
	}
}

// A put refused because the bucket holds its own body is that write,
// landed: the SDK sent it again after losing the first answer.
func TestPutConditionalKnowsItsOwnWrite(t *testing.T) {
	body := []byte(`{"instance":"i-1","time":"2026-11-29T10:00:00Z"}`)
	refused := &smithy.GenericAPIError{Code: "PreconditionFailed"}
	for _, tt := range []struct {
		name     string
		ifMatch  string
		err      error
		stored   []byte
		wantOK   bool
		wantErr  func(error) bool
		wantGets int
	}{
		{"create-only, its own body there", "", refused, body, true, nil, 1},
		{"take-over, its own body there", `"e0"`, refused, body, true, nil, 1},
		{"another writer's body", "", refused, []byte(`{"instance":"i-2","time":"2026-11-29T10:00:00Z"}`), false, IsPrecondition, 1},
		{"its body and more", "", refused, append(append([]byte{}, body...), ' '), false, IsPrecondition, 1},
		{"its body cut short", "", refused, body[:len(body)-1], false, IsPrecondition, 1},
		{"take-over of an object deleted", `"e0"`, &s3types.NoSuchKey{}, nil, false, IsMissing, 1},
		{"another failure is not looked into", "", &smithy.GenericAPIError{Code: "InternalError"}, body, false, func(err error) bool { return err != nil }, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeClaimAPI{err: tt.err, stored: tt.stored}
			etag, ver, err := PutConditional(context.Background(), f, "b", "k", body, tt.ifMatch)
			if tt.wantOK {
				if err != nil || etag != `"e-stored"` || ver != "v-stored" {
					t.Errorf("= %q, %q, %v; want the stored object's ETag and version", etag, ver, err)
				}
			} else if !tt.wantErr(err) {
				t.Errorf("error = %v", err)
			}
			if f.gets != tt.wantGets {
				t.Errorf("%d reads of the object, want %d", f.gets, tt.wantGets)
			}
		})
	}
}

func TestErrorKinds(t *testing.T) {
	status := func(code int) error {
		return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}}, Err: errors.New("x")}
	}
	for _, tt := range []struct {
		err                error
		precondition, miss bool
	}{
		{&smithy.GenericAPIError{Code: "PreconditionFailed"}, true, false},
		{&smithy.GenericAPIError{Code: "ConditionalRequestConflict"}, true, false},
		{status(412), true, false},
		{status(409), true, false},
		{&s3types.NoSuchKey{}, false, true},
		{&s3types.NotFound{}, false, true},
		{&smithy.GenericAPIError{Code: "NoSuchKey"}, false, true},
		{&smithy.GenericAPIError{Code: "AccessDenied"}, false, false},
		{status(500), false, false},
		{nil, false, false},
	} {
		if IsPrecondition(tt.err) != tt.precondition || IsMissing(tt.err) != tt.miss {
			t.Errorf("%v: precondition %v, missing %v", tt.err, IsPrecondition(tt.err), IsMissing(tt.err))
		}
	}
}

func TestInitMarker(t *testing.T) {
	m := InitMarker{InstanceID: instance, Address: "10.0.1.5", Time: at.Add(time.Millisecond)}
	if got := ParseInitMarker(m.Marshal()); !reflect.DeepEqual(got, InitMarker{InstanceID: instance, Address: "10.0.1.5", Time: at}) {
		t.Errorf("read back %+v", got)
	}
	if !strings.Contains(string(m.Marshal()), `"instanceId":"`+instance+`"`) {
		t.Errorf("marker %s", m.Marshal())
	}
	if got := ParseInitMarker([]byte("garbage")); got.InstanceID != "" {
		t.Errorf("garbage names %q", got.InstanceID)
	}
}
