package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/node"
)

// settings are what the loader wrote to the node's settings file from the
// stack's values and the instance metadata: KEY=value lines, each value
// checked by its shape before it is used.
type settings map[string]string

var shapes = map[string]*regexp.Regexp{
	"CLUSTER_NAME":        regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]{0,127}$`),
	"NODE_GROUP":          regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]{0,127}$`),
	"STACK_NAME":          regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]{0,127}$`),
	"AWS_REGION":          regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`),
	"BUCKET_NAME":         regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`),
	"LIFECYCLE_QUEUE_URL": regexp.MustCompile(`^https?://[-a-z0-9.]+(:[0-9]+)?/[0-9]{12}/[-_a-zA-Z0-9]{1,80}$`),
	"MANAGERS_KEY":        regexp.MustCompile(`^[a-zA-Z0-9][-_a-zA-Z0-9]*(/[-_a-zA-Z0-9][-_.a-zA-Z0-9]*)*$`),
	"NODE_LABELS":         regexp.MustCompile(`^[^'"\\\n]*$`),
	"LOG_GROUP":           regexp.MustCompile(`^[-_./#a-zA-Z0-9]{0,512}$`),
	"LOG_DRIVER":          regexp.MustCompile(`^(awslogs|none|)$`),
	"BACKUP_KEEP":         regexp.MustCompile(`^([1-9][0-9]{0,2})?$`),
	// spec.EngineVersionRE (a test keeps them the same).
	"ENGINE_VERSION": regexp.MustCompile(`^[0-9]{1,3}(\.[0-9]{1,3}){1,2}(-[0-9A-Za-z._]{1,20})?$`),
	"INSTANCE_ID":    regexp.MustCompile(`^i-[0-9a-f]{8,32}$`),
}

// logGroup is the cluster's log group the settings name: LOG_GROUP, or
// with driver awslogs and no group named (a manager's settings), the
// cluster's; "" when there is none (an older core).
func (s settings) logGroup() (string, error) {
	for _, k := range []string{"LOG_GROUP", "LOG_DRIVER"} {
		if _, ok := s[k]; ok {
			if err := s.need(k); err != nil {
				return "", err
			}
		}
	}
	if g := s["LOG_GROUP"]; g != "" || s["LOG_DRIVER"] != "awslogs" {
		return g, nil
	}
	if err := s.need("CLUSTER_NAME"); err != nil {
		return "", err
	}
	return names.LogGroup(s["CLUSTER_NAME"]), nil
}

// logsEndpoint is the shape of CLUSTERCTL_LOGS_ENDPOINT (tests only).
var logsEndpoint = regexp.MustCompile(`^https?://[-a-zA-Z0-9.]+(:[0-9]{1,5})?/?$`)

// engineLogs is where the engine ships containers' output, from the
// settings: the cluster's log group with driver awslogs (a manager's
// settings may name no group: its cluster's), nil with none (an older
// core, or driver none). endpoint is CLUSTERCTL_LOGS_ENDPOINT, used only
// when it has the shape of one, as the scripts do.
func (s settings) engineLogs(instanceID, endpoint string) (*node.EngineLogs, error) {
	if err := s.need("CLUSTER_NAME", "AWS_REGION"); err != nil {
		return nil, err
	}
	group, err := s.logGroup()
	if err != nil {
		return nil, err
	}
	if s["LOG_DRIVER"] != "awslogs" {
		return nil, nil
	}
	if !logsEndpoint.MatchString(endpoint) {
		endpoint = ""
	}
	return &node.EngineLogs{Group: group, Region: s["AWS_REGION"], InstanceID: instanceID, Endpoint: endpoint, Manager: s.manager()}, nil
}

// manager says the settings are a manager's (its group is the control
// group).
func (s settings) manager() bool { return s["NODE_GROUP"] == names.GroupControl }

func readSettings(path string) (settings, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the node's settings: %w", err)
	}
	defer f.Close()
	s := settings{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = v[1 : len(v)-1]
		}
		s[k] = v
	}
	return s, sc.Err()
}

// need returns the values of keys, each checked by its shape.
func (s settings) need(keys ...string) error {
	for _, k := range keys {
		v, ok := s[k]
		if !ok {
			return fmt.Errorf("the node's settings have no %s", k)
		}
		if re := shapes[k]; re != nil && !re.MatchString(v) {
			return fmt.Errorf("refusing %s %.100q: not the shape of one", k, v)
		}
	}
	return nil
}

