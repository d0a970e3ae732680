package names

import "strings"

// The core's CloudWatch dashboard (with its alarms on): the alarms and
// the swarm's figures as graphs. describe shows its address in the
// console as an output of its own, DashboardURL: the template has no room
// for one (its body's 51,200 bytes).
const (
	ResourceDashboard  = "Dashboard"
	OutputDashboardURL = "DashboardUrl"
)

// DashboardName is the CloudWatch name of cluster's dashboard. Dashboard
// names are per account and region, as alarm names are: the prefix keeps
// them apart from others', the cluster name from other clusters'.
func DashboardName(cluster string) string { return alarmPrefix + cluster }

// DashboardURL is the address of dashboard name in the console of
// region's partition.
func DashboardURL(region, name string) string {
	host := region + ".console.aws.amazon.com"
	switch {
	case strings.HasPrefix(region, "cn-"):
		host = "console.amazonaws.cn"
	case strings.HasPrefix(region, "us-gov-"):
		host = "console.amazonaws-us-gov.com"
	}
	return "https://" + host + "/cloudwatch/home?region=" + region + "#dashboards:name=" + name
}
