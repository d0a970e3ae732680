package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

const (
	smARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbC123"
	// The values are never logged, put in the status or a problem.
	dbValue1 = "s3cr3t-one"
	dbValue2 = "s3cr3t-two"
)

type sources struct {
	declared []DeclaredSecret
	version  map[string]string
	value    map[string]string
	fail     map[string]error
	reads    int

	declaredErr   error
	declaredReads int
}

func (s *sources) Declared(context.Context) ([]DeclaredSecret, error) {
	s.declaredReads++
	if s.declaredErr != nil {
		return nil, s.declaredErr
	}
	return s.declared, nil
}

func (s *sources) Version(_ context.Context, from string) (string, error) {
	if err := s.fail[from]; err != nil {
		return "", err
	}
	return s.version[from], nil
}

func (s *sources) Read(_ context.Context, from string) ([]byte, string, error) {
	s.reads++
	if err := s.fail[from]; err != nil {
		return nil, "", err
	}
	return []byte(s.value[from]), s.version[from], nil
}

type swarmSecrets struct {
	secrets []SwarmSecret
	values  map[string]string // by id
	mounts  []SecretMount
	calls   []string
	n       int
	failRm  bool
}

func (w *swarmSecrets) Secrets(context.Context) ([]SwarmSecret, error) {
	return slices.Clone(w.secrets), nil
}

func (w *swarmSecrets) Mounts(context.Context) ([]SecretMount, error) {
	return slices.Clone(w.mounts), nil
}

func (w *swarmSecrets) CreateSecret(_ context.Context, name string, value []byte, labels map[string]string) (string, error) {
	for _, x := range w.secrets {
		if x.Name == name {
			return "", fmt.Errorf("secret %s exists", name)
		}
	}
	w.n++
	id := fmt.Sprintf("sec%d", w.n)
	w.secrets = append(w.secrets, SwarmSecret{ID: id, Name: name, Labels: labels})
	w.values[id] = string(value)
	w.calls = append(w.calls, "create "+name)
	return id, nil
}

func (w *swarmSecrets) RemoveSecret(_ context.Context, id string) error {
	if w.failRm {
		return errors.New("in use")
	}
	for i, x := range w.secrets {
		if x.ID == id {
			w.secrets = slices.Delete(w.secrets, i, i+1)
			w.calls = append(w.calls, "remove "+x.Name)
			return nil
		}
	}
	return errors.New("no such secret")
}

func (w *swarmSecrets) Repoint(_ context.Context, service string, old []string, to SwarmSecret) error {
	for i, m := range w.mounts {
		if m.Service == service && slices.Contains(old, m.SecretID) {
			w.mounts[i].SecretID, w.mounts[i].SecretName = to.ID, to.Name
		}
	}
	w.calls = append(w.calls, "repoint "+service+" "+to.Name)
	return nil
}

type secretsLab struct {
	src   *sources
	swarm *swarmSecrets
	clock *clock
	logs  []string
	s     *SecretsSync
}

func newSecretsLab(declared ...DeclaredSecret) *secretsLab {
	l := &secretsLab{
		src:   &sources{declared: declared, version: map[string]string{}, value: map[string]string{}, fail: map[string]error{}},
		swarm: &swarmSecrets{values: map[string]string{}},
		clock: &clock{now: start},
	}
	l.s = &SecretsSync{Sources: l.src, Engine: l.swarm, Clock: l.clock, Every: time.Minute,
		Log: func(f string, a ...any) { l.logs = append(l.logs, fmt.Sprintf(f, a...)) }}
	return l
}

func (l *secretsLab) sync(t *testing.T) {
	t.Helper()
	if err := l.s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.noValue(t)
}

// noValue fails when a value is in a log line or the status.
func (l *secretsLab) noValue(t *testing.T) {
	t.Helper()
	said := strings.Join(l.logs, "\n") + fmt.Sprintf("%+v", l.s.Status())
	for _, v := range []string{dbValue1, dbValue2, "s3cr3t"} {
		if strings.Contains(said, v) {
			t.Errorf("a value is said: %s", said)
		}
	}
}

func (l *secretsLab) secret(name string) (SwarmSecret, string) {
	for _, x := range l.swarm.secrets {
		if x.Name == name {
			return x, l.swarm.values[x.ID]
		}
	}
	return SwarmSecret{}, ""
}