// labels reads NODE_LABELS (k=v,k=v).
func (s settings) labels() map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s["NODE_LABELS"], ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}

// seconds reads a timing of the environment (tests shorten them), in
// seconds; def when unset.
func seconds(name string, def time.Duration) time.Duration {
	var n int
	if v := os.Getenv(name); v != "" {
		if _, err := fmt.Sscan(v, &n); err == nil && n >= 0 {
			return time.Duration(n) * time.Second
		}
	}
	return def
}

func managerTimings() node.Timings {
	t := node.Defaults()
	for _, f := range []struct {
		env string
		to  *time.Duration
	}{
		{"CLUSTERCTL_POLL_WAIT", &t.PollWait}, {"CLUSTERCTL_IDLE", &t.Idle}, {"CLUSTERCTL_STATUS_INTERVAL", &t.StatusEvery},
		{"CLUSTERCTL_WATCH_INTERVAL", &t.WatchEvery}, {"CLUSTERCTL_WATCH_FOR", &t.WatchFor},
		{"CLUSTERCTL_DEAD_NODE_INTERVAL", &t.DeadEvery}, {"CLUSTERCTL_DEAD_NODE_GRACE", &t.DeadGrace},
		{"CLUSTERCTL_DRAIN_TIMEOUT", &t.DrainTimeout}, {"CLUSTERCTL_DRAIN_POLL", &t.DrainPoll},
		{"CLUSTERCTL_HEARTBEAT_INTERVAL", &t.HeartbeatEvery}, {"CLUSTERCTL_NOTICE_VISIBILITY", &t.Visibility},
		{"CLUSTERCTL_MANAGER_JOIN_TIMEOUT", &t.JoinTimeout}, {"CLUSTERCTL_MANAGER_JOIN_PAUSE", &t.JoinPause},
		{"CLUSTERCTL_BACKUP_INTERVAL", &t.BackupEvery}, {"CLUSTERCTL_BACKUP_SPACING", &t.BackupSpacing},
		{"CLUSTERCTL_BACKUP_ORDER_WAIT", &t.BackupOrderWait}, {"CLUSTERCTL_QUORUM_GRACE", &t.QuorumGrace},
		{"CLUSTERCTL_AUTOSCALE_INTERVAL", &t.AutoscaleEvery}, {"CLUSTERCTL_SCALE_OUT_JOIN_WAIT", &t.JoinWait},
		{"CLUSTERCTL_REQUEST_MAX_AGE", &t.RequestMaxAge}, {"CLUSTERCTL_SECRETS_INTERVAL", &t.SecretsEvery},
		{"CLUSTERCTL_METRICS_INTERVAL", &t.MetricsEvery},
		{"CLUSTERCTL_UNPROVEN_GRACE", &t.UnprovenGrace}, {"CLUSTERCTL_LABELS_INTERVAL", &t.LabelsEvery},
		{"CLUSTERCTL_CONFIRM_WAIT", &t.ConfirmWait},
		{"CLUSTERCTL_INTERRUPTED_HOLD", &t.InterruptedHold},
	} {
		*f.to = seconds(f.env, *f.to)
	}
	return t
}

// metricsEvery is how often an agent publishes its node's metrics.
func metricsEvery() time.Duration {
	return seconds("CLUSTERCTL_METRICS_INTERVAL", node.Defaults().MetricsEvery)
}

func agentTimings() node.AgentTimings {
	t := node.AgentDefaults()
	for _, f := range []struct {
		env string
		to  *time.Duration
	}{
		{"CLUSTERCTL_JOIN_TIMEOUT", &t.JoinTimeout}, {"CLUSTERCTL_RETRY_MIN", &t.RetryMin}, {"CLUSTERCTL_RETRY_MAX", &t.RetryMax},
		{"CLUSTERCTL_CHECK_INTERVAL", &t.CheckEvery}, {"CLUSTERCTL_REJOIN_AFTER", &t.RejoinAfter},
		{"CLUSTERCTL_STATUS_STALE_AFTER", &t.StaleAfter}, {"CLUSTERCTL_INTERRUPTION_INTERVAL", &t.InterruptionEvery},
	} {
		*f.to = seconds(f.env, *f.to)
	}
	return t
}

// backupKeep is BACKUP_KEEP, the number of backups the managers keep; 0
// (the default) when a core of before does not say.
func backupKeep(s settings) int {
	n, err := strconv.Atoi(s["BACKUP_KEEP"])
	if err != nil {
		return 0
	}
	return n
}
