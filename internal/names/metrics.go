package names

import (
	"strings"
	"time"
)

// The swarm's health in CloudWatch: the dimensions and metrics, and the
// alarms the core declares on them. The namespaces are the cluster's own
// (SwarmMetricNamespace, NodeMetricNamespace).
const (
	DimCluster    = "Cluster"
	DimGroup      = "Group"
	DimService    = "Service"
	DimInstanceID = "InstanceId"
	DimFilesystem = "Filesystem"

	// The leader's, from the status snapshot.
	MetricManagersReachable    = "ManagersReachable"
	MetricManagersExpected     = "ManagersExpected"
	MetricNodesReady           = "NodesReady"
	MetricNodesDown            = "NodesDown"
	MetricNodesDraining        = "NodesDraining"
	MetricRunningTasks         = "RunningTasks"
	MetricDesiredTasks         = "DesiredTasks"
	MetricServicesBelowDesired = "ServicesBelowDesired"
	MetricTasksPending         = "TasksPending"
	MetricTasksUnplaceable     = "TasksUnplaceable"
	MetricBackupAge            = "BackupAgeSeconds"
	MetricAutoscalerChanges    = "AutoscalerChanges"
	// Every node's, of itself.
	MetricDiskUsed   = "DiskUsedPercent"
	MetricMemoryUsed = "MemoryUsedPercent"

	// FilesystemRoot and FilesystemData are the Filesystem dimension's
	// values: the node's / and its engine's data root.
	FilesystemRoot = "root"
	FilesystemData = "data-root"

	// ParamAlarms is the core's on/off switch of its alarms;
	// ParamNotifyEmail and ParamNotifyTopic where they notify (at most
	// one is set): an e-mail address subscribed to a topic of the core,
	// or an existing topic's ARN.
	ParamAlarms      = "Alarms"
	ParamNotifyEmail = "NotifyEmail"
	ParamNotifyTopic = "NotifyTopicArn"
	AlarmsOn         = "on"
	AlarmsOff        = "off"

	ResourceAlarmTopic = "AlarmTopic"

	// BackupOverdueAfter is the age of the last backup at which the
	// backup-overdue alarm goes off: twice the backups' period
	// (wire.BackupEvery).
	BackupOverdueAfter = 30 * time.Minute
	// DiskFullPercent is the disk use at which the disk-full alarm goes
	// off.
	DiskFullPercent = 85
)

// A cluster's metrics are in two namespaces of its own, because
// PutMetricData's only IAM condition key is the namespace: the swarm's
// figures, which every alarm but disk-full reads, in one only the
// managers' role may write; each node's figures of itself (disk, memory)
// in one both roles write. A cluster name has no "/", so no cluster's
// namespace is another's.
const metricNamespacePrefix = "clusterctl/"

// SwarmMetricNamespace is the namespace of cluster's swarm figures (the
// leader's, from the status snapshot).
func SwarmMetricNamespace(cluster string) string { return metricNamespacePrefix + cluster + "/swarm" }

// NodeMetricNamespace is the namespace of the figures each node of
// cluster publishes of itself.
func NodeMetricNamespace(cluster string) string { return metricNamespacePrefix + cluster + "/nodes" }

// LegacyMetricNamespace is where every cluster published before the
// namespaces were per cluster: read by no alarm, written by no role.
const LegacyMetricNamespace = "clusterctl"

// Alarm kinds: the alarm of a cluster is named AlarmName(cluster, kind).
// No kind ends with "-" + another, so two clusters' alarms never share a
// name.
const (
	AlarmQuorumAtRisk  = "quorum-at-risk"
	AlarmLeaderSilent  = "leader-silent"
	AlarmNodesDown     = "nodes-down"
	AlarmServicesBelow = "services-below-desired"
	AlarmDiskFull      = "disk-full"
	AlarmBackupOverdue = "backup-overdue"
	alarmPrefix        = "clusterctl-"
)

// AlarmKinds are the core's alarms, in the order describe lists them.
func AlarmKinds() []string {
	return []string{AlarmQuorumAtRisk, AlarmLeaderSilent, AlarmNodesDown, AlarmServicesBelow, AlarmDiskFull, AlarmBackupOverdue}
}

// AlarmName is the CloudWatch name of cluster's alarm of kind.
func AlarmName(cluster, kind string) string { return alarmPrefix + cluster + "-" + kind }

// AlarmKind is the kind of cluster's alarm named name; "" when the name is
// not one of cluster's.
func AlarmKind(cluster, name string) string {
	k, ok := strings.CutPrefix(name, alarmPrefix+cluster+"-")
	if !ok {
		return ""
	}
	for _, x := range AlarmKinds() {
		if x == k {
			return k
		}
	}
	return ""
}

// MetricNames are the names of metrics and alarms, for the templates:
// {{.N.Metrics.NodesDown}}.
type MetricNames struct {
	DimCluster, DimGroup, DimService, DimInstanceID, DimFilesystem                           string
	ManagersReachable, NodesDown, ServicesBelowDesired, DiskUsed, BackupAge, TasksPending    string
	ParamAlarms, ParamNotifyEmail, ParamNotifyTopic, AlarmsOn, AlarmsOff, ResourceAlarmTopic string
	AlarmQuorumAtRisk, AlarmLeaderSilent, AlarmNodesDown, AlarmServicesBelow                 string
	AlarmDiskFull, AlarmBackupOverdue, AlarmPrefix                                           string
	BackupOverdueSeconds, BackupOverdueMinutes, DiskFullPercent                              int
}

// Metrics returns the names of metrics and alarms.
func Metrics() MetricNames {
	return MetricNames{
		DimCluster: DimCluster, DimGroup: DimGroup, DimService: DimService,
		DimInstanceID: DimInstanceID, DimFilesystem: DimFilesystem,
		ManagersReachable: MetricManagersReachable, NodesDown: MetricNodesDown, ServicesBelowDesired: MetricServicesBelowDesired,
		DiskUsed: MetricDiskUsed, BackupAge: MetricBackupAge, TasksPending: MetricTasksPending,
		ParamAlarms: ParamAlarms, ParamNotifyEmail: ParamNotifyEmail, ParamNotifyTopic: ParamNotifyTopic, AlarmsOn: AlarmsOn, AlarmsOff: AlarmsOff,
		ResourceAlarmTopic: ResourceAlarmTopic,
		AlarmQuorumAtRisk:  AlarmQuorumAtRisk, AlarmLeaderSilent: AlarmLeaderSilent, AlarmNodesDown: AlarmNodesDown,
		AlarmServicesBelow: AlarmServicesBelow, AlarmDiskFull: AlarmDiskFull, AlarmBackupOverdue: AlarmBackupOverdue,
		AlarmPrefix: alarmPrefix, BackupOverdueSeconds: int(BackupOverdueAfter / time.Second), BackupOverdueMinutes: int(BackupOverdueAfter / time.Minute), DiskFullPercent: DiskFullPercent,
	}
}