func TestSecretsFirstCreate(t *testing.T) {
	l := newSecretsLab(DeclaredSecret{Name: "db", From: smARN})
	l.src.version[smARN], l.src.value[smARN] = "v-1", dbValue1
	l.sync(t)
	x, v := l.secret("db")
	if v != dbValue1 || x.Labels[names.SecretLabelManaged] != "db" || x.Labels[names.SecretLabelSource] != smARN || x.Labels[names.SecretLabelVersion] != "v-1" {
		t.Fatalf("secret %+v = %q", x, v)
	}
	st := l.s.Status()
	if len(st) != 1 || st[0].AWSVersion != "v-1" || st[0].SwarmVersion != "v-1" || st[0].SwarmSecret != "db" || st[0].LastSync == nil || st[0].Problem != "" {
		t.Errorf("status %+v", st)
	}
	if len(l.logs) != 1 || !strings.Contains(l.logs[0], "created swarm secret db from "+smARN+" version v-1") {
		t.Errorf("logs %q", l.logs)
	}
	// In step: the next round (when due) reads the version only.
	l.sync(t)
	l.clock.now = l.clock.now.Add(time.Minute)
	l.sync(t)
	if l.src.reads != 1 || len(l.swarm.calls) != 1 {
		t.Errorf("reads %d, calls %v", l.src.reads, l.swarm.calls)
	}
	if got := l.s.Status()[0].LastSync; !got.Equal(l.clock.now) {
		t.Errorf("last sync %v, want %v", got, l.clock.now)
	}
}

func TestSecretsNewVersionRollsServicesAndPrunes(t *testing.T) {
	l := newSecretsLab(DeclaredSecret{Name: "db", From: smARN, Key: "password"})
	l.src.version[smARN], l.src.value[smARN] = "v-1", `{"user":"app","password":"`+dbValue1+`"}`
	l.sync(t)
	first, _ := l.secret("db")
	l.swarm.mounts = []SecretMount{
		{Service: "svc-web", ServiceName: "web", SecretID: first.ID, SecretName: "db"},
		{Service: "svc-api", ServiceName: "api", SecretID: first.ID, SecretName: "db"},
		{Service: "svc-other", ServiceName: "other", SecretID: "elsewhere", SecretName: "dbx"},
	}
	l.src.version[smARN], l.src.value[smARN] = "v-2", `{"user":"app","password":"`+dbValue2+`"}`
	l.s.Request()
	l.sync(t)
	x, v := l.secret("db.v2")
	if v != dbValue2 || x.Labels[names.SecretLabelVersion] != "v-2" || x.Labels[names.SecretLabelKey] != "password" {
		t.Fatalf("db.v2 %+v = %q", x, v)
	}
	want := []string{"create db", "create db.v2", "repoint svc-api db.v2", "repoint svc-web db.v2", "remove db"}
	if !slices.Equal(l.swarm.calls, want) {
		t.Errorf("calls %v, want %v", l.swarm.calls, want)
	}
	st := l.s.Status()[0]
	if st.SwarmSecret != "db.v2" || st.SwarmVersion != "v-2" || !slices.Equal(st.Services, []string{"api", "web"}) {
		t.Errorf("status %+v", st)
	}
	// A third version: db.v3, and db.v2 goes.
	l.src.version[smARN], l.src.value[smARN] = "v-3", `{"password":"x"}`
	l.s.Request()
	l.sync(t)
	if _, v := l.secret("db.v3"); v != "x" {
		t.Errorf("db.v3 = %q", v)
	}
	if x, _ := l.secret("db.v2"); x.ID != "" {
		t.Error("db.v2 kept")
	}
}

func TestSecretsUnreadableSourceLeavesTheSwarm(t *testing.T) {
	l := newSecretsLab(DeclaredSecret{Name: "db", From: smARN})
	l.src.version[smARN], l.src.value[smARN] = "v-1", dbValue1
	l.sync(t)
	l.src.fail[smARN] = errors.New("AccessDeniedException: not authorized")
	l.s.Request()
	l.sync(t)
	if len(l.swarm.calls) != 1 {
		t.Errorf("calls %v", l.swarm.calls)
	}
	st := l.s.Status()[0]
	if !strings.Contains(st.Problem, "AccessDenied") || st.SwarmSecret != "db" || st.LastSync == nil || !st.LastSync.Equal(start) {
		t.Errorf("status %+v", st)
	}
	if !strings.Contains(l.logs[len(l.logs)-1], "unreadable, the swarm keeps db") {
		t.Errorf("logs %q", l.logs)
	}
}

func TestSecretsKeyMissing(t *testing.T) {
	l := newSecretsLab(DeclaredSecret{Name: "db", From: "ssm:/prod/db", Key: "password"})
	l.src.version["ssm:/prod/db"], l.src.value["ssm:/prod/db"] = "3", `{"pass":"`+dbValue1+`"}`
	l.sync(t)
	st := l.s.Status()[0]
	if len(l.swarm.calls) != 0 || !strings.Contains(st.Problem, `key "password": no such key`) || st.AWSVersion != "3" || st.LastSync != nil {
		t.Errorf("calls %v, status %+v", l.swarm.calls, st)
	}
	// Not JSON at all.
	l.src.value["ssm:/prod/db"] = dbValue1
	l.s.Request()
	l.sync(t)
	if st := l.s.Status()[0]; !strings.Contains(st.Problem, "not a JSON object") {
		t.Errorf("status %+v", st)
	}
}

