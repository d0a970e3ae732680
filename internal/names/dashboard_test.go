package names

import "testing"

func TestDashboardURL(t *testing.T) {
	for _, tt := range []struct{ region, want string }{
		{"eu-west-1", "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#dashboards:name=clusterctl-prod"},
		{"cn-north-1", "https://console.amazonaws.cn/cloudwatch/home?region=cn-north-1#dashboards:name=clusterctl-prod"},
		{"us-gov-west-1", "https://console.amazonaws-us-gov.com/cloudwatch/home?region=us-gov-west-1#dashboards:name=clusterctl-prod"},
	} {
		if got := DashboardURL(tt.region, DashboardName("prod")); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.region, got, tt.want)
		}
	}
}