// A secret made by hand under the declared name: the first version made
// is NAME.v2, its services are rolled onto it, and the hand-made one is
// left alone.
func TestSecretsTakeOverAHandMadeSecret(t *testing.T) {
	l := newSecretsLab(DeclaredSecret{Name: "db", From: smARN})
	l.swarm.secrets = []SwarmSecret{{ID: "hand", Name: "db"}, {ID: "other", Name: "dbx", Labels: map[string]string{names.SecretLabelManaged: "dbx"}}}
	l.swarm.mounts = []SecretMount{{Service: "s1", ServiceName: "web", SecretID: "hand", SecretName: "db"}, {Service: "s2", ServiceName: "x", SecretID: "other"}}
	l.src.version[smARN], l.src.value[smARN] = "v-1", dbValue1
	l.sync(t)
	want := []string{"create db.v2", "repoint s1 db.v2"}
	if !slices.Equal(l.swarm.calls, want) {
		t.Errorf("calls %v, want %v", l.swarm.calls, want)
	}
}

// A secret no longer declared is removed once no service mounts it.
func TestSecretsUndeclaredPruned(t *testing.T) {
	l := newSecretsLab(DeclaredSecret{Name: "db", From: smARN})
	l.src.version[smARN], l.src.value[smARN] = "v-1", dbValue1
	l.sync(t)
	db, _ := l.secret("db")
	l.swarm.mounts = []SecretMount{{Service: "s1", ServiceName: "web", SecretID: db.ID}}
	l.src.declared = nil
	l.s.Request()
	l.sync(t)
	if len(l.swarm.calls) != 1 || len(l.s.Status()) != 0 {
		t.Errorf("calls %v, status %v", l.swarm.calls, l.s.Status())
	}
	l.swarm.mounts = nil
	l.s.Request()
	l.sync(t)
	if !slices.Equal(l.swarm.calls, []string{"create db", "remove db"}) || !strings.Contains(l.logs[len(l.logs)-1], "no longer declared") {
		t.Errorf("calls %v, logs %q", l.swarm.calls, l.logs)
	}
}

func TestSecretVersionNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		want int
	}{{"db", 1}, {"db.v2", 2}, {"db.v10", 10}, {"db.v1", 0}, {"db.v02", 0}, {"db.vx", 0}, {"dbx", 0}, {"db.v2.v3", 0}} {
		if got := version("db", tt.name); got != tt.want {
			t.Errorf("version(db, %s) = %d, want %d", tt.name, got, tt.want)
		}
	}
	if versionName("db", 1) != "db" || versionName("db", 3) != "db.v3" {
		t.Error("versionName")
	}
}

// A request on the queue syncs at once, and the snapshot carries the
// status.
func TestSecretsRequestThroughTheQueue(t *testing.T) {
	l := newLab(t)
	sl := newSecretsLab(DeclaredSecret{Name: "db", From: smARN})
	sl.src.version[smARN], sl.src.value[smARN] = "v-1", dbValue1
	sl.s.Clock, sl.s.Log = l.clock, l.m.Log
	l.m.Secrets = sl.s
	l.round()
	if !l.logged("created swarm secret db") {
		t.Fatalf("logs %v", l.logs)
	}
	sl.src.version[smARN], sl.src.value[smARN] = "v-2", dbValue2
	body, err := wire.NewSecretsSyncRequest(wire.NewRequestID(), l.clock.now, "arn:aws:iam::123456789012:user/ops", "eu-west-1", "core")
	if err != nil {
		t.Fatal(err)
	}
	l.q.put("req-1", body, l.clock.now)
	l.round() // receives it
	l.round() // handles it: within the minute
	if _, v := sl.secret("db.v2"); v != dbValue2 {
		t.Fatalf("db.v2 = %q; logs %v", v, l.logs)
	}
	snap, err := l.m.parts().status.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Secrets) != 1 || snap.Secrets[0].SwarmVersion != "v-2" {
		t.Errorf("snapshot secrets %+v", snap.Secrets)
	}
	b, _ := snap.Marshal()
	if strings.Contains(string(b)+strings.Join(l.logs, "\n"), "s3cr3t") {
		t.Error("a value in the snapshot or the log")
	}
}

// A declaration that cannot be read is tried again at the next read, not
// every round.
func TestSecretsDeclarationUnreadable(t *testing.T) {
	l := newSecretsLab()
	l.src.declaredErr = errors.New("ParameterNotFound")
	if err := l.s.Sync(context.Background()); err == nil || !strings.Contains(err.Error(), "ParameterNotFound") {
		t.Fatalf("sync: %v", err)
	}
	_ = l.s.Sync(context.Background())
	if l.src.declaredReads != 1 {
		t.Errorf("%d reads within the interval", l.src.declaredReads)
	}
	l.clock.now = l.clock.now.Add(time.Minute)
	_ = l.s.Sync(context.Background())
	if l.src.declaredReads != 2 {
		t.Errorf("%d reads after the interval", l.src.declaredReads)
	}
}
